package frontend

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
)

// stsCall is one AssumeRole request a fakeSTS saw.
type stsCall struct {
	form        url.Values
	signedBy    string // the access key in the Authorization header's Credential
	token       string // X-Amz-Security-Token
	signedFor   string // the region in the Credential scope
	serviceName string
}

// fakeSTS answers AssumeRole with keys named after the role ("key-NAME" for role/NAME), or with answer
// when it is set, and records each call.
type fakeSTS struct {
	mu     sync.Mutex
	calls  []stsCall
	answer func(w http.ResponseWriter) bool // true: answered
}

func (f *fakeSTS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	c := stsCall{form: form, token: r.Header.Get("X-Amz-Security-Token")}
	if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		parts := strings.Split(strings.SplitN(cred, ",", 2)[0], "/")
		if len(parts) == 5 {
			c.signedBy, c.signedFor, c.serviceName = parts[0], parts[2], parts[3]
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.answer != nil && f.answer(w) {
		return
	}
	_, role, _ := strings.Cut(form.Get("RoleArn"), "role/")
	s3test.AssumeRoleAnswer(w, "key-"+role, "secret-"+role, "token-"+role, time.Now().Add(time.Hour))
}

// serveSTS starts f as the STS endpoint (AWS_ENDPOINT_URL_STS) for the rest of the test.
func serveSTS(t *testing.T, f *fakeSTS) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close) // after the test's defers: a hung handler is released first
	t.Setenv("AWS_ENDPOINT_URL_STS", srv.URL)
}

func (f *fakeSTS) seen() []stsCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stsCall(nil), f.calls...)
}

// A profile with role_arn gets the keys STS AssumeRole answers, signed with its source's keys:
// a source_profile's static keys, its own keys, the environment's, or another role's (a chain).
func TestAssumeRole(t *testing.T) {
	isolate(t)
	sts := &fakeSTS{}
	serveSTS(t, sts)
	dir := t.TempDir()
	sharedFilesIn(t, dir,
		"[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\nexternal_id = ext\nrole_session_name = mine\nduration_seconds = 900\nregion = eu-west-2\n"+
			"[profile self]\nrole_arn = arn:aws:iam::1:role/self\nsource_profile = self\naws_access_key_id = selfkey\naws_secret_access_key = selfsecret\n"+
			"[profile env]\nrole_arn = arn:aws:iam::1:role/env\ncredential_source = Environment\n"+
			"[profile chained]\nrole_arn = arn:aws:iam::1:role/second\nsource_profile = role\n",
		"[base]\naws_access_key_id = basekey\naws_secret_access_key = basesecret\naws_session_token = basetoken\n")

	r, err := Conn{Profile: "role"}.Resolve()
	if err != nil || r.AccessKey != "key-r" || r.SecretKey != "secret-r" || r.SessionToken != "token-r" {
		t.Fatalf("role: %+v, %v; want the keys STS answered", r, err)
	}
	c := sts.seen()[0]
	if c.form.Get("Action") != "AssumeRole" || c.form.Get("RoleArn") != "arn:aws:iam::1:role/r" || c.form.Get("ExternalId") != "ext" ||
		c.form.Get("RoleSessionName") != "mine" || c.form.Get("DurationSeconds") != "900" {
		t.Errorf("AssumeRole form %v", c.form)
	}
	if c.signedBy != "basekey" || c.token != "basetoken" || c.signedFor != "eu-west-2" || c.serviceName != "sts" {
		t.Errorf("AssumeRole signed by %q (token %q) for %s/%s; want basekey with basetoken, eu-west-2/sts", c.signedBy, c.token, c.signedFor, c.serviceName)
	}

	if r, err = (Conn{Profile: "self"}).Resolve(); err != nil || r.AccessKey != "key-self" || sts.seen()[1].signedBy != "selfkey" {
		t.Fatalf("source_profile itself: %+v, %v", r, err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	if _, err = (Conn{Profile: "env"}).Resolve(); err == nil || !strings.Contains(err.Error(), "credential_source Environment") {
		t.Fatalf("credential_source Environment without keys: %v", err)
	}
	// A profile named outright comes before keys in the environment (the SDK's order), so here
	// the environment's keys are the role's source.
	t.Setenv("AWS_ACCESS_KEY_ID", "envkey")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	if r, err = (Conn{Profile: "env"}).Resolve(); err != nil || r.AccessKey != "key-env" || sts.seen()[2].signedBy != "envkey" {
		t.Fatalf("credential_source Environment: %+v, %v", r, err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")

	// A chain: the second role is assumed with the first role's keys. (The first role's keys
	// from above are not reused: they were assumed for the role profile's own region.)
	n := len(sts.seen())
	if r, err = (Conn{Profile: "chained"}).Resolve(); err != nil || r.AccessKey != "key-second" {
		t.Fatalf("chained role: %+v, %v", r, err)
	}
	calls := sts.seen()[n:]
	if len(calls) != 2 || calls[0].signedBy != "basekey" || calls[1].signedBy != "key-r" || calls[1].token != "token-r" {
		t.Fatalf("chained role: calls %+v; want the first role assumed with base's keys, the second with the first role's", calls)
	}
}

// Assumed-role keys are reused until shortly before they expire: resolving the same profile
// again (each C ABI open) does not call STS again, and gets the same keys.
func TestAssumedRoleCache(t *testing.T) {
	isolate(t)
	expires := time.Now().Add(time.Hour)
	sts := &fakeSTS{}
	sts.answer = func(w http.ResponseWriter) bool {
		s3test.AssumeRoleAnswer(w, fmt.Sprintf("k%d", len(sts.seen())), "s", "", expires)
		return true
	}
	serveSTS(t, sts)
	sharedFilesIn(t, t.TempDir(), "[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\n",
		"[base]\naws_access_key_id = basekey\naws_secret_access_key = basesecret\n")
	for i := range 3 {
		r, err := Conn{Profile: "role"}.Resolve()
		if err != nil || r.AccessKey != "k1" || len(sts.seen()) != 1 {
			t.Fatalf("resolve %d: %+v, %v, %d STS calls; want k1 from one call", i, r, err, len(sts.seen()))
		}
	}
}

// Role profiles that cannot work are refused before any request, naming the rule broken; an
// STS refusal is reported with its code; a hung STS is given up at credentialTimeout.
func TestAssumeRoleRefusals(t *testing.T) {
	isolate(t)
	sts := &fakeSTS{}
	serveSTS(t, sts)
	hang := make(chan struct{})
	defer close(hang) // before the server's Close, which waits for the hung handler
	dir := t.TempDir()
	sharedFilesIn(t, dir,
		"[profile mfa]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\nmfa_serial = arn:aws:iam::1:mfa/u\n"+
			"[profile nosource]\nrole_arn = arn:aws:iam::1:role/r\n"+
			"[profile noarn]\nsource_profile = base\n"+
			"[profile both]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\ncredential_source = Environment\n"+
			"[profile loop1]\nrole_arn = arn:aws:iam::1:role/1\nsource_profile = loop2\n"+
			"[profile loop2]\nrole_arn = arn:aws:iam::1:role/2\nsource_profile = loop1\n"+
			"[profile missing]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = nowhere\n"+
			"[profile imds]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Ec2InstanceMetadata\n"+
			"[profile odd]\nrole_arn = arn:aws:iam::1:role/r\ncredential_source = Somewhere\n"+
			"[profile webid]\nrole_arn = arn:aws:iam::1:role/r\nweb_identity_token_file = /tok\n"+
			"[profile selfless]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = selfless\n"+
			"[profile denied]\nrole_arn = arn:aws:iam::1:role/denied\nsource_profile = base\n"+
			"[profile hung]\nrole_arn = arn:aws:iam::1:role/hung\nsource_profile = base\n",
		"[base]\naws_access_key_id = basekey\naws_secret_access_key = basesecret\n")
	for _, tc := range []struct{ profile, want string }{
		{"mfa", "MFA"}, // safeput cannot ask for a code
		{"nosource", `profile "nosource" gives no credentials`},
		{"noarn", "source_profile requires role_arn, profile noarn"},
		{"both", "only one credential type may be specified per profile"},
		{"loop1", "of profile loop1"},
		{"missing", `profile "nowhere": not in the shared config`},
		{"imds", "credential_source Ec2InstanceMetadata: failed to refresh cached credentials, operation error STS: AssumeRole, get identity: get credentials: failed to refresh cached credentials, no EC2 IMDS role found"},
		{"odd", "credential_source values must be EcsContainer, Ec2InstanceMetadata, or Environment"},
		{"webid", "web_identity_token_file /tok"},
		{"selfless", "of profile selfless"},
	} {
		_, err := Conn{Profile: tc.profile}.Resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("profile %s: %v; want %q", tc.profile, err, tc.want)
		}
	}
	if n := len(sts.seen()); n != 0 {
		t.Errorf("%d STS calls for profiles refused before any request", n)
	}

	sts.answer = func(w http.ResponseWriter) bool {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized to perform sts:AssumeRole</Message></Error><RequestId>r1</RequestId></ErrorResponse>`)
		return true
	}
	_, err := Conn{Profile: "denied"}.Resolve()
	if err == nil || !strings.Contains(err.Error(), "arn:aws:iam::1:role/denied") || !strings.Contains(err.Error(), "not authorized") {
		t.Errorf("STS refusal: %v; want the role and STS's message", err)
	}
	// The error names the source that signed the call, never its keys.
	if err != nil && (!strings.Contains(err.Error(), `profile "base" static keys`) || strings.Contains(err.Error(), "basesecret") || strings.Contains(err.Error(), "basekey")) {
		t.Errorf("STS refusal: %v; want the source profile named and no key in it", err)
	}

	sts.answer = func(w http.ResponseWriter) bool { <-hang; return true }
	defer func(d time.Duration) { credentialTimeout = d }(credentialTimeout)
	credentialTimeout = 300 * time.Millisecond
	start := time.Now()
	_, err = Conn{Profile: "hung"}.Resolve()
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Errorf("hung STS: %v after %s; want an error at credentialTimeout", err, took)
	}
}
