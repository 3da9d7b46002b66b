package frontend

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sharedFilesIn points the shared files at dir, writing those given.
func sharedFilesIn(t *testing.T, dir, config, credentials string) {
	t.Helper()
	for name, body := range map[string]string{"config": config, "credentials": credentials} {
		if body != "" {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
}

func TestSharedProfiles(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	sharedFilesIn(t, dir,
		"[default]\nregion = eu-west-1\n[profile p]\nregion = ap-south-1\nendpoint_url = http://p:1\naws_access_key_id = fromconfig\n"+
			"[bare]\naws_access_key_id = ignored\naws_secret_access_key = ignored\n"+
			"[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = p\n[profile half]\naws_access_key_id = a\n"+
			"[profile sso]\nsso_session = s\nsso_account_id = 1\nsso_role_name = r\n[sso-session s]\nsso_region = us-east-1\nsso_start_url = https://x\n"+
			"[profile empty]\nregion = us-west-2\n",
		"[default]\naws_access_key_id = dk\naws_secret_access_key = ds\n[p]\naws_access_key_id = pk\naws_secret_access_key = ps\naws_session_token = pt\n")
	t.Setenv("HOME", dir) // the SSO token cache: empty
	t.Setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1")

	r, err := Conn{}.Resolve()
	if err != nil || r.AccessKey != "dk" || r.SecretKey != "ds" || r.Region != "eu-west-1" {
		t.Fatalf("default profile: %+v, %v", r, err)
	}
	// The credentials file overrides the config file key by key; region and endpoint come along.
	r, err = Conn{Profile: "p"}.Resolve()
	if err != nil || r.AccessKey != "pk" || r.SessionToken != "pt" || r.Region != "ap-south-1" || r.Endpoint != "http://p:1" {
		t.Fatalf("profile p: %+v, %v", r, err)
	}
	t.Setenv("AWS_PROFILE", "p")
	if r, err = (Conn{Region: "given"}).Resolve(); err != nil || r.AccessKey != "pk" || r.Region != "given" {
		t.Fatalf("AWS_PROFILE=p with a given region: %+v, %v", r, err)
	}
	t.Setenv("AWS_PROFILE", "")

	for _, tc := range []struct{ profile, want string }{
		{"bare", `profile "bare": not in the shared config or credentials files (` + dir},
		{"role", `profile "role" role arn:aws:iam::1:role/r assumed through STS with profile "p" static keys: ` +
			"failed to refresh cached credentials, operation error STS: AssumeRole"}, // role_test.go has the rest
		{"half", "partial credentials found for profile profile half"},
		{"sso", "aws sso login"},
		{"empty", `profile "empty" gives no credentials`},
	} {
		_, err := Conn{Profile: tc.profile}.Resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("profile %s: %v; want %q", tc.profile, err, tc.want)
		}
	}
}

// writeScript writes an executable shell script into dir and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCredentialProcess(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	script := writeScript(t, dir, "creds.sh", `printf '%s' '{"Version":1,"AccessKeyId":"proc","SecretAccessKey":"procsecret","SessionToken":"tok"}'`)
	garbled := writeScript(t, dir, "garbled.sh", "echo 'AccessKeyId=AKIDSECRET SecretAccessKey=TOPSECRET'")
	sharedFilesIn(t, dir, "[profile proc]\ncredential_process = "+script+"\n[profile fails]\ncredential_process = "+filepath.Join(dir, "missing")+"\n"+
		"[profile garbled]\ncredential_process = "+garbled+"\n", "")
	r, err := Conn{Profile: "proc"}.Resolve()
	if err != nil || r.AccessKey != "proc" || r.SecretKey != "procsecret" || r.SessionToken != "tok" {
		t.Fatalf("credential_process: %+v, %v", r, err)
	}
	if _, err := (Conn{Profile: "fails"}).Resolve(); err == nil || !strings.Contains(err.Error(), "credential_process") {
		t.Fatalf("failing credential_process: %v", err)
	}
	// Output that is not the credential JSON is reported without quoting it: it may hold secrets.
	_, err = Conn{Profile: "garbled"}.Resolve()
	if err == nil || !strings.Contains(err.Error(), "not the credential JSON") || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("garbled credential_process: %v; want the output left out", err)
	}
}

// A container task's credentials (ECS, EKS Pod Identity), when no profile is named and the
// environment gives no keys (before the instance metadata service).
func TestContainerCredentials(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	sharedFilesIn(t, dir, "", "")
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		if req.Header.Get("Authorization") != "task-token" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"AccessKeyId":"ck","SecretAccessKey":"cs","Token":"ct","Expiration":"2999-01-01T00:00:00Z"}`))
	}))
	defer srv.Close()
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/creds")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "task-token")
	r, err := Conn{}.Resolve()
	if err != nil || r.AccessKey != "ck" || r.SecretKey != "cs" || r.SessionToken != "ct" || r.Expires.Year() < 2998 {
		t.Fatalf("container credentials: %+v, %v", r, err)
	}
	// Keys that cost a call are reused while they last (the SDK configuration kept per environment).
	if r, err = (Conn{}).Resolve(); err != nil || r.AccessKey != "ck" || calls.Load() != 1 {
		t.Fatalf("container credentials again: %+v, %v after %d calls; want the same keys from one call", r, err, calls.Load())
	}
	// As in the SDKs, the default profile's keys come before the container's.
	sharedFilesIn(t, dir, "", "[default]\naws_access_key_id = dk\naws_secret_access_key = ds\n")
	if r, err = (Conn{}).Resolve(); err != nil || r.AccessKey != "dk" {
		t.Fatalf("default profile beside container credentials: %+v, %v; want the profile's keys", r, err)
	}
	sharedFilesIn(t, t.TempDir(), "", "")
	t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong")
	if _, err := (Conn{}).Resolve(); err == nil || !strings.Contains(err.Error(), "AWS_CONTAINER_CREDENTIALS_FULL_URI") {
		t.Fatalf("refused container credentials: %v; want the source named", err)
	}
}

// A credential_process that never answers, and leaves a child holding its output open, fails
// within the bound instead of holding the CLI (or a C caller's open) forever.
func TestCredentialProcessIsBounded(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	script := writeScript(t, dir, "hangs.sh", "exec 2>/dev/null\nsleep 20 &\nsleep 20")
	sharedFilesIn(t, dir, "[profile hangs]\ncredential_process = "+script+"\n", "")
	old := credentialTimeout
	credentialTimeout = 300 * time.Millisecond
	t.Cleanup(func() { credentialTimeout = old })
	start := time.Now()
	_, err := Conn{Profile: "hangs"}.Resolve()
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "credential_process") {
		t.Fatalf("hanging credential_process: %v", err)
	}
	if bound := credentialTimeout + processWaitDelay + 5*time.Second; took > bound {
		t.Fatalf("hanging credential_process returned after %v, bound %v", took, bound)
	}
}

// A credential_process's keys are reused until shortly before they expire, as the SDKs cache
// them: each C ABI open does not run the process again. Keys already expired are fetched anew.
func TestCredentialProcessKeysReused(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	lasting := writeScript(t, dir, "lasting.sh", `echo run >> `+runs+`; printf '{"Version":1,"AccessKeyId":"a","SecretAccessKey":"s","Expiration":"`+later+`"}'`)
	forever := writeScript(t, dir, "forever.sh", `echo run >> `+runs+`; printf '{"Version":1,"AccessKeyId":"f","SecretAccessKey":"s"}'`)
	brief := writeScript(t, dir, "brief.sh", `echo run >> `+runs+`; printf '{"Version":1,"AccessKeyId":"b","SecretAccessKey":"s","Expiration":"`+past+`"}'`)
	sharedFilesIn(t, dir, "[profile lasting]\ncredential_process = "+lasting+"\n[profile forever]\ncredential_process = "+forever+"\n"+
		"[profile brief]\ncredential_process = "+brief+"\n", "")
	countRuns := func() int {
		data, _ := os.ReadFile(runs)
		return strings.Count(string(data), "run")
	}
	for _, tc := range []struct {
		profile, key string
		wantRuns     int
	}{{"lasting", "a", 1}, {"forever", "f", 1}, {"brief", "b", 3}} {
		_ = os.Remove(runs)
		for range 3 {
			if r, err := (Conn{Profile: tc.profile}).Resolve(); err != nil || r.AccessKey != tc.key {
				t.Fatalf("%s: %+v, %v", tc.profile, r, err)
			}
		}
		if n := countRuns(); n != tc.wantRuns {
			t.Errorf("%s: the process ran %d times for 3 resolves, want %d", tc.profile, n, tc.wantRuns)
		}
	}
}
