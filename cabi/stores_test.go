package cabi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/storetest/s3test"
)

// openSockets counts this process's open sockets.
func openSockets(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// Handles on one connection share its client and connection pool: twenty files written one
// after another, as a flush loop does, leave no more sockets open than the one that carried them
// (a client per handle left twenty, each idle for 90 s). Other credentials get their own client.
func TestHandlesShareConnections(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts sockets in /proc/self/fd")
	}
	for _, srv := range s3test.Servers(t) {
		bucket := s3test.NewBucket(t, srv)
		for _, backend := range []string{"aws", "minio"} {
			t.Run(srv.Name+"/"+backend, func(t *testing.T) {
				conf := func(key, secret string) string {
					return fmt.Sprintf(`{"bucket":%q,"key":%q,"endpoint":%q,"access_key":%q,"secret_key":%q,"region":%q,"path_style":true,"backend":%q}`,
						bucket, key, srv.Endpoint, srv.AccessKey, secret, srv.Region, backend)
				}
				before := openSockets(t)
				const files = 20
				written := map[string][]byte{}
				for i := range files {
					key := fmt.Sprintf("share/%s/%d", backend, i)
					data := bytes.Repeat([]byte{byte(i)}, 64<<10+i)
					h, o := Open(conf(key, srv.SecretKey))
					if o.status != StatusOK {
						t.Fatalf("open: %+v", o)
					}
					if o := Write(h, data); o.status != StatusOK {
						t.Fatalf("write: %+v", o)
					}
					if o := Close(h); o.status != StatusOK {
						t.Fatalf("close: %+v", o)
					}
					written[key] = data
				}
				if opened := openSockets(t) - before; opened > 2 {
					t.Fatalf("%d files left %d more sockets open, want at most 2: handles do not share the connection", files, opened)
				}
				for key, data := range written {
					if got := s3test.ReadAll(t, srv, bucket, key); !bytes.Equal(got, data) {
						t.Fatalf("%s: read back %d bytes, not the %d written", key, len(got), len(data))
					}
				}
				// The same endpoint with a wrong secret is another connection: refused, not signed
				// with the cached client's keys.
				h, o := Open(conf(fmt.Sprintf("share/%s/wrong", backend), srv.SecretKey+"x"))
				if o.status != StatusOK {
					t.Fatalf("open: %+v", o)
				}
				_ = Write(h, []byte("x"))
				o = Close(h)
				var got struct{ Kind string }
				_ = json.Unmarshal([]byte(o.json), &got)
				if o.status != StatusPermanent || got.Kind != "permanent" {
					t.Fatalf("close with a wrong secret: %+v, want permanent (403)", o)
				}
			})
		}
	}
}

// The cache keeps the most recently used connections; an older one gets a new client.
func TestStoreCacheKeepsTheRecent(t *testing.T) {
	sc := storeCache{max: 3}
	get := func(key string) any {
		t.Helper()
		st, err := sc.get(frontend.Conn{Endpoint: "http://127.0.0.1:9", AccessKey: key, SecretKey: "s", Backend: "aws"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a := get("a")
	if get("a") != a {
		t.Fatal("the same connection got another client")
	}
	b, c := get("b"), get("c")
	if get("a") != a { // a is now the most recent
		t.Fatal("a cached connection got another client")
	}
	d := get("d") // drops b, the least recently used
	if get("c") != c || get("d") != d || get("a") != a {
		t.Fatal("a recent connection lost its client")
	}
	if get("b") == b {
		t.Fatal("the least recently used connection was kept beyond the cache's size")
	}
	if _, err := sc.get(frontend.Conn{Endpoint: "http://127.0.0.1:9", AccessKey: "k", SecretKey: "s", Backend: "gcs"}, nil); err == nil || !strings.Contains(err.Error(), "backend") {
		t.Fatalf("an unknown backend: %v, want an error naming the backend", err)
	}
}

// A role profile's handles share one client: the keys STS answered are reused at the next open
// (frontend keeps the SDK's configuration, and so its credentials cache), so opening file after file neither calls STS each time nor makes a
// client per file.
func TestRoleProfileHandlesShareAClient(t *testing.T) {
	var calls atomic.Int32
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s3test.AssumeRoleAnswer(w, fmt.Sprintf("role%d", calls.Add(1)), "s", "", time.Now().Add(time.Hour))
	}))
	defer sts.Close()
	conf := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(conf, []byte("[profile role]\nrole_arn = arn:aws:iam::1:role/cabi-share\nsource_profile = base\n"+
		"[profile base]\naws_access_key_id = basekey\naws_secret_access_key = basesecret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", conf)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
	sc := storeCache{max: 3}
	c := frontend.Conn{Endpoint: "http://127.0.0.1:9", Profile: "role", Backend: "aws"}
	first, err := sc.get(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		st, err := sc.get(c, nil)
		if err != nil || st != first {
			t.Fatalf("another open of the role profile: %v, same client %v; want the first open's client", err, st == first)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d AssumeRole calls for 6 opens, want 1", n)
	}
}
