package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// recordingStore is a plain http:// endpoint that records what reached it and refuses every
// request (403): the SSE-C key and session-token headers it saw.
type recordingStore struct {
	srv    *httptest.Server
	mu     sync.Mutex
	all    int
	keys   int
	tokens []string
}

func newRecordingStore(t *testing.T) *recordingStore {
	rs := &recordingStore{}
	rs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.all++
		if r.Header.Get("X-Amz-Server-Side-Encryption-Customer-Key") != "" {
			rs.keys++
		}
		if tok := r.Header.Get("X-Amz-Security-Token"); tok != "" {
			rs.tokens = append(rs.tokens, tok)
		}
		rs.mu.Unlock()
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<Error><Code>AccessDenied</Code><Message>no</Message></Error>`))
	}))
	t.Cleanup(rs.srv.Close)
	return rs
}

func (rs *recordingStore) reset() (all, keys int, tokens []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	all, keys, tokens = rs.all, rs.keys, rs.tokens
	rs.all, rs.keys, rs.tokens = 0, 0, nil
	return all, keys, tokens
}

func writeSecret(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// SSE-C to a plain http:// endpoint: put and recover exit 2 naming the rule and
// --allow-sse-c-over-http, and the store sees no request; with the flag the key is sent and a
// warning is on stderr at the default log level. Both backends.
func TestSSECOverHTTPRefused(t *testing.T) {
	rs := newRecordingStore(t)
	env := append(cleanEnv(), "AWS_ENDPOINT_URL="+rs.srv.URL, "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	keyFile := writeSecret(t, "sse-c.key", strings.Repeat("c", 32))
	src := writeFile(t, []byte("data"))
	journal := t.TempDir()
	for _, backend := range []string{"aws", "minio"} {
		t.Run(backend, func(t *testing.T) {
			common := []string{"--path-style", "--backend", backend}
			for name, args := range map[string][]string{
				"put":     {"put", "--sse-c-key-file", keyFile, src, "s3://bucket/k"},
				"recover": {"recover", "--journal", journal, "--sse-c-key-file", keyFile, "s3://bkt"},
			} {
				r := runWith(t, env, nil, append(common, args...)...)
				expectCode(t, r, 2, name+" SSE-C over http")
				if !strings.Contains(r.stderr, "SSE-C over plain HTTP refused") || !strings.Contains(r.stderr, "--allow-sse-c-over-http") {
					t.Errorf("%s: stderr does not name the rule and the flag:\n%s", name, r.stderr)
				}
				if all, _, _ := rs.reset(); all != 0 {
					t.Errorf("%s: %d requests reached the store; want none", name, all)
				}
			}
			r := runWith(t, env, nil, append(common, "put", "--allow-sse-c-over-http", "--sse-c-key-file", keyFile, src, "s3://bucket/k")...)
			expectCode(t, r, 4, "put --allow-sse-c-over-http") // the store's 403
			if !strings.Contains(r.stderr, "safeput: warning: SSE-C over plain HTTP (--allow-sse-c-over-http)") {
				t.Errorf("put --allow-sse-c-over-http: no warning on stderr:\n%s", r.stderr)
			}
			if _, keys, _ := rs.reset(); keys == 0 {
				t.Error("put --allow-sse-c-over-http: no request carried the key")
			}
			r = runWith(t, env, nil, append(common, "recover", "--allow-sse-c-over-http", "--journal", journal, "--sse-c-key-file", keyFile, "s3://bkt")...)
			expectCode(t, r, 0, "recover --allow-sse-c-over-http of an empty journal")
			if !strings.Contains(r.stderr, "safeput: warning: SSE-C over plain HTTP") {
				t.Errorf("recover --allow-sse-c-over-http: no warning on stderr:\n%s", r.stderr)
			}
		})
	}
}

// --insecure-skip-verify is warned about on stderr, once, at the default log level, by every
// command that connects; not without it.
func TestInsecureSkipVerifyWarnsEveryCommand(t *testing.T) {
	env := append(cleanEnv(), "AWS_ENDPOINT_URL=https://127.0.0.1:9", "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	src := writeFile(t, []byte("data"))
	const warning = "safeput: warning: TLS certificate verification is off (--insecure-skip-verify)"
	for name, args := range map[string][]string{
		"put":     {"put", src, "s3://bucket/k"},
		"verify":  {"verify", src, "s3://bucket/k"},
		"sweep":   {"sweep", "s3://bucket/prefix/"},
		"probe":   {"probe", "s3://bucket/scratch/"},
		"recover": {"recover", "--journal", t.TempDir(), "s3://bkt"},
	} {
		for _, insecure := range []bool{true, false} {
			flags := []string{"--path-style", "--stall-timeout", "1s"}
			if insecure {
				flags = append(flags, "--insecure-skip-verify")
			}
			r := runWith(t, env, nil, append(flags, args...)...)
			want := 0
			if insecure {
				want = 1
			}
			if n := strings.Count(r.stderr, warning); n != want {
				t.Errorf("%s, --insecure-skip-verify %v: %d warnings on stderr, want %d:\n%s", name, insecure, n, want, r.stderr)
			}
		}
	}
}

// --concurrency out of 1..1024 is exit 2 naming the range, before any request (the endpoint is
// a closed port: a request would be exit 3).
func TestConcurrencyOutOfRange(t *testing.T) {
	env := append(cleanEnv(), "AWS_ENDPOINT_URL=http://127.0.0.1:9", "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	src := writeFile(t, []byte("data"))
	for _, n := range []string{"9223372036854775807", "100000", "1025", "0"} {
		for _, source := range []string{src, "-"} {
			r := runWith(t, env, strings.NewReader("stream"), "--path-style", "--concurrency", n, "put", source, "s3://bucket/k")
			expectCode(t, r, 2, "--concurrency "+n)
			if !strings.Contains(r.stderr, "--concurrency "+n+": must be from 1 to 1024") {
				t.Errorf("--concurrency %s: stderr does not name the range:\n%s", n, r.stderr)
			}
		}
	}
}

// The secret key and session token can come from files (or the environment) instead of the
// command line; given on the command line they still work, with a warning on stderr; a file that
// is missing or empty, or both a flag and its file, is exit 2 and never prints the file.
func TestSecretsOffTheCommandLine(t *testing.T) {
	rs := newRecordingStore(t)
	env := append(cleanEnv(), "AWS_ENDPOINT_URL="+rs.srv.URL)
	src := writeFile(t, []byte("data"))
	secret := writeSecret(t, "secret", "  s3cr3t-from-file\n")
	token := writeSecret(t, "token", "t0ken-from-file\n")
	put := []string{"put", src, "s3://bucket/k"}
	const visible = "on the command line is visible to every user"

	r := runWith(t, env, nil, append([]string{"--path-style", "--access-key", "k", "--secret-key-file", secret, "--session-token-file", token}, put...)...)
	expectCode(t, r, 4, "keys from files") // the store's 403: the request went out, signed
	if strings.Contains(r.stderr, visible) {
		t.Errorf("a warning about the command line with the secrets in files:\n%s", r.stderr)
	}
	if _, _, tokens := rs.reset(); len(tokens) == 0 || tokens[0] != "t0ken-from-file" {
		t.Errorf("session token sent %q, want the file's", tokens)
	}

	r = runWith(t, env, nil, append([]string{"--path-style", "--access-key", "k", "--secret-key", "s3cr3t", "--session-token", "t0ken"}, put...)...)
	expectCode(t, r, 4, "keys on the command line")
	for _, flag := range []string{"--secret-key", "--session-token"} {
		if !strings.Contains(r.stderr, "safeput: warning: "+flag+" "+visible) {
			t.Errorf("no warning about %s on the command line:\n%s", flag, r.stderr)
		}
	}
	if _, _, tokens := rs.reset(); len(tokens) == 0 || tokens[0] != "t0ken" {
		t.Errorf("session token sent %q, want the flag's", tokens)
	}

	empty := writeSecret(t, "empty", "\n")
	for name, args := range map[string][]string{
		"missing file":  {"--secret-key-file", filepath.Join(t.TempDir(), "none")},
		"empty file":    {"--secret-key-file", empty},
		"two lines":     {"--session-token-file", writeSecret(t, "two", "t0ken-line-one\nt0ken-line-two\n")},
		"flag and file": {"--secret-key", "s3cr3t", "--secret-key-file", secret},
	} {
		r := runWith(t, env, nil, append(append([]string{"--path-style", "--access-key", "k"}, args...), put...)...)
		expectCode(t, r, 2, name)
		if strings.Contains(r.stderr, "from-file") || strings.Contains(r.stderr, "t0ken-line") {
			t.Errorf("%s: stderr shows the file's content:\n%s", name, r.stderr)
		}
		if !strings.Contains(r.stderr, "-file") {
			t.Errorf("%s: stderr does not name the flag:\n%s", name, r.stderr)
		}
	}
	if all, _, _ := rs.reset(); all != 0 {
		t.Errorf("%d requests sent by invocations refused as bad input", all)
	}
}

// --secret-key-file signs with the file's key: a put lands on every server through both
// backends with the key in a file and the access key in the environment; a wrong key in the file
// is exit 4.
func TestSecretKeyFileOnServers(t *testing.T) {
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		bucket := s3test.NewBucket(t, s)
		env := append(cleanEnv(), "AWS_ENDPOINT_URL="+s.Endpoint, "AWS_REGION="+s.Region, "AWS_ACCESS_KEY_ID="+s.AccessKey)
		good := writeSecret(t, "good", s.SecretKey+"\n")
		bad := writeSecret(t, "bad", s.SecretKey+"-not\n")
		data := []byte("signed with the file's key")
		src := writeFile(t, data)
		for _, backend := range []string{"aws", "minio"} {
			key := backend + "/secret-file"
			// The access key from the environment and the secret from the file are one pair, as
			// the flags are: --access-key is given with it.
			r := runWith(t, env, nil, "--path-style", "--backend", backend, "--provider", provider(s),
				"--access-key", s.AccessKey, "--secret-key-file", good, "put", src, "s3://"+bucket+"/"+key)
			expectCode(t, r, 0, backend+" put with --secret-key-file")
			if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("%s: read back %q", backend, got)
			}
			r = runWith(t, env, nil, "--path-style", "--backend", backend, "--provider", provider(s),
				"--access-key", s.AccessKey, "--secret-key-file", bad, "put", src, "s3://"+bucket+"/"+key+"-bad")
			expectCode(t, r, 4, backend+" put with a wrong key in --secret-key-file")
		}
	})
}

// A store that has answered nothing in this run is a wrong endpoint, not an outage to ride
// out: verify and sweep against a closed port give up after the policy's attempts, as put does,
// instead of retrying for the outage allowance.
func TestClosedPortIsNotAnOutage(t *testing.T) {
	env := append(cleanEnv(), "AWS_ENDPOINT_URL=http://127.0.0.1:9", "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	src := writeFile(t, []byte("data"))
	for name, args := range map[string][]string{
		"put":    {"put", src, "s3://bucket/k"},
		"verify": {"verify", src, "s3://bucket/k"},
		"sweep":  {"sweep", "s3://bucket/prefix/"},
	} {
		r := runWith(t, env, nil, append([]string{"--path-style"}, args...)...)
		expectCode(t, r, 3, name)
		if !strings.Contains(r.stderr, "attempts=3") {
			t.Errorf("%s: not ended after the policy's 3 attempts:\n%s", name, r.stderr)
		}
	}
}
