package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// The CLI's server-side encryption flags: bad combinations are exit 2 before any request.
func TestPutSSEFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("sixteen bytes!!!"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := writeFile(t, []byte("data"))
	// No server: the endpoint is a closed port, so a request sent would be exit 3 or 4, not 2.
	env := append(cleanEnv(), "AWS_ENDPOINT_URL=http://127.0.0.1:9", "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sse", "aws:kms:dsse"}, `sse "aws:kms:dsse"`},
		{[]string{"--sse-kms-key-id", "k1"}, "need sse aws:kms"},
		{[]string{"--sse", "aws:kms", "--sse-kms-encryption-context", "[1]"}, "JSON object"},
		{[]string{"--sse-c-key-file", short}, "32-byte key"},
		{[]string{"--sse-c-key-file", filepath.Join(dir, "missing")}, "sse-c-key-file"},
		{[]string{"--sse", "AES256", "--sse-c-key-file", short}, "one encryption"},
	} {
		r := runWith(t, env, nil, append(append([]string{"--path-style", "put"}, c.args...), src, "s3://bucket/k")...)
		expectCode(t, r, 2, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: stderr does not say %q:\n%s", c.args, c.want, r.stderr)
		}
		if strings.Contains(r.stderr, "sixteen bytes") {
			t.Errorf("%v: the key file's content is in the error:\n%s", c.args, r.stderr)
		}
	}
}

// TestPutSSE: put --sse / --sse-kms-key-id / --sse-c-key-file on every server over TLS through
// both backends lands where the server honours the mode (the JSON reports the encryption) and
// exits 6 (EncryptionNotApplied, object deleted) where it ignores it; no output of any run
// (stdout, stderr at debug level) holds the SSE-C key, raw, base64 or hex.
func TestPutSSE(t *testing.T) {
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		kms := s3test.KMSKeyID(t)
		front := s3test.TLSServer(t, s)
		bucket := s3test.NewBucket(t, front)
		dir := t.TempDir()
		caFile := filepath.Join(dir, "ca.pem")
		key := s3test.RandomBytes(32)
		keyFile := filepath.Join(dir, "sse-c.key")
		for p, b := range map[string][]byte{caFile: front.CABundle, keyFile: []byte(base64.StdEncoding.EncodeToString(key) + "\n")} {
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		data := s3test.RandomBytes(7 << 20)
		file := writeFile(t, data)
		var outputs bytes.Buffer
		for _, backend := range []string{"aws", "minio"} {
			for _, m := range []struct {
				name, typ string
				flags     []string
			}{
				{"SSE-S3", "AES256", []string{"--sse", "AES256"}},
				{"SSE-KMS", "aws:kms", []string{"--sse", "aws:kms", "--sse-kms-key-id", kms, "--sse-kms-encryption-context", `{"app":"safeput"}`}},
				{"SSE-C", "SSE-C", []string{"--sse-c-key-file", keyFile}},
			} {
				t.Run(backend+"/"+m.name, func(t *testing.T) {
					objKey := backend + "/" + m.name
					args := append([]string{"--path-style", "--backend", backend, "--provider", provider(s), "--part-size", "5MiB",
						"--ca-bundle", caFile, "--json", "--log-level", "debug", "put"}, m.flags...)
					r := runWith(t, serverEnv(front), nil, append(args, file, "s3://"+bucket+"/"+objKey)...)
					fmt.Fprintf(&outputs, "%s\n%s\n", r.stdout, r.stderr)
					honoured := s.Name == s3test.MinIO || (s.Name == s3test.Ceph && m.name != "SSE-S3")
					if s.Name != s3test.VersityGW && s.Name != s3test.MinIO && s.Name != s3test.Ceph {
						honoured = r.code == 0
					}
					if !honoured {
						expectCode(t, r, 6, m.name+" on a server that ignores it")
						if !strings.Contains(r.stdout, `"code": "EncryptionNotApplied"`) {
							t.Errorf("the JSON error does not carry EncryptionNotApplied:\n%s", r.stdout)
						}
						if s3test.Exists(t, front, bucket, objKey) {
							t.Error("the plaintext object is still at the key")
						}
						return
					}
					expectCode(t, r, 0, m.name)
					var got struct {
						Encryption string `json:"encryption"`
						KMSKeyID   string `json:"kms_key_id"`
						KeyMD5     string `json:"sse_customer_key_md5"`
						Strong     bool   `json:"verified_strong"`
					}
					if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
						t.Fatalf("put --json: %v\n%s", err, r.stdout)
					}
					if got.Encryption != m.typ || !got.Strong || (m.name == "SSE-KMS" && !strings.HasSuffix(got.KMSKeyID, kms)) ||
						(m.name == "SSE-C" && got.KeyMD5 == "") {
						t.Fatalf("the JSON reports %+v, want %s strongly verified:\n%s", got, m.typ, r.stdout)
					}
				})
			}
		}
		for _, f := range []string{string(key), base64.StdEncoding.EncodeToString(key), fmt.Sprintf("%x", key)} {
			if bytes.Contains(outputs.Bytes(), []byte(f)) {
				t.Fatalf("the SSE-C key appears in the CLI's output:\n%s", outputs.String())
			}
		}
	})
}
