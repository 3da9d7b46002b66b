package cabi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
)

// With no keys in the config, the environment or the shared files, handles sign with the EC2
// instance role's keys from the instance metadata service (IMDSv2, here an emulator handing out
// the server's keys for 3 s), through both backends; a handle open longer than the keys' life
// goes on writing with the keys fetched again.
func TestInstanceRoleHandles(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/safeput-cabi-test-config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/safeput-cabi-test-credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	for _, srv := range s3test.Servers(t) {
		bucket := s3test.NewBucket(t, srv)
		var fetches atomic.Int32
		imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
				w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
				_, _ = io.WriteString(w, "tok")
				return
			}
			switch {
			case r.Header.Get("X-Aws-Ec2-Metadata-Token") != "tok":
				w.WriteHeader(http.StatusUnauthorized)
			case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
				_, _ = io.WriteString(w, "role\n")
			case r.URL.Path == "/latest/meta-data/iam/security-credentials/role":
				fetches.Add(1)
				_ = json.NewEncoder(w).Encode(map[string]string{"Code": "Success", "AccessKeyId": srv.AccessKey, "SecretAccessKey": srv.SecretKey,
					"Expiration": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)})
			case r.URL.Path == "/latest/dynamic/instance-identity/document":
				_ = json.NewEncoder(w).Encode(map[string]string{"region": srv.Region})
			default:
				w.WriteHeader(http.StatusNotFound)
			}
		}))
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
		for _, backend := range []string{"aws", "minio"} {
			key := "instance-role/" + backend
			h, o := Open(fmt.Sprintf(`{"bucket":%q,"key":%q,"endpoint":%q,"path_style":true,"backend":%q}`, bucket, key, srv.Endpoint, backend))
			if o.status != StatusOK {
				t.Fatalf("%s: open: %+v", backend, o)
			}
			before := fetches.Load()
			var data []byte
			for i := range 4 { // 4 s: past the first keys' life
				chunk := bytes.Repeat([]byte{byte(i)}, 1000)
				if o := Write(h, chunk); o.status != StatusOK {
					t.Fatalf("%s: write: %+v", backend, o)
				}
				data = append(data, chunk...)
				time.Sleep(time.Second)
			}
			if o := Close(h); o.status != StatusOK {
				t.Fatalf("%s: close: %+v", backend, o)
			}
			if got := s3test.ReadAll(t, srv, bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("%s: read back differs", key)
			}
			if n := fetches.Load() - before; n < 1 {
				t.Errorf("%s: keys fetched %d times while the handle outlived them, want them renewed", backend, n)
			}
		}
		imds.Close()
	}
}
