package safeobjstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/go-kit/log"
	"github.com/thanos-io/objstore/providers/s3"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"

	safeobjstore "github.com/safeput/safeput/objstore"
)

// TestSSEConfigUpload: with sse_config SSE-KMS (the run's KMS key), Upload through both adapters
// on every server lands encrypted where the server honours it (MinIO, Ceph RGW: the HEAD reports
// aws:kms and that key, and objstore's Get reads it back), and fails EncryptionNotApplied where it
// does not (the gateway), leaving nothing at the key.
func TestSSEConfigUpload(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		kms := s3test.KMSKeyID(t)
		c := config(env, env.Srv.Endpoint)
		c.SSEConfig = s3.SSEConfig{Type: s3.SSEKMS, KMSKeyID: kms, KMSEncryptionContext: map[string]string{"app": "thanos"}}
		bkt, err := safeobjstore.NewBucketWithConfig(log.NewNopLogger(), c, "test", nil,
			safeobjstore.WithAdapter(adapter(env)), safeobjstore.WithUploaderOptions(func(o *writer.Options) { o.Profile = env.Profile() }))
		if err != nil {
			t.Fatal(err)
		}
		defer bkt.Close()
		data := payload(7<<20, 38)
		err = bkt.Upload(context.Background(), "sse/block", bytes.NewReader(data))
		if env.Server == s3test.VersityGW {
			var e *sperrors.Error
			if !errors.As(err, &e) || e.Code != sperrors.CodeEncryptionNotApplied {
				t.Fatalf("Upload on a server that ignores SSE-KMS: %v, want EncryptionNotApplied", err)
			}
			if s3test.Exists(t, env.Srv, env.Bucket, "sse/block") {
				t.Fatal("the plaintext object is still at the key")
			}
			return
		}
		if err != nil {
			t.Fatalf("Upload: %v", err)
		}
		head, err := env.Store.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: env.Bucket, Key: "sse/block"})
		if err != nil || (store.Encryption{Type: store.SSEKMS, KMSKeyID: kms}).Unmet(head.Encryption) != "" {
			t.Fatalf("HEAD reports %v (err %v), want aws:kms with key %s", head, err, kms)
		}
		rc, err := bkt.Get(context.Background(), "sse/block")
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Get: %d bytes, equal %v, err %v", len(got), bytes.Equal(got, data), err)
		}
	})
}
