package cabi

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// "ca_bundle" trusts a private CA for the handle's store: a write over TLS lands on every server
// through both backends; without it the close fails Permanent (4) naming the host; a bundle that
// cannot be read or holds no certificate is bad input (2) naming the file.
func TestCABundleConfig(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{junk, filepath.Join(dir, "none.pem")} {
		h, o := Open(strings.Replace(offline, `"bucket"`, fmt.Sprintf(`"ca_bundle":%q,"bucket"`, file), 1))
		if h != 0 || o.status != StatusBadInput || !strings.Contains(errorJSON(t, o)["error"].(string), "CA bundle "+file) {
			t.Errorf("ca_bundle %s: handle %d, %+v; want bad input naming the file", file, h, o)
		}
	}
	s3test.ForEach(t, func(t *testing.T, plain s3test.Server) {
		srv := s3test.TLSServer(t, plain)
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(caFile, srv.CABundle, 0o600); err != nil {
			t.Fatal(err)
		}
		bucket := s3test.NewBucket(t, srv)
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				conf := func(key, ca string) string {
					return fmt.Sprintf(`{"bucket":%q,"key":%q,"endpoint":%q,"access_key":%q,"secret_key":%q,"region":%q,"path_style":true,"backend":%q,"ca_bundle":%q}`,
						bucket, key, srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region, backend, ca)
				}
				data := s3test.RandomBytes(1 << 20)
				key := backend + "/tls"
				h, o := Open(conf(key, caFile))
				if o.status != StatusOK {
					t.Fatalf("open: %+v", o)
				}
				if o := Write(h, data); o.status != StatusOK {
					t.Fatalf("write: %+v", o)
				}
				if o := Close(h); o.status != StatusOK {
					t.Fatalf("close: %+v", o)
				}
				if got := s3test.ReadAll(t, srv, bucket, key); !bytes.Equal(got, data) {
					t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
				}
				h, o = Open(conf(key+"-untrusted", ""))
				if o.status != StatusOK {
					t.Fatalf("open: %+v", o)
				}
				_ = Write(h, data)
				o = Close(h)
				host := strings.TrimPrefix(srv.Endpoint, "https://")
				if o.status != StatusPermanent || !strings.Contains(errorJSON(t, o)["error"].(string), "TLS certificate of "+host+" does not verify") {
					t.Fatalf("close without the CA: %+v; want permanent naming %s", o, host)
				}
			})
		}
	})
}
