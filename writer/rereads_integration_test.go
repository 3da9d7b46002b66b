package writer_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// TestCompleteChecksTheObjectChecksum is why Complete's answer may stand for the HEAD
// (writer.SaveRereads): on the servers that check checksums, Complete refuses to commit against a
// full-object checksum other than the one it computed, and its answer carries the one it
// computed, sent or not. Ceph RGW, which checks none, answers none, so its writes keep the HEAD.
func TestCompleteChecksTheObjectChecksum(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx := context.Background()
		const alg = store.ChecksumCRC32C
		bodies := [][]byte{s3test.RandomBytes(5 << 20), s3test.RandomBytes(1000)}
		full, _ := integrity.Sum(alg, append(append([]byte{}, bodies[0]...), bodies[1]...))
		wrong, _ := integrity.Sum(alg, []byte("another object"))
		complete := func(key string, sent store.Checksum) (*store.CompleteMultipartUploadOutput, error) {
			cr, err := env.Store.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: env.Bucket, Key: key, ChecksumAlgorithm: alg, ChecksumType: store.ChecksumTypeFullObject})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = env.Store.AbortMultipartUpload(context.Background(), &store.AbortMultipartUploadInput{Bucket: env.Bucket, Key: key, UploadID: cr.UploadID})
			})
			var parts []store.CompletedPart
			for i, b := range bodies {
				sum, _ := integrity.Sum(alg, b)
				c := store.Checksum{Algorithm: alg, Value: sum}
				out, err := env.Store.UploadPart(ctx, &store.UploadPartInput{Bucket: env.Bucket, Key: key, UploadID: cr.UploadID, PartNumber: int32(i + 1), Body: bytes.NewReader(b), ContentLength: int64(len(b)), Checksum: c})
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, store.CompletedPart{PartNumber: int32(i + 1), ETag: out.ETag, Checksum: c})
			}
			return env.Store.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{
				Bucket: env.Bucket, Key: key, UploadID: cr.UploadID, Parts: parts,
				ChecksumType: store.ChecksumTypeFullObject, FullObjectChecksum: sent,
			})
		}

		_, err := complete("wrong", store.Checksum{Algorithm: alg, Value: wrong})
		out, err2 := complete("unsent", store.Checksum{})
		if err2 != nil {
			t.Fatal(err2)
		}
		if env.Srv.IgnoresChecksums() {
			if got := out.Checksums.Get(alg); got != "" {
				t.Fatalf("Complete answered checksum %q; this server was known to answer none, so its writes keep the HEAD", got)
			}
			return
		}
		if err == nil || sperrors.KindOf(err) != sperrors.Integrity {
			t.Fatalf("Complete with a wrong full-object checksum: %v (kind %v), want a refusal classified Integrity", err, sperrors.KindOf(err))
		}
		if s3test.Exists(t, env.Srv, env.Bucket, "wrong") {
			t.Fatal("Complete refused, yet an object is at the key")
		}
		if got := out.Checksums.Get(alg); got != full {
			t.Fatalf("Complete answered checksum %q, want the object's %q, computed by the server", got, full)
		}
	})
}

// counted counts the HEADs and listings a write sends through its store.
type counted struct {
	store.Store
	heads, listings atomic.Int32
}

func (c *counted) Unwrap() store.Store { return c.Store }

func (c *counted) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	c.heads.Add(1)
	return c.Store.HeadObject(ctx, in)
}

func (c *counted) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	c.listings.Add(1)
	return c.Store.ListParts(ctx, in)
}

// TestRereadsLeftOutOnRealServers: at defaults, a multipart write to a server that checks part
// checksums sends neither ListParts nor HEAD, and ends verified by the store's checksum; Ceph
// RGW, whose receipts and Complete prove nothing, gets both. A single PUT then sends no HEAD on
// any server: its answer echoes the checksum of a store known to check it, or (Ceph RGW) its
// ETag is the MD5 of the body. With the saving off, every server gets every request.
func TestRereadsLeftOutOnRealServers(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		data := s3test.RandomBytes(3*part + 1)
		for _, saving := range []bool{true, false} {
			st := &counted{Store: env.Store}
			u, err := writer.NewUploader(st, func(o *writer.Options) {
				o.PartSize = part
				if !saving {
					o.Savings &^= writer.SaveRereads
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			key := "rereads/on"
			if !saving {
				key = "rereads/off"
			}
			res, err := u.Upload(context.Background(), env.Bucket, key, bytes.NewReader(data))
			if err != nil {
				t.Fatalf("saving %v: %v", saving, err)
			}
			if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("saving %v: read back %d bytes, not the %d written", saving, len(got), len(data))
			}
			want := int32(0)
			if !saving || env.Srv.IgnoresChecksums() {
				want = 1
			}
			if h, l := st.heads.Load(), st.listings.Load(); h != want || l != want {
				t.Fatalf("saving %v: %d HEADs and %d listings, want %d of each", saving, h, l, want)
			}
			if !res.VerifiedStrong || res.Verified == verify.MethodLengthOnly {
				t.Fatalf("saving %v: verified %q (strong %v)", saving, res.Verified, res.VerifiedStrong)
			}
			if !env.Srv.IgnoresChecksums() && res.Verified != verify.MethodCRC32C {
				t.Fatalf("saving %v: verified %q, want the store's crc32c", saving, res.Verified)
			}
			// A single PUT through the same Uploader, which now knows whether the store checks.
			small := s3test.RandomBytes(1000)
			headsBefore := st.heads.Load()
			res, err = u.Upload(context.Background(), env.Bucket, key+"-small", bytes.NewReader(small))
			if err != nil {
				t.Fatalf("saving %v, single PUT: %v", saving, err)
			}
			if got := s3test.ReadAll(t, env.Srv, env.Bucket, key+"-small"); !bytes.Equal(got, small) || res.Multipart || !res.VerifiedStrong {
				t.Fatalf("saving %v, single PUT: read back %d bytes, multipart %v, strong %v", saving, len(got), res.Multipart, res.VerifiedStrong)
			}
			wantPut, by, method := int32(0), "PutObject", verify.MethodCRC32C
			switch {
			case !saving:
				wantPut, by = 1, "HeadObject"
				if env.Srv.IgnoresChecksums() {
					method = verify.MethodETagMD5
				}
			case env.Srv.IgnoresChecksums():
				method = verify.MethodETagMD5
			}
			if h := st.heads.Load() - headsBefore; h != wantPut {
				t.Fatalf("saving %v, single PUT: %d HEADs, want %d", saving, h, wantPut)
			}
			if res.Verified != method || res.VerifiedBy != by {
				t.Fatalf("saving %v, single PUT: verified %q by %q, want %q by %q", saving, res.Verified, res.VerifiedBy, method, by)
			}
		}
	})
}

// TestPutChecksLikeParts is why a single PUT's answer may stand for its HEAD once the probe of a
// multipart write showed the store checks part checksums (putProves): the servers that refuse a
// part whose checksum is wrong refuse such a PutObject too, and keep nothing at the key.
func TestPutChecksLikeParts(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx := context.Background()
		const alg = store.ChecksumCRC32C
		body := s3test.RandomBytes(1000)
		wrong, _ := integrity.Sum(alg, []byte("another object"))
		_, err := env.Store.PutObject(ctx, &store.PutObjectInput{Bucket: env.Bucket, Key: "put-wrong", Body: bytes.NewReader(body),
			ContentLength: int64(len(body)), Checksum: store.Checksum{Algorithm: alg, Value: wrong}})
		if env.Srv.IgnoresChecksums() {
			return // its writes never learn that it checks: they keep the HEAD
		}
		if err == nil || sperrors.KindOf(err) != sperrors.Integrity {
			t.Fatalf("PutObject with a wrong checksum: %v (kind %v), want a refusal classified Integrity", err, sperrors.KindOf(err))
		}
		if s3test.Exists(t, env.Srv, env.Bucket, "put-wrong") {
			t.Fatal("PutObject refused, yet an object is at the key")
		}
	})
}
