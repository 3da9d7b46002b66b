package safeobjstore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-kit/log"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"

	safeobjstore "github.com/safeput/safeput/objstore"
)

// tlsBucket is a Bucket for env's TLS endpoint from the YAML a Thanos user writes for a store
// with a private CA: http_config.tls_config.ca_file, insecure off; caFile "" trusts the system
// roots only.
func tlsBucket(t *testing.T, env testkit.Env, caFile string) *safeobjstore.Bucket {
	t.Helper()
	conf := fmt.Sprintf(`bucket: %s
endpoint: %s
region: %s
access_key: %s
secret_key: %s
insecure: false
bucket_lookup_type: path
part_size: %d
http_config:
  tls_config:
    ca_file: %q
`, env.Bucket, strings.TrimPrefix(env.Srv.Endpoint, "https://"), env.Srv.Region, env.Srv.AccessKey, env.Srv.SecretKey, partSize, caFile)
	bkt, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(conf), "test", nil, safeobjstore.WithAdapter(adapter(env)))
	if err != nil {
		t.Fatalf("NewBucket: %v", err)
	}
	t.Cleanup(func() { _ = bkt.Close() })
	return bkt
}

// Over TLS with a private CA given as objstore's ca_file, a multipart upload lands and reads
// back identical on every server through both adapters; without the CA the upload fails as a
// Permanent certificate error, stores nothing and leaves no upload behind.
func TestTLSPrivateCA(t *testing.T) {
	testkit.ForEachTLS(t, func(t *testing.T, env testkit.Env) {
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, s3test.Certs(t).CA.PEM, 0o600); err != nil {
			t.Fatal(err)
		}
		data := payload(3*partSize+1234, 7)
		ctx := context.Background()
		bkt := tlsBucket(t, env, ca)
		if err := bkt.Upload(ctx, "tls/obj", bytes.NewReader(data)); err != nil {
			t.Fatalf("Upload over TLS with the private CA: %v", err)
		}
		readBack(t, bkt, "tls/obj", data)

		err := tlsBucket(t, env, "").Upload(ctx, "tls/untrusted", bytes.NewReader(data))
		if err == nil {
			t.Fatal("Upload trusting only the system roots succeeded against a private CA's certificate")
		}
		if k := sperrors.KindOf(err); k != sperrors.Permanent || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("untrusted certificate: kind %v, error %v; want Permanent naming the certificate", k, err)
		}
		if ok, err := bkt.Exists(ctx, "tls/untrusted"); err != nil || ok {
			t.Errorf("untrusted upload: Exists = %v, %v; want false", ok, err)
		}
		noIncompleteUploads(t, env)
	})
}
