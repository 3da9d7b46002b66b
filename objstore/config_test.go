package safeobjstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/encrypt"
	"github.com/thanos-io/objstore/providers/s3"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"

	safeobjstore "github.com/safeput/safeput/objstore"
)

// TestRefused: what safeput cannot honour for writes fails construction, naming the setting.
func TestRefused(t *testing.T) {
	base := "endpoint: 127.0.0.1:9\ninsecure: true\nbucket: b\naccess_key: k\nsecret_key: s\n"
	for _, tc := range []struct {
		name, yaml, want string
		adapter          safeobjstore.Adapter
	}{
		{"sse unknown type", "sse_config:\n  type: SSE-X\n", "sse_config", safeobjstore.MinioGo},
		{"sse-c key file missing", "sse_config:\n  type: SSE-C\n  encryption_key: /nonexistent/key\n", "encryption_key", safeobjstore.AWSSDK},
		{"storage class", "put_user_metadata:\n  X-Amz-Storage-Class: STANDARD_IA\n", "X-Amz-Storage-Class", safeobjstore.MinioGo},
		{"header as metadata", "put_user_metadata:\n  Cache-Control: no-cache\n", "Cache-Control", safeobjstore.MinioGo},
		{"amz header as metadata", "put_user_metadata:\n  X-Amz-Acl: private\n", "X-Amz-Acl", safeobjstore.AWSSDK},
		{"disable multipart", "disable_multipart: true\n", "disable_multipart", safeobjstore.MinioGo},
		{"signature v2 on aws", "signature_version2: true\n", "signature_version2", safeobjstore.AWSSDK},
		{"trace on aws", "trace:\n  enable: true\n", "trace.enable", safeobjstore.AWSSDK},
		{"virtual-hosted on minio-go", "bucket_lookup_type: virtual-hosted\n", "virtual-hosted", safeobjstore.MinioGo},
		{"unknown adapter", "", "unknown adapter", "s4"},
		// objstore's own validation still applies.
		{"secret without key", "endpoint: 127.0.0.1:9\nsecret_key: s\n", "access_key", safeobjstore.MinioGo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := base + tc.yaml
			if tc.name == "secret without key" {
				conf = tc.yaml
			}
			_, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(conf), "test", nil, safeobjstore.WithAdapter(tc.adapter))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewBucket: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestHonoured: settings safeput maps are accepted by both adapters.
func TestHonoured(t *testing.T) {
	conf := `endpoint: 127.0.0.1:9
insecure: true
bucket: b
region: eu-west-1
sts_endpoint: https://sts.example.com
part_size: 8388608
max_retries: 5
send_content_md5: false
bucket_lookup_type: path
put_user_metadata:
  team: storage
  X-Amz-Meta-Origin: thanos
http_config:
  idle_conn_timeout: 30s
  response_header_timeout: 10s
  insecure_skip_verify: true
  tls_config:
    server_name: s3.example.com
`
	for _, a := range []safeobjstore.Adapter{safeobjstore.MinioGo, safeobjstore.AWSSDK} {
		if _, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(conf), "test", nil, safeobjstore.WithAdapter(a)); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	if _, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(conf+"signature_version2: true\ntrace:\n  enable: true\n"), "test", nil); err != nil {
		t.Errorf("minio-go with signature v2 and tracing: %v", err)
	}
}

// TestSSEConfig: objstore's sse_config (Thanos' shape) is accepted by both adapters for each
// type, and an SSE-C key file that is not 32 bytes fails construction naming the setting,
// without printing the file.
func TestSSEConfig(t *testing.T) {
	dir := t.TempDir()
	good, short := filepath.Join(dir, "key"), filepath.Join(dir, "short")
	if err := os.WriteFile(good, bytes.Repeat([]byte{7}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := "endpoint: 127.0.0.1:9\ninsecure: true\nbucket: b\naccess_key: k\nsecret_key: s\n"
	for _, a := range []safeobjstore.Adapter{safeobjstore.MinioGo, safeobjstore.AWSSDK} {
		for _, sse := range []string{
			"sse_config:\n  type: SSE-S3\n",
			"sse_config:\n  type: SSE-KMS\n  kms_key_id: k1\n  kms_encryption_context:\n    app: thanos\n",
			"sse_config:\n  type: SSE-C\n  encryption_key: " + good + "\n",
		} {
			opts := []safeobjstore.Option{safeobjstore.WithAdapter(a)}
			if strings.Contains(sse, "SSE-C") {
				// The endpoint is plain http: an SSE-C key goes there only when allowed by name.
				_, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(base+sse), "test", nil, opts...)
				if err == nil || !strings.Contains(err.Error(), "AllowSSECOverHTTP") {
					t.Errorf("%s %q over plain http without the opt-in: %v, want a refusal naming AllowSSECOverHTTP", a, sse, err)
				}
				opts = append(opts, safeobjstore.WithUploaderOptions(func(o *writer.Options) { o.AllowSSECOverHTTP = true }))
			}
			if _, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(base+sse), "test", nil, opts...); err != nil {
				t.Errorf("%s %q: %v", a, sse, err)
			}
		}
		_, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(base+"sse_config:\n  type: SSE-C\n  encryption_key: "+short+"\n"), "test", nil, safeobjstore.WithAdapter(a))
		if err == nil || !strings.Contains(err.Error(), "encryption_key") || strings.Contains(err.Error(), "0123456789") {
			t.Errorf("%s: a 10-byte key file: %v, want an error naming encryption_key (and not the key)", a, err)
		}
	}
}

// TestErrorPredicates: objstore's predicates answer for safeput's classified errors as for
// minio-go's.
func TestErrorPredicates(t *testing.T) {
	bkt, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte("endpoint: 127.0.0.1:9\ninsecure: true\nbucket: b\n"), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	denied := sperrors.Classify(&store.ResponseError{Op: "PutObject", StatusCode: 403, Code: "AccessDenied"})
	headDenied := sperrors.Classify(&store.ResponseError{Op: "HeadObject", StatusCode: 403})
	missing := sperrors.Classify(&store.ResponseError{Op: "GetObject", StatusCode: 404, Code: "NoSuchKey"})
	other := sperrors.Classify(&store.ResponseError{Op: "PutObject", StatusCode: 403, Code: "SignatureDoesNotMatch"})
	minioDenied := minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403}
	for _, tc := range []struct {
		err             error
		denied, missing bool
	}{
		{denied, true, false},
		{fmt.Errorf("flush: %w", denied), true, false},
		{headDenied, true, false},
		{missing, false, true},
		{other, false, false},
		{minioDenied, true, false},
		{errors.New("boom"), false, false},
	} {
		if got := bkt.IsAccessDeniedErr(tc.err); got != tc.denied {
			t.Errorf("IsAccessDeniedErr(%v) = %v", tc.err, got)
		}
		if got := bkt.IsObjNotFoundErr(tc.err); got != tc.missing {
			t.Errorf("IsObjNotFoundErr(%v) = %v", tc.err, got)
		}
	}
}

// TestEnvironmentCredentials: empty keys in the YAML mean objstore's chain (here the
// environment), not anonymous requests, through both adapters. Not parallel: it sets the
// environment.
func TestEnvironmentCredentials(t *testing.T) {
	testkit.ForEachSerial(t, func(t *testing.T, env testkit.Env) {
		t.Setenv("AWS_ACCESS_KEY_ID", env.Srv.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", env.Srv.SecretKey)
		t.Setenv("AWS_SESSION_TOKEN", "")
		conf := fmt.Sprintf("endpoint: %s\ninsecure: true\nbucket: %s\nregion: %s\nbucket_lookup_type: path\n",
			strings.TrimPrefix(env.Srv.Endpoint, "http://"), env.Bucket, env.Srv.Region)
		bkt, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte(conf), "test", nil, safeobjstore.WithAdapter(adapter(env)))
		if err != nil {
			t.Fatal(err)
		}
		data := payload(1000, 4)
		if err := bkt.Upload(context.Background(), "env-creds", bytes.NewReader(data)); err != nil {
			t.Fatalf("Upload with the environment's keys: %v", err)
		}
		readBack(t, bkt, "env-creds", data)
	})
}

// TestContextSSERefused: Cortex's per-request SSE is refused by Upload, not dropped; a plain
// context is not mistaken for one.
func TestContextSSERefused(t *testing.T) {
	bkt, err := safeobjstore.NewBucket(log.NewNopLogger(), []byte("endpoint: 127.0.0.1:9\ninsecure: true\nbucket: b\naccess_key: k\nsecret_key: s\n"), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := s3.ContextWithSSEConfig(context.Background(), encrypt.NewSSE())
	err = bkt.Upload(ctx, "k", strings.NewReader("x"))
	if sperrors.KindOf(err) != sperrors.Permanent || !strings.Contains(err.Error(), "ContextWithSSEConfig") {
		t.Fatalf("Upload with a context SSE: %v, want Permanent naming ContextWithSSEConfig", err)
	}
	// A plain context goes to the (unreachable) store: a transport error, not the SSE refusal.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := bkt.Upload(ctx, "k", strings.NewReader("x")); err == nil || strings.Contains(err.Error(), "ContextWithSSEConfig") {
		t.Fatalf("Upload with a plain context: %v", err)
	}
}
