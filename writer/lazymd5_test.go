package writer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// headWithoutChecksums is a store whose receipts echo the checksum sent but which reports no
// object checksum, in a HEAD or in Complete's answer: the one case where skipping a part's MD5
// on an echo does not pay.
type headWithoutChecksums struct{ store.Store }

func (s headWithoutChecksums) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	return completeSays{s.Store, ""}.CompleteMultipartUpload(ctx, in)
}

func (s headWithoutChecksums) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	out, err := s.Store.HeadObject(ctx, in)
	if out != nil {
		out.Checksums = store.Checksums{}
	}
	return out, err
}

// writeCounting streams data through u (5 MiB parts, one part in flight, so each part's receipt
// is back before the next is sent) and returns the Result and how many bytes were hashed by MD5.
func writeCounting(t *testing.T, u *writer.Uploader, key string, data []byte, opts ...func(*writer.Options)) (*writer.Result, int64, error) {
	t.Helper()
	opts = append([]func(*writer.Options){func(o *writer.Options) { o.PartSize = 5 * mib; o.Threshold = 5 * mib; o.Concurrency = 1 }}, opts...)
	w, err := u.New(context.Background(), unitBucket, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := closeWith(w, data)
	return res, writer.MD5Bytes(w), err
}

// TestMD5OnlyWhenNeeded: at defaults (no profile), the body's MD5 is computed only when the
// write may need it, and every write still ends strongly verified:
//   - a store that checks the checksum (it refuses the probe's wrong one), echoes it and reports
//     it on HEAD (MinIO, the gateway): no write hashes a multipart body, the first included;
//   - a store that ignores checksum headers (Ceph RGW 16.2): every byte, proved by the ETag;
//   - a store that checks and echoes but whose HEAD reports no checksum: the first write is read
//     back (past the read-back limit: the price of skipping the MD5s), later ones hash every byte;
//   - a store that echoes the checksum without checking it: every byte (checksumprobe_test.go).
func TestMD5OnlyWhenNeeded(t *testing.T) {
	small, large := randomBytes(t, smallSize), randomBytes(t, largeSize)

	t.Run("echoes, HEAD reports", func(t *testing.T) {
		mem := newMem(minioLike)
		u := newUploader(t, mem)
		res, hashed, err := writeCounting(t, u, "first", large)
		mustLand(t, mem, "first", large, res, err, verify.MethodCRC32C)
		if hashed != 0 {
			t.Fatalf("first multipart write hashed %d bytes by MD5, want none (the store refused the probe)", hashed)
		}
		res, hashed, err = writeCounting(t, u, "second", large)
		mustLand(t, mem, "second", large, res, err, verify.MethodCRC32C)
		if hashed != 0 {
			t.Fatalf("second write hashed %d bytes by MD5, want none (the HEAD reports the checksum)", hashed)
		}
		res, hashed, err = writeCounting(t, u, "single", small)
		mustLand(t, mem, "single", small, res, err, verify.MethodCRC32C)
		if hashed != 0 {
			t.Fatalf("single PUT hashed %d bytes by MD5, want none", hashed)
		}
		// A fresh Uploader's single PUT, whose receipt echoes: the endpoint is not yet known to
		// check, so its MD5 is taken, beside the request, and the answer's ETag proves it.
		res, hashed, err = writeCounting(t, newUploader(t, mem), "single2", small)
		mustLand(t, mem, "single2", small, res, err, verify.MethodETagMD5)
		if hashed != smallSize {
			t.Fatalf("first single PUT hashed %d bytes, want %d", hashed, smallSize)
		}
	})

	t.Run("ignores checksum headers", func(t *testing.T) {
		mem := newMem(cephLike)
		u := newUploader(t, mem)
		for _, key := range []string{"first", "second"} {
			res, hashed, err := writeCounting(t, u, key, large)
			mustLand(t, mem, key, large, res, err, verify.MethodETagMD5)
			if hashed != largeSize {
				t.Fatalf("%s write hashed %d bytes by MD5, want all %d", key, hashed, largeSize)
			}
		}
		res, hashed, err := writeCounting(t, u, "single", small)
		mustLand(t, mem, "single", small, res, err, verify.MethodETagMD5)
		if hashed != smallSize {
			t.Fatalf("single PUT hashed %d bytes, want %d", hashed, smallSize)
		}
	})

	t.Run("echoes, HEAD does not report", func(t *testing.T) {
		mem := newMem(minioLike)
		u := newUploader(t, headWithoutChecksums{mem})
		// The parts went without MD5s; the 1 MiB read-back limit is below the object.
		res, hashed, err := writeCounting(t, u, "first", large, func(o *writer.Options) { o.ReadBackLimit = mib })
		mustLand(t, mem, "first", large, res, err, verify.MethodReadBack)
		if hashed != 0 {
			t.Fatalf("first write hashed %d bytes by MD5, want none", hashed)
		}
		// The Uploader learned the HEAD reports nothing: the MD5-of-MD5s ETag proves the next.
		res, hashed, err = writeCounting(t, u, "second", large, func(o *writer.Options) { o.ReadBackLimit = mib })
		mustLand(t, mem, "second", large, res, err, verify.MethodETagMD5)
		if hashed != largeSize {
			t.Fatalf("second write hashed %d bytes by MD5, want all %d", hashed, largeSize)
		}
		// A single PUT's bytes are held through the HEAD: its MD5 is taken then, never a read-back.
		res, _, err = writeCounting(t, newUploader(t, headWithoutChecksums{mem}), "single", small, func(o *writer.Options) { o.ReadBackLimit = 0 })
		mustLand(t, mem, "single", small, res, err, verify.MethodETagMD5)
	})

	t.Run("echoes, HEAD does not report, read-back off", func(t *testing.T) {
		// Options.ReadBackLimit 0 forbids the read-back: the first write cannot be proved, fails
		// Unverifiable and its object is deleted; the Uploader's next write hashes its parts.
		mem := newMem(minioLike)
		u := newUploader(t, headWithoutChecksums{mem})
		_, _, err := writeCounting(t, u, "k", large, func(o *writer.Options) { o.ReadBackLimit = 0 })
		if e := mustBeUnverifiable(t, err); !strings.Contains(e.Message, "deleted") {
			t.Fatalf("message does not say the object was deleted: %s", e.Message)
		}
		mustBeAbsent(t, mem, "k")
		res, _, err := writeCounting(t, u, "k", large, func(o *writer.Options) { o.ReadBackLimit = 0 })
		mustLand(t, mem, "k", large, res, err, verify.MethodETagMD5)
	})

	t.Run("a file's parts", func(t *testing.T) {
		// From an io.ReaderAt: a part that needs its MD5 after the receipt re-reads its section.
		mem := newMem(cephLike)
		res, err := writer.Upload(context.Background(), mem, unitBucket, "file", strings.NewReader(string(large)),
			func(o *writer.Options) { o.PartSize = 5 * mib; o.Threshold = 5 * mib; o.ReadBackLimit = 0 })
		mustLand(t, mem, "file", large, res, err, verify.MethodETagMD5)
	})
}

// TestDefaultsVerifyWithoutMD5OnEchoingStores: on a store that echoes checksums and reports
// them on HEAD, a default Uploader's writes after the first are proved by the CRC and hash no
// byte by MD5, whatever the concurrency.
func TestDefaultsVerifyWithoutMD5OnEchoingStores(t *testing.T) {
	mem := newMem(memstore.Rules{})
	u := newUploader(t, mem)
	data := randomBytes(t, 4*largeSize)
	for i, key := range []string{"a", "b", "c"} {
		w, err := u.New(context.Background(), unitBucket, key, func(o *writer.Options) { o.PartSize = 5 * mib })
		if err != nil {
			t.Fatal(err)
		}
		res, err := closeWith(w, data)
		mustLand(t, mem, key, data, res, err, verify.MethodCRC32C)
		if hashed := writer.MD5Bytes(w); i > 0 && hashed != 0 {
			t.Fatalf("write %d hashed %d bytes by MD5, want none", i+1, hashed)
		}
	}
}
