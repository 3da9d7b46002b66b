package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// A private CA, trusted explicitly: --ca-bundle, AWS_CA_BUNDLE and ca_bundle in the profile
// each let a put over TLS land (multipart, verified strongly) through both backends; without
// the CA, or with a certificate for another host or an expired one, put exits 4 and says first
// whose certificate failed and why, with nothing left behind; a bundle that cannot be read or
// holds no certificate exits 2 naming the file.
func TestPutTLS(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, testPutTLS)
}

func testPutTLS(t *testing.T, s s3test.Server) {
	certs := s3test.Certs(t)
	front := s3test.TLSServer(t, s)
	bucket := s3test.NewBucket(t, front)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	junk := filepath.Join(dir, "junk.pem")
	config := filepath.Join(dir, "config")
	for p, body := range map[string]string{caFile: string(front.CABundle), junk: "no certificate here\n",
		config: "[default]\nca_bundle = " + caFile + "\n"} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data := s3test.RandomBytes(11<<20 + 3)
	file := writeFile(t, data)
	small := writeFile(t, []byte("small object"))
	host := strings.TrimPrefix(front.Endpoint, "https://")
	for _, backend := range []string{"aws", "minio"} {
		t.Run(backend, func(t *testing.T) {
			common := []string{"--path-style", "--backend", backend, "--provider", provider(s), "--part-size", "5MiB"}
			put := func(env []string, extra []string, src, key string) result {
				return runWith(t, env, nil, append(append(append([]string{}, common...), extra...), "put", src, "s3://"+bucket+"/"+key)...)
			}
			env := serverEnv(front)
			// --ca-bundle: a multipart put lands and verifies strongly.
			r := put(env, []string{"--ca-bundle", caFile}, file, backend+"/flag")
			expectCode(t, r, 0, "put with --ca-bundle")
			if !strings.Contains(r.stdout, "(strong)") {
				t.Errorf("put over TLS not verified strongly:\n%s", r.stdout)
			}
			if got := s3test.ReadAll(t, front, bucket, backend+"/flag"); !bytes.Equal(got, data) {
				t.Fatalf("stored object differs (%d vs %d bytes)", len(got), len(data))
			}
			// AWS_CA_BUNDLE, and ca_bundle in the default profile.
			expectCode(t, put(append(env, "AWS_CA_BUNDLE="+caFile), nil, small, backend+"/env"), 0, "put with AWS_CA_BUNDLE")
			expectCode(t, put(append(env, "AWS_CONFIG_FILE="+config), nil, small, backend+"/profile"), 0, "put with ca_bundle in the profile")

			// Certificates that do not verify: exit 4, the reason first, nothing left behind.
			for _, c := range []struct {
				name, endpoint, reason string
			}{
				{"no CA", front.Endpoint, "TLS certificate of " + host + " does not verify: signed by an unknown authority"},
				{"wrong host", s3test.TLSFront(t, front, certs.WrongHost).Endpoint, "does not verify: not for this host name"},
				{"expired", s3test.TLSFront(t, front, certs.Expired).Endpoint, "does not verify: expired or not yet valid"},
			} {
				extra := []string{"--ca-bundle", caFile}
				if c.name == "no CA" {
					extra = nil
				}
				key := backend + "/refused-" + strings.ReplaceAll(c.name, " ", "-")
				r := put(append(serverEnv(front), "AWS_ENDPOINT_URL="+c.endpoint), extra, file, key)
				expectCode(t, r, 4, c.name)
				line := strings.TrimSpace(r.stderr)
				t.Logf("%s: %s", c.name, line)
				if i := strings.Index(line, c.reason); i < 0 || strings.Contains(line[:i], "operation error") || strings.Contains(line[:i], "tls:") {
					t.Errorf("%s: stderr does not lead with %q:\n%s", c.name, c.reason, r.stderr)
				}
				for _, bad := range []string{"left behind", "lost", "sweep"} {
					if strings.Contains(r.stderr, bad) {
						t.Errorf("%s: stderr speaks of %q for a request that never left:\n%s", c.name, bad, r.stderr)
					}
				}
				if ids := s3test.IncompleteUploads(t, front, bucket, key); len(ids) != 0 {
					t.Errorf("%s: uploads left: %v", c.name, ids)
				}
			}

			// A bundle that cannot be read or holds no certificate: exit 2, naming the file.
			for _, bad := range []struct{ what, file, want string }{
				{"missing", filepath.Join(dir, "missing.pem"), "no such file"},
				{"junk", junk, "holds no PEM certificate"},
			} {
				r := put(env, []string{"--ca-bundle", bad.file}, small, backend+"/bad")
				expectCode(t, r, 2, "--ca-bundle "+bad.what)
				if !strings.Contains(r.stderr, "CA bundle "+bad.file) || !strings.Contains(r.stderr, bad.want) {
					t.Errorf("--ca-bundle %s: stderr does not name the file and the fault:\n%s", bad.what, r.stderr)
				}
				r = put(append(env, "AWS_CA_BUNDLE="+bad.file), nil, small, backend+"/bad")
				expectCode(t, r, 2, "AWS_CA_BUNDLE "+bad.what)
			}

			// Verification off is opt-in and warned about once on stderr at the default log
			// level, and once more in the library's log when warnings are logged.
			r = put(env, []string{"--insecure-skip-verify"}, small, backend+"/insecure")
			expectCode(t, r, 0, "put with --insecure-skip-verify")
			if n := strings.Count(r.stderr, "safeput: warning: TLS certificate verification is off"); n != 1 {
				t.Errorf("%d warnings that verification is off, want 1:\n%s", n, r.stderr)
			}
			r = put(env, []string{"--insecure-skip-verify", "--log-level", "warn"}, small, backend+"/insecure")
			expectCode(t, r, 0, "put with --insecure-skip-verify --log-level warn")
			if n, logged := strings.Count(r.stderr, "safeput: warning: TLS certificate verification is off"), strings.Count(r.stderr, "verification is off for this store"); n != 1 || logged != 1 {
				t.Errorf("%d warnings and %d log lines that verification is off, want 1 and 1:\n%s", n, logged, r.stderr)
			}
		})
	}
}
