package frontend

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/s3test"
)

// stsWithLife answers AssumeRole with keys "k1", "k2", … that live for life, or a 500 while
// 403 while failing is set.
func stsWithLife(t *testing.T, life time.Duration, failing *bool, mu *sync.Mutex) *fakeSTS {
	t.Helper()
	sts := &fakeSTS{}
	sts.answer = func(w http.ResponseWriter) bool {
		mu.Lock()
		fail := *failing
		mu.Unlock()
		if fail { // a refusal, which the SDK does not retry: one call per renewal
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>refused</Message></Error></ErrorResponse>`)
			return true
		}
		s3test.AssumeRoleAnswer(w, fmt.Sprintf("k%d", len(sts.seen())), "s", "", time.Now().Add(life))
		return true
	}
	serveSTS(t, sts)
	sharedFilesIn(t, t.TempDir(), "[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\n",
		"[base]\naws_access_key_id = basekey\naws_secret_access_key = basesecret\n")
	return sts
}

// Keys that expire are renewed when due, not before; a renewal that fails keeps the keys in hand
// while they work, is not tried again for every request, and is the error once they expire.
func TestRenewingKeys(t *testing.T) {
	isolate(t)
	var mu sync.Mutex
	failing := false
	sts := stsWithLife(t, time.Hour, &failing, &mu)
	c := Conn{Profile: "role"}
	r, err := c.Resolve()
	if err != nil || r.AccessKey != "k1" || r.Expires.IsZero() {
		t.Fatalf("resolve: %+v, %v; want k1 with its expiry", r, err)
	}
	k := newRenewing(r)
	if due := time.Until(k.due); due < 44*time.Minute || due > 45*time.Minute {
		t.Errorf("keys living an hour are due in %s, want 45 min (15 min before expiry)", due)
	}
	expectKeys := func(step, want string, calls int) {
		t.Helper()
		got, err := k.current()
		if err != nil || got.AccessKey != want || len(sts.seen()) != calls {
			t.Fatalf("%s: %q, %v after %d STS calls; want %q after %d", step, got.AccessKey, err, len(sts.seen()), want, calls)
		}
	}
	expectKeys("not due", "k1", 1)
	dueNow := func() { // as if the keys' renewal time had come
		k.mu.Lock()
		k.due = time.Now().Add(-time.Second)
		k.mu.Unlock()
	}
	dueNow()
	expectKeys("due", "k2", 2)
	expectKeys("renewed", "k2", 2)

	mu.Lock()
	failing = true
	mu.Unlock()
	dueNow()
	expectKeys("renewal fails, keys still work", "k2", 3)
	expectKeys("again within retryRenewAfter", "k2", 3)
	k.mu.Lock()
	k.keys.Expires, k.nextTry = time.Now().Add(-time.Second), time.Time{}
	k.mu.Unlock()
	if got, err := k.current(); err == nil || !strings.Contains(err.Error(), "role/r") {
		t.Fatalf("expired keys, renewal failing: %+v, %v; want the renewal's error", got, err)
	}
	if got, err := k.current(); err == nil || len(sts.seen()) != 4 {
		t.Fatalf("expired keys, retried at once: %+v, %v, %d STS calls; want the error, no new call", got, err, len(sts.seen()))
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	k.mu.Lock()
	k.nextTry = time.Time{}
	k.mu.Unlock()
	expectKeys("STS back", "k5", 5)
}

// A store built for keys that expire signs with new keys once they are due, through both
// adapters (minio-go's Credentials asks IsExpired; aws-sdk-go-v2 asks for keys every request).
func TestStoreRenewsExpiringKeys(t *testing.T) {
	for _, backend := range []string{"aws", "minio"} {
		t.Run(backend, func(t *testing.T) {
			isolate(t)
			var mu sync.Mutex
			failing := false
			// RFC 3339 keeps whole seconds: these keys live 4 to 5 s, due a quarter of that early,
			// which leaves the first requests 3 s on a slow machine.
			stsWithLife(t, 5*time.Second, &failing, &mu)
			var signed []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
					mu.Lock()
					signed = append(signed, strings.SplitN(cred, "/", 2)[0])
					mu.Unlock()
				}
				w.Header().Set("ETag", `"0123"`)
				w.Header().Set("Content-Length", "3")
				w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
			}))
			defer srv.Close()
			c := Conn{Profile: "role", Endpoint: srv.URL, Backend: backend, PathStyle: true}
			r, err := c.Resolve()
			if err != nil || r.Expires.IsZero() {
				t.Fatalf("resolve: %+v, %v", r, err)
			}
			st, err := NewResolvedStore(c, r)
			if err != nil {
				t.Fatal(err)
			}
			head := func() {
				t.Helper()
				if _, err := st.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "bucket", Key: "k"}); err != nil {
					t.Fatal(err)
				}
			}
			head()
			head()
			time.Sleep(time.Until(r.Expires.Add(-500 * time.Millisecond))) // past due, not yet expired
			head()
			mu.Lock()
			defer mu.Unlock()
			if want := []string{"k1", "k1", "k2"}; strings.Join(signed, " ") != strings.Join(want, " ") {
				t.Errorf("requests signed by %v, want %v (renewed once due)", signed, want)
			}
		})
	}
}
