package cabi

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/echostore"
	"github.com/safeput/safeput/storetest/s3test"
)

// TestAnswersCarryNoSecret: through both backends at every log level, a handle with temporary
// credentials and an SSE-C key writes to a store that echoes every request header into its
// error message (echostore). The JSON of every call (the failed close and writes) and the log
// lines on stderr hold neither the secret key, the session token, the SSE-C key nor a request
// signature.
func TestAnswersCarryNoSecret(t *testing.T) {
	const (
		secretKey = "wJalrXUtnFEMI/K7MDENG/cabi-Zq9SECRETkey"
		token     = "IQoJb3JpZ2luX2VjEJr//////////cabi-Zq9TOKENvalue+/="
	)
	srv := echostore.Start(t, secretKey)
	dir := t.TempDir()
	sseKey := s3test.RandomBytes(32)
	caFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "sse-c.key")
	for p, b := range map[string][]byte{caFile: srv.CABundle, keyFile: []byte(base64.StdEncoding.EncodeToString(sseKey))} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The library logs to the process's stderr, taken when a handle opens.
	logFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = logFile
	defer func() { os.Stderr = stderr }()

	var answers strings.Builder
	for _, backend := range []string{"aws", "minio"} {
		for _, level := range []string{"debug", "info", "warn", "error"} {
			for _, size := range []int{1000, 6 << 20} { // a single PUT, a multipart upload
				conf := fmt.Sprintf(`{"bucket":"bucket","key":"%s-%s-%d","endpoint":%q,"ca_bundle":%q,"region":"us-east-1","path_style":true,`+
					`"backend":%q,"access_key":"AKIAIOSFODNN7EXAMPLE","secret_key":%q,"session_token":%q,"sse_c_key_file":%q,`+
					`"part_size":"5MiB","stall_timeout":"0s","log_level":%q}`,
					backend, level, size, srv.URL, caFile, backend, secretKey, token, keyFile, level)
				h, o := Open(conf)
				if o.status != StatusOK {
					t.Fatalf("open: %+v", o)
				}
				if w := Write(h, bytes.Repeat([]byte("e"), size)); w.status != StatusOK {
					answers.WriteString(w.json + "\n")
					Abort(h)
					continue
				}
				o = Close(h)
				if o.status != StatusPermanent {
					t.Errorf("%s at %s, %d bytes: close %+v, want SAFEPUT_PERMANENT", backend, level, size, o)
				}
				answers.WriteString(o.json + "\n")
			}
		}
	}
	os.Stderr = stderr
	logs, err := os.ReadFile(logFile.Name())
	if err != nil {
		t.Fatal(err)
	}
	all := answers.String() + string(logs)
	for _, s := range append([]string{secretKey, token, base64.StdEncoding.EncodeToString(sseKey), string(sseKey)}, srv.Signatures()...) {
		if part := s[:16]; strings.Contains(all, part) {
			t.Errorf("%q (of the secret %q) is in the answers or the log:\n%s", part, s, all)
		}
	}
	if !strings.Contains(answers.String(), "Also: REDACTED") || !strings.Contains(string(logs), `"level":"debug"`) {
		t.Errorf("the store's redacted refusal is not in the answers, or nothing was logged at debug:\n%s", all)
	}
}
