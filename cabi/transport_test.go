package cabi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// An SSE-C key for a plain http:// endpoint is bad input at open, naming the rule and
// "allow_sse_c_over_http", and the store sees no request; with it, the key is sent and the close
// JSON warns, through both backends, whatever the log level (none here).
func TestSSECOverHTTPConfig(t *testing.T) {
	var mu sync.Mutex
	var all, keys int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		all++
		if r.Header.Get("X-Amz-Server-Side-Encryption-Customer-Key") != "" {
			keys++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<Error><Code>AccessDenied</Code><Message>no</Message></Error>`))
	}))
	defer srv.Close()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"aws", "minio"} {
		mu.Lock()
		all, keys = 0, 0
		mu.Unlock()
		conf := func(extra string) string {
			return fmt.Sprintf(`{"bucket":"bucket","key":"k","endpoint":%q,"access_key":"a","secret_key":"s","path_style":true,"backend":%q,"sse_c_key_file":%q%s}`,
				srv.URL, backend, keyFile, extra)
		}
		h, o := Open(conf(""))
		if h != 0 || o.status != StatusBadInput {
			t.Fatalf("%s: SSE-C over http: handle %d, %+v; want bad input", backend, h, o)
		}
		if msg := errorJSON(t, o)["error"].(string); !strings.Contains(msg, "SSE-C over plain HTTP refused") || !strings.Contains(msg, "allow_sse_c_over_http") {
			t.Errorf("%s: the error does not name the rule and the setting: %s", backend, msg)
		}
		mu.Lock()
		n := all
		mu.Unlock()
		if n != 0 {
			t.Fatalf("%s: %d requests reached the store before the refusal", backend, n)
		}
		h, o = Open(conf(`,"allow_sse_c_over_http":true`))
		if o.status != StatusOK {
			t.Fatalf("%s: open with allow_sse_c_over_http: %+v", backend, o)
		}
		_ = Write(h, []byte("data"))
		o = Close(h)
		m := errorJSON(t, o)
		if w := fmt.Sprint(m["warnings"]); !strings.Contains(w, "SSE-C over plain HTTP (allow_sse_c_over_http)") {
			t.Errorf("%s: close JSON has no SSE-C warning: %s", backend, o.json)
		}
		mu.Lock()
		n = keys
		mu.Unlock()
		if n == 0 {
			t.Errorf("%s: no request carried the key with allow_sse_c_over_http", backend)
		}
	}
}

// "insecure_skip_verify" is reported in close's JSON ("warnings") with the default logger,
// which drops the library's log line; a config without it has no warnings.
func TestInsecureSkipVerifyWarns(t *testing.T) {
	for _, insecure := range []bool{true, false} {
		conf := fmt.Sprintf(`{"bucket":"bucket","key":"k","endpoint":"https://127.0.0.1:9","access_key":"a","secret_key":"s","path_style":true,"insecure_skip_verify":%v,"stall_timeout":"1s"}`, insecure)
		h, o := Open(conf)
		if o.status != StatusOK {
			t.Fatalf("open: %+v", o)
		}
		o = Close(h) // fails to connect: nothing listens
		w := fmt.Sprint(errorJSON(t, o)["warnings"])
		if got := strings.Contains(w, "TLS certificate verification is off (insecure_skip_verify)"); got != insecure {
			t.Errorf("insecure_skip_verify %v: close JSON %s", insecure, o.json)
		}
	}
}
