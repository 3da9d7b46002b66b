package writer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/writer"
)

// kmsKeyID is the run's KMS key, known to MinIO's and RGW's KMS.
func kmsKeyID(t *testing.T) string { t.Helper(); return s3test.KMSKeyID(t) }

// sseExpected is what each test server does with each mode, as measured (the probe reports
// the same): honoured (the HEAD shows it), or ignored (200, and the HEAD shows no encryption).
// "" for a server not known here: either is accepted.
func sseExpected(server string, mode store.SSEType) string {
	switch server {
	case s3test.VersityGW:
		return "ignored" // the gateway stores no encryption and drops the headers
	case s3test.MinIO:
		return "honoured" // with its built-in KMS (MINIO_KMS_SECRET_KEY); SSE-C over TLS
	case s3test.Ceph:
		if mode == store.SSES3 {
			return "ignored" // RGW 16.2 has no SSE-S3: AES256 is accepted and not applied
		}
		return "honoured" // the testing KMS backend; SSE-C
	}
	return ""
}

// sseModes are the modes the integration tests ask for.
func sseModes(t *testing.T, ssecKey []byte) []struct {
	name string
	opt  func(*writer.Options)
	want store.Encryption
} {
	kms := kmsKeyID(t)
	return []struct {
		name string
		opt  func(*writer.Options)
		want store.Encryption
	}{
		{"SSE-S3", func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSES3} }, store.Encryption{Type: store.SSES3}},
		{"SSE-KMS", func(o *writer.Options) {
			o.Encryption = store.Encryption{Type: store.SSEKMS, KMSKeyID: kms, KMSContext: map[string]string{"app": "safeput"}, BucketKey: false}
		}, store.Encryption{Type: store.SSEKMS, KMSKeyID: kms}},
		{"SSE-C", func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: ssecKey} }, store.Encryption{Type: store.SSEC, CustomerKeyMD5: store.CustomerKey(ssecKey).MD5()}},
	}
}

// mustBeGoneAfterSSEFailure checks a write that failed because the encryption was not applied:
// Compatibility coded EncryptionNotApplied, nothing said to be left, and no object or upload.
func mustBeGoneAfterSSEFailure(t *testing.T, env testkit.Env, key string, err error) {
	t.Helper()
	var e *sperrors.Error
	if !errors.As(err, &e) || e.Kind != sperrors.Compatibility || e.Code != sperrors.CodeEncryptionNotApplied {
		t.Fatalf("err %v, want Compatibility coded %s", err, sperrors.CodeEncryptionNotApplied)
	}
	if e.ObjectLeft || !strings.Contains(err.Error(), "object was deleted") {
		t.Errorf("the error does not say the object was deleted: %v", err)
	}
	if s3test.Exists(t, env.Srv, env.Bucket, key) {
		t.Fatal("the plaintext object is still at the key")
	}
	if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ups) != 0 {
		t.Fatalf("incomplete uploads left: %v", ups)
	}
}

// rawGet reads bucket/key with the raw client, with the SSE-C key when given.
func rawGet(srv s3test.Server, bucket, key string, ssec []byte) ([]byte, *s3.GetObjectOutput, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if ssec != nil {
		k := store.CustomerKey(ssec)
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(base64.StdEncoding.EncodeToString(ssec)), aws.String(k.MD5())
	}
	out, err := srv.RawClient().GetObject(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return b, out, err
}

// TestEncryptionOnServers writes with each encryption mode, single PUT and multipart, through
// both adapters on every server over TLS (MinIO takes SSE-C only over TLS). Where the server
// honours the mode the write lands, strongly verified, Result.Encryption is what was asked, and
// an independent read (with the key for SSE-C; without it refused) gives the bytes and the same
// encryption. Where the server ignores it, the write fails EncryptionNotApplied and the
// plaintext object is gone.
func TestEncryptionOnServers(t *testing.T) {
	testkit.ForEachTLS(t, func(t *testing.T, env testkit.Env) {
		ssecKey := s3test.RandomBytes(32)
		for _, m := range sseModes(t, ssecKey) {
			for _, size := range []int{3 << 20, 12 << 20} {
				t.Run(fmt.Sprintf("%s/%dMiB", m.name, size>>20), func(t *testing.T) {
					key := fmt.Sprintf("sse-%s-%d", m.name, size)
					data := s3test.RandomBytes(size)
					w, err := writer.New(context.Background(), env.Store, env.Bucket, key, func(o *writer.Options) { o.Profile = env.Profile(); o.PartSize = 5 << 20; o.Threshold = 5 << 20 }, m.opt)
					if err != nil {
						t.Fatal(err)
					}
					res, err := closeWith(w, data)
					expect := sseExpected(env.Server, m.want.Type)
					if err != nil {
						t.Logf("%s %s %s: %v", env.Server, env.Adapter, m.name, err)
						if expect == "honoured" {
							t.Fatalf("%s honours %s, but the write failed: %v", env.Server, m.name, err)
						}
						mustBeGoneAfterSSEFailure(t, env, key, err)
						return
					}
					if expect == "ignored" {
						t.Fatalf("%s ignores %s, but the write landed reporting %s", env.Server, m.name, res.Encryption)
					}
					t.Logf("%s %s %s: landed, the store reports %s, verified %s", env.Server, env.Adapter, m.name, res.Encryption, res.Verified)
					if m.want.Unmet(res.Encryption) != "" || !res.VerifiedStrong {
						t.Fatalf("Result.Encryption %s (verified %s), want %s, strongly verified", res.Encryption, res.Verified, m.want)
					}
					var ssec []byte
					if m.want.Type == store.SSEC {
						ssec = ssecKey
						if _, _, err := rawGet(env.Srv, env.Bucket, key, nil); err == nil {
							t.Fatal("the SSE-C object was read without its key")
						}
					}
					got, out, err := rawGet(env.Srv, env.Bucket, key, ssec)
					if err != nil || !bytes.Equal(got, data) {
						t.Fatalf("independent read: %d bytes, equal %v, err %v", len(got), bytes.Equal(got, data), err)
					}
					if string(out.ServerSideEncryption) != string(res.Encryption.Type) && m.want.Type != store.SSEC ||
						m.want.Type == store.SSEC && aws.ToString(out.SSECustomerKeyMD5) != m.want.CustomerKeyMD5 {
						t.Fatalf("the independent read reports %q / key MD5 %q, the Result %s", out.ServerSideEncryption, aws.ToString(out.SSECustomerKeyMD5), res.Encryption)
					}
				})
			}
		}
	})
}

// TestWireSSEStripped: a gateway in front of the store drops the server-side encryption headers
// (the fault proxy's StripSSE on every request) and the store answers 200 with a plaintext
// object. Through both adapters on every server over TLS, for each mode, single PUT and
// multipart: the write fails EncryptionNotApplied, naming what was asked and what the store
// reported, and the plaintext object is gone.
func TestWireSSEStripped(t *testing.T) {
	testkit.ForEachTLS(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 38)
		proxy.SetRules(faultproxy.Rule{Op: faultproxy.OpAny, Fault: faultproxy.Fault{Kind: faultproxy.StripSSE}})
		ssecKey := s3test.RandomBytes(32)
		for _, m := range sseModes(t, ssecKey) {
			for _, size := range []int{3 << 20, 12 << 20} {
				t.Run(fmt.Sprintf("%s/%dMiB", m.name, size>>20), func(t *testing.T) {
					key := fmt.Sprintf("wire-sse-%s-%d", m.name, size)
					data := s3test.RandomBytes(size)
					w, err := writer.New(context.Background(), st, env.Bucket, key, func(o *writer.Options) {
						o.Profile = env.Profile()
						o.PartSize = 5 << 20
						o.Threshold = 5 << 20
						o.Retry = noHangPolicy()
					}, m.opt)
					if err != nil {
						t.Fatal(err)
					}
					res, err := closeWith(w, data)
					if err == nil {
						t.Fatalf("the write landed though the gateway dropped the encryption headers; the store reports %s", res.Encryption)
					}
					t.Logf("%s %s %s: %v", env.Server, env.Adapter, m.name, err)
					mustBeGoneAfterSSEFailure(t, env, key, err)
					if !strings.Contains(err.Error(), "asked for "+m.want.String()) || !strings.Contains(err.Error(), "the store reports none") {
						t.Errorf("the error does not name what was asked and what the store reported: %v", err)
					}
				})
			}
		}
		if proxy.Stats().Injected[faultproxy.StripSSE] == 0 {
			t.Fatal("the proxy stripped nothing")
		}
	})
}

// TestRecoverSSECOnServers: a journal record of an SSE-C write whose Complete's answer was lost
// (the object landed; the record still intends it) is settled by Recover through both adapters
// on every server that honours SSE-C: without the key the record fails, naming the key's MD5,
// and is kept; with it (among others) the HEAD with the key proves the object landed.
func TestRecoverSSECOnServers(t *testing.T) {
	testkit.ForEachTLS(t, func(t *testing.T, env testkit.Env) {
		if sseExpected(env.Server, store.SSEC) != "honoured" {
			t.Skipf("%s does not honour SSE-C", env.Server)
		}
		key := s3test.RandomBytes(32)
		data := s3test.RandomBytes(12 << 20)
		w, err := writer.New(context.Background(), env.Store, env.Bucket, "recover-ssec", func(o *writer.Options) {
			o.Profile = env.Profile()
			o.PartSize = 5 << 20
			o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: key}
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := closeWith(w, data)
		if err != nil {
			t.Fatal(err)
		}
		j := newJournal(t)
		id := journal.ID{Endpoint: endpointID, Bucket: env.Bucket, Key: "recover-ssec", UploadID: res.UploadID}
		if err := j.Begin(journal.Record{ID: id, PartSize: 5 << 20, SourceSize: int64(len(data)), ChecksumAlgorithm: string(res.Checksum.Algorithm),
			SSE: string(store.SSEC), SSECustomerKeyMD5: store.CustomerKey(key).MD5()}); err != nil {
			t.Fatal(err)
		}
		o := journal.Object{Size: res.Size, ChecksumAlgorithm: string(res.Checksum.Algorithm), Checksum: res.Checksum.Value}
		if res.Verified == "etag-md5" {
			o.ETag = res.ETag
		}
		if err := j.Intend(id, o); err != nil {
			t.Fatal(err)
		}
		if err := j.Release(id); err != nil {
			t.Fatal(err)
		}
		opts := writer.RecoverOptions{Endpoint: endpointID, Settle: -1}
		rep, err := writer.Recover(context.Background(), env.Store, j.Path(), opts)
		if err != nil || len(rep.Uploads) != 1 || rep.Uploads[0].Outcome != writer.RecoverFailed ||
			!strings.Contains(fmt.Sprint(rep.Uploads[0].Err), store.CustomerKey(key).MD5()) {
			t.Fatalf("without the key: %+v, %v; want failed naming the key's MD5", rep, err)
		}
		opts.SSECustomerKeys = [][]byte{s3test.RandomBytes(32), key}
		rep, err = writer.Recover(context.Background(), env.Store, j.Path(), opts)
		if err != nil || len(rep.Uploads) != 1 || rep.Uploads[0].Outcome != writer.RecoverLanded {
			t.Fatalf("with the key: %+v, %v; want landed", rep, err)
		}
	})
}
