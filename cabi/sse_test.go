package cabi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// The encryption fields are checked at Open: bad input naming the field, before any request.
func TestConfigSSE(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{`"sse":"aws:kms:dsse"`, "sse"},
		{`"sse_kms_key_id":"k1"`, "need sse aws:kms"},
		{`"sse":"aws:kms","sse_kms_encryption_context":"[1]"`, "sse-kms-encryption-context"},
		{`"sse_c_key_file":"/nonexistent/key"`, "sse-c-key-file"},
	} {
		h, o := Open(strings.Replace(offline, `"bucket"`, c.extra+`,"bucket"`, 1))
		if h != 0 || o.status != StatusBadInput || !strings.Contains(errorJSON(t, o)["error"].(string), c.want) {
			t.Errorf("%s: handle %d, %+v; want bad input naming %q", c.extra, h, o, c.want)
		}
	}
	h, o := Open(strings.Replace(offline, `"bucket"`, `"sse":"aws:kms","sse_kms_key_id":"k1","bucket_key_enabled":true,"bucket"`, 1))
	if o.status != StatusOK {
		t.Fatalf("sse aws:kms refused: %+v", o)
	}
	Abort(h)
}

// TestSSEOnServers: "sse":"aws:kms" with the run's KMS key, through both backends on every
// server: landed with "encryption":"aws:kms" where the server honours it (MinIO, Ceph RGW), and
// SAFEPUT_COMPATIBILITY coded EncryptionNotApplied where it does not (the gateway).
func TestSSEOnServers(t *testing.T) {
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		kms := s3test.KMSKeyID(t)
		bucket := s3test.NewBucket(t, srv)
		for _, backend := range []string{"aws", "minio"} {
			conf := fmt.Sprintf(`{"bucket":%q,"key":%q,"endpoint":%q,"access_key":%q,"secret_key":%q,"region":%q,"path_style":true,"backend":%q,"part_size":"5MiB","sse":"aws:kms","sse_kms_key_id":%q}`,
				bucket, "sse-"+backend, srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region, backend, kms)
			h, o := Open(conf)
			if o.status != StatusOK {
				t.Fatalf("open: %+v", o)
			}
			if w := Write(h, bytes.Repeat([]byte("e"), 6<<20)); w.status != StatusOK {
				Abort(h)
				t.Fatalf("write: %+v", w)
			}
			o = Close(h)
			var m map[string]any
			if err := json.Unmarshal([]byte(o.json), &m); err != nil {
				t.Fatalf("%q: %v", o.json, err)
			}
			if srv.Name == s3test.VersityGW {
				if o.status != StatusCompatibility || m["code"] != "EncryptionNotApplied" {
					t.Fatalf("%s on the gateway: %+v, want SAFEPUT_COMPATIBILITY coded EncryptionNotApplied", backend, o)
				}
				continue
			}
			if o.status != StatusOK || m["encryption"] != "aws:kms" || !strings.HasSuffix(fmt.Sprint(m["kms_key_id"]), kms) {
				t.Fatalf("%s: %+v, want landed with aws:kms and key %s", backend, o, kms)
			}
		}
	})
}
