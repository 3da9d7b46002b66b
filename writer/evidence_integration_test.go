package writer_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// streamTo writes data through a Writer (not replayable) with 5 MiB parts and no read-back, so
// only the store's own evidence can verify it.
func streamTo(t *testing.T, st store.Store, bucket, key string, data []byte, opts ...func(*writer.Options)) (*writer.Result, error) {
	t.Helper()
	return writeTo(t, st, bucket, key, data, append([]func(*writer.Options){func(o *writer.Options) { o.ReadBackLimit = 0 }}, opts...)...)
}

func landedOnServer(t *testing.T, env testkit.Env, key string, data []byte, res *writer.Result, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("write failed: %v", err)
	}
	if !res.VerifiedStrong || res.Verified == verify.MethodReadBack {
		t.Fatalf("verified %q (strong %v): want the store's own strong evidence", res.Verified, res.VerifiedStrong)
	}
	if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
	}
}

// TestRealServerDefaultsStrong: default settings end strongly verified by the store's evidence,
// single PUT and multipart, on every server and adapter; with no checksum at all, the MD5 and
// MD5-of-part-MD5s ETags still prove the object.
func TestRealServerDefaultsStrong(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		small, large := randomBytes(t, smallSize), randomBytes(t, largeSize)
		for _, c := range []struct {
			name string
			data []byte
		}{{"single", small}, {"multipart", large}} {
			res, err := streamTo(t, env.Store, env.Bucket, c.name, c.data)
			landedOnServer(t, env, c.name, c.data, res, err)
			t.Logf("%s %s: verified %s", env.Adapter, c.name, res.Verified)

			res, err = streamTo(t, env.Store, env.Bucket, c.name+"-md5", c.data, func(o *writer.Options) { o.NoChecksum = true })
			landedOnServer(t, env, c.name+"-md5", c.data, res, err)
			if res.Verified != verify.MethodETagMD5 {
				t.Fatalf("no checksum: verified %q, want %q", res.Verified, verify.MethodETagMD5)
			}
		}
	})
}

// TestRealServerCorruptBodyCaught: a body changed between safeput and the server, answered 200
// (its checksum header recomputed over the bad bytes, as if a middlebox stripped ours), never
// ends as a success with a wrong object at default settings.
func TestRealServerCorruptBodyCaught(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, size := range []int{smallSize, largeSize} {
			op := faulty.OpPutObject
			if size > 5*mib {
				op = faulty.OpUploadPart
			}
			data := randomBytes(t, size)
			key := "corrupt-" + op
			res, err := streamTo(t, faulty.New(env.Store, faulty.First(op, 1, faulty.FlipByte())), env.Bucket, key, data)
			if err == nil {
				landedOnServer(t, env, key, data, res, nil) // landed clean after a retry
				t.Logf("%s %s: landed clean after %v", env.Adapter, op, res.Failures)
				continue
			}
			t.Logf("%s %s: failed %v", env.Adapter, op, err)
			if !errors.Is(err, sperrors.Integrity) {
				t.Fatalf("%s: err %v, want Integrity or a clean landing", op, err)
			}
			if _, herr := env.Store.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: env.Bucket, Key: key}); herr == nil {
				t.Fatalf("%s: a failed write left an object at the key", op)
			}
		}
	})
}

// TestRealServerLostCompleteLanded: a Complete whose answer is lost (the retry finds the upload
// gone: NoSuchUpload on MinIO; the gateway may also answer the re-sent Complete as if it were
// the first) ends as an idempotent success, verified.
func TestRealServerLostCompleteLanded(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := randomBytes(t, largeSize)
		st := faulty.New(env.Store, faulty.First(faulty.OpCompleteMultipart, 1, faulty.DropResponse()))
		res, err := streamTo(t, st, env.Bucket, "lost", data)
		landedOnServer(t, env, "lost", data, res, err)
		t.Logf("%s: verified %s, already existed %v", env.Adapter, res.Verified, res.AlreadyExisted)
		if st.Count(faulty.DropResponse()) != 1 {
			t.Fatalf("the Complete answer was dropped %d times, want 1", st.Count(faulty.DropResponse()))
		}
	})
}
