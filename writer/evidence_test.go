package writer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"weak"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// Store personalities for the evidence paths, as the real servers behave at defaults.
var (
	minioLike = memstore.Rules{NoDefaultChecksum: true}                            // keeps only checksums it is sent
	cephLike  = memstore.Rules{IgnoreChecksumHeaders: true, EmptyCommitETag: true} // MD5 ETags, headers ignored
	refusing  = memstore.Rules{RejectChecksumHeaders: true}                        // 400 on any checksum header
	opaque    = memstore.Rules{IgnoreChecksumHeaders: true, OpaqueETags: true}     // nothing but length
	ignoring  = memstore.Rules{IgnoreChecksumHeaders: true}                        // MD5 ETags in every answer, headers ignored
)

const (
	mib        = 1 << 20
	smallSize  = 3 * mib  // one PutObject
	largeSize  = 12 * mib // three 5 MiB parts
	unitBucket = "b"
)

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// write streams data through a Writer (a non-replayable source) with 5 MiB parts.
func write(t *testing.T, st store.Store, key string, data []byte, opts ...func(*writer.Options)) (*writer.Result, error) {
	t.Helper()
	return writeTo(t, st, unitBucket, key, data, opts...)
}

func writeTo(t *testing.T, st store.Store, bucket, key string, data []byte, opts ...func(*writer.Options)) (*writer.Result, error) {
	t.Helper()
	opts = append([]func(*writer.Options){func(o *writer.Options) { o.PartSize = 5 * mib; o.Threshold = 5 * mib }}, opts...)
	w, err := writer.New(context.Background(), st, bucket, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return closeWith(w, data)
}

// writeWith is write through u, whose writes share what they learn.
func writeWith(t *testing.T, u *writer.Uploader, key string, data []byte, opts ...func(*writer.Options)) (*writer.Result, error) {
	t.Helper()
	opts = append([]func(*writer.Options){func(o *writer.Options) { o.PartSize = 5 * mib; o.Threshold = 5 * mib }}, opts...)
	w, err := u.New(context.Background(), unitBucket, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return closeWith(w, data)
}

func closeWith(w *writer.Writer, data []byte) (*writer.Result, error) {
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.Result(), nil
}

func newMem(r memstore.Rules) *memstore.Store {
	return memstore.New(memstore.WithBuckets(unitBucket), memstore.WithRules(r))
}

func mustLand(t *testing.T, mem *memstore.Store, key string, data []byte, res *writer.Result, err error, method verify.Method) {
	t.Helper()
	if err != nil {
		t.Fatalf("write failed: %v", err)
	}
	if res.Verified != method || !res.VerifiedStrong {
		t.Fatalf("verified %q (strong %v), want %q", res.Verified, res.VerifiedStrong, method)
	}
	got, ok := mem.Object(unitBucket, key)
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("object at the key is not the bytes written (present %v, %d bytes)", ok, len(got))
	}
}

func mustBeAbsent(t *testing.T, mem *memstore.Store, key string) {
	t.Helper()
	if _, ok := mem.Object(unitBucket, key); ok {
		t.Fatal("an object was left at the key after a failed write")
	}
	if ups := mem.Uploads(unitBucket); len(ups) != 0 {
		t.Fatalf("incomplete uploads left: %v", ups)
	}
}

func mustBeUnverifiable(t *testing.T, err error) *sperrors.Error {
	t.Helper()
	var e *sperrors.Error
	if !errors.As(err, &e) || e.Kind != sperrors.Integrity || e.Code != sperrors.CodeUnverifiable {
		t.Fatalf("err %v, want Integrity coded Unverifiable", err)
	}
	return e
}

// TestDefaultsStrongOnEveryStore: with default options, a single PUT and a multipart write end
// strongly verified on each store personality, by the cheapest evidence it offers (a fresh
// Uploader's single PUT: its answer's MD5 ETag, where the store's ETag is one).
func TestDefaultsStrongOnEveryStore(t *testing.T) {
	cases := []struct {
		name          string
		rules         memstore.Rules
		single, multi verify.Method
	}{
		{"aws-like", memstore.Rules{}, verify.MethodETagMD5, verify.MethodCRC32C},
		{"minio-like", minioLike, verify.MethodETagMD5, verify.MethodCRC32C},
		{"ceph-like", cephLike, verify.MethodETagMD5, verify.MethodETagMD5},
		// It keeps a CRC64NVME of its own, not the CRC32C offered at defaults: the MD5 ETag proves it.
		{"refusing", refusing, verify.MethodETagMD5, verify.MethodETagMD5},
		{"refusing, no checksum kept", memstore.Rules{RejectChecksumHeaders: true, NoDefaultChecksum: true}, verify.MethodETagMD5, verify.MethodETagMD5},
		{"opaque ETags, small enough to read back", opaque, verify.MethodReadBack, verify.MethodReadBack},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(c.rules)
			small, large := randomBytes(t, smallSize), randomBytes(t, largeSize)
			res, err := write(t, mem, "single", small)
			mustLand(t, mem, "single", small, res, err, c.single)
			res, err = write(t, mem, "multi", large)
			mustLand(t, mem, "multi", large, res, err, c.multi)
			if !res.Multipart || res.Parts != 3 {
				t.Fatalf("multipart %v with %d parts, want 3 parts", res.Multipart, res.Parts)
			}
		})
	}
}

// TestProfilePreferredChecksum: without Options.Checksum the writer sends the profile's preferred
// CRC (CRC32C under "minio") and verifies by it; an explicit Options.Checksum still wins.
func TestProfilePreferredChecksum(t *testing.T) {
	mem := newMem(minioLike)
	small, large := randomBytes(t, smallSize), randomBytes(t, largeSize)
	for _, c := range []struct {
		key  string
		data []byte
		opts []func(*writer.Options)
		want store.ChecksumAlgorithm
	}{
		{"single", small, []func(*writer.Options){func(o *writer.Options) { o.Profile = "minio" }}, store.ChecksumCRC32C},
		{"multi", large, []func(*writer.Options){func(o *writer.Options) { o.Profile = "minio" }}, store.ChecksumCRC32C},
		{"explicit", large, []func(*writer.Options){func(o *writer.Options) { o.Profile = "minio"; o.Checksum = store.ChecksumCRC64NVME }}, store.ChecksumCRC64NVME},
		{"aws", large, []func(*writer.Options){func(o *writer.Options) { o.Profile = "aws" }}, store.ChecksumCRC64NVME},
	} {
		res, err := write(t, mem, c.key, c.data, c.opts...)
		method := verify.Method(strings.ToLower(string(c.want)))
		if !res.Multipart {
			method = verify.MethodETagMD5 // the PUT's answer proved it; the checksum still went
		}
		mustLand(t, mem, c.key, c.data, res, err, method)
		if got := res.Checksum.Algorithm; got != c.want {
			t.Errorf("%s: full-object checksum %s, want %s", c.key, got, c.want)
		}
	}
}

// chunkReader returns at most n bytes per Read, so ReadFrom fills a part in many pieces.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestFillTimeCRC: a buffered part's CRC is taken piece by piece as its bytes arrive (Write in
// odd sizes, ReadFrom in odd chunks, a one-shot Write) and must equal the CRC of the whole part:
// the store checks every part's header against its body, and a retried part recomputes the CRC
// from the held bytes and must agree with the first.
func TestFillTimeCRC(t *testing.T) {
	data := randomBytes(t, largeSize+12345)
	for _, alg := range []store.ChecksumAlgorithm{store.ChecksumCRC64NVME, store.ChecksumCRC32C, store.ChecksumCRC32} {
		for _, how := range []string{"odd writes", "odd reads", "one write", "single put"} {
			t.Run(string(alg)+"/"+how, func(t *testing.T) {
				mem := newMem(memstore.Rules{})
				// Every part's first attempt fails once, so its retry's recomputed CRC is checked too.
				st := faulty.New(mem, faulty.Rule{Op: faulty.OpUploadPart, Times: 3, Fault: faulty.InternalError()},
					faulty.First(faulty.OpPutObject, 1, faulty.InternalError()))
				w, err := writer.New(context.Background(), st, unitBucket, "k", func(o *writer.Options) {
					o.Checksum = alg
					o.PartSize = 5 * mib
					o.Threshold = 5 * mib
					o.Retry = fastPolicy()
				})
				if err != nil {
					t.Fatal(err)
				}
				body := data
				switch how {
				case "odd writes":
					for rest, i := body, 0; len(rest) > 0; i++ {
						n := min(len(rest), 1+(i*7919)%70001)
						if _, err := w.Write(rest[:n]); err != nil {
							t.Fatal(err)
						}
						rest = rest[n:]
					}
				case "odd reads":
					if _, err := w.ReadFrom(chunkReader{bytes.NewReader(body), 9999}); err != nil {
						t.Fatal(err)
					}
				case "one write":
					if _, err := w.Write(body); err != nil {
						t.Fatal(err)
					}
				case "single put":
					body = data[:smallSize+7]
					if _, err := w.ReadFrom(chunkReader{bytes.NewReader(body), 4097}); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				res := w.Result()
				want, _ := integrity.Sum(alg, body)
				if res.Checksum.Algorithm != alg || res.Checksum.Value != want {
					t.Fatalf("result checksum %s %s, want %s %s", res.Checksum.Algorithm, res.Checksum.Value, alg, want)
				}
				method := verify.Method(strings.ToLower(string(alg)))
				if how == "single put" {
					method = verify.MethodETagMD5 // the PUT's answer; the checksum went with it, and the store checks it
				}
				mustLand(t, mem, "k", body, res, nil, method)
			})
		}
	}
}

// TestEmptyCommitETagNoted: a 200 PutObject or Complete answer without an ETag is judged by the
// HEAD, and the Result says the store's answer was empty.
func TestEmptyCommitETagNoted(t *testing.T) {
	mem := newMem(memstore.Rules{EmptyCommitETag: true})
	for _, size := range []int{smallSize, largeSize} {
		data := randomBytes(t, size)
		res, err := write(t, mem, "k", data)
		mustLand(t, mem, "k", data, res, err, verify.MethodCRC32C)
		if !strings.Contains(strings.Join(res.Notes, "\n"), "carried no ETag") {
			t.Fatalf("notes %q do not mention the empty answer", res.Notes)
		}
		if res.ETag == "" {
			t.Fatal("Result.ETag empty: the HEAD's ETag was not taken")
		}
	}
}

// headerCounter counts requests that carried a checksum header.
type headerCounter struct {
	store.Store
	withHeader atomic.Int32
}

func (h *headerCounter) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	if !in.Checksum.IsZero() {
		h.withHeader.Add(1)
	}
	return h.Store.PutObject(ctx, in)
}

func (h *headerCounter) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if in.ChecksumAlgorithm != store.ChecksumNone {
		h.withHeader.Add(1)
	}
	return h.Store.CreateMultipartUpload(ctx, in)
}

func newUploader(t *testing.T, st store.Store, opts ...func(*writer.Options)) *writer.Uploader {
	t.Helper()
	u, err := writer.NewUploader(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestRefusedHeaderLearned: a store that refuses the offered checksum header costs one retry,
// once per Uploader; its later writes do not offer it again. Another Uploader of the same store
// value, and each package-level shorthand call, learn it afresh: they share nothing.
func TestRefusedHeaderLearned(t *testing.T) {
	mem := newMem(memstore.Rules{RejectChecksumHeaders: true, NoDefaultChecksum: true})
	st := &headerCounter{Store: mem}
	u := newUploader(t, st)
	data := randomBytes(t, smallSize)
	res, err := writeWith(t, u, "first", data)
	mustLand(t, mem, "first", data, res, err, verify.MethodETagMD5)
	if !strings.Contains(strings.Join(res.Notes, "\n"), "refused") {
		t.Fatalf("notes %q do not say the header was refused", res.Notes)
	}
	if n := st.withHeader.Load(); n != 1 {
		t.Fatalf("%d requests offered the header on the first write, want 1", n)
	}
	large := randomBytes(t, largeSize)
	res, err = writeWith(t, u, "second", large)
	mustLand(t, mem, "second", large, res, err, verify.MethodETagMD5)
	if n := st.withHeader.Load(); n != 1 {
		t.Fatalf("the refused header was offered again by the same Uploader (%d requests)", n)
	}

	// A multipart write is the first of another Uploader: refused at Create, created without.
	res, err = writeWith(t, newUploader(t, st), "multi", large)
	mustLand(t, mem, "multi", large, res, err, verify.MethodETagMD5)
	if n := st.withHeader.Load(); n != 2 {
		t.Fatalf("%d requests offered the header after a second Uploader's first write, want 2", n)
	}

	// Each shorthand call is a fresh Uploader: each offers the header once.
	for i := range 2 {
		res, err = write(t, st, fmt.Sprint("short", i), data)
		mustLand(t, mem, fmt.Sprint("short", i), data, res, err, verify.MethodETagMD5)
	}
	if n := st.withHeader.Load(); n != 4 {
		t.Fatalf("%d requests offered the header after two shorthand writes, want 4", n)
	}
}

// TestNothingProvesIt: on a store that keeps no checksum and makes opaque ETags, an object too
// large to read back fails Unverifiable and is deleted; Options.AllowWeakVerification accepts it on
// length and says what was missing.
func TestNothingProvesIt(t *testing.T) {
	for _, size := range []int{smallSize, largeSize} {
		mem := newMem(opaque)
		data := randomBytes(t, size)
		_, err := write(t, mem, "k", data, func(o *writer.Options) { o.ReadBackLimit = 0 })
		e := mustBeUnverifiable(t, err)
		if !strings.Contains(e.Message, "HEAD reported no full-object CRC32C") || !strings.Contains(e.Message, "was deleted") {
			t.Fatalf("message does not say what was missing and what was done: %s", e.Message)
		}
		mustBeAbsent(t, mem, "k")

		res, err := write(t, mem, "k", data, func(o *writer.Options) { o.ReadBackLimit = 0; o.AllowWeakVerification = true })
		if err != nil {
			t.Fatal(err)
		}
		if res.Verified != verify.MethodLengthOnly || res.VerifiedStrong || len(res.Unproven) == 0 {
			t.Fatalf("weak acceptance not reported: verified %q strong %v unproven %q", res.Verified, res.VerifiedStrong, res.Unproven)
		}
		if got, _ := mem.Object(unitBucket, "k"); !bytes.Equal(got, data) {
			t.Fatal("object differs")
		}
	}
}

// TestReplayableReadsBackAnySize: Upload of a replayable source reads back past the limit.
func TestReplayableReadsBackAnySize(t *testing.T) {
	mem := newMem(opaque)
	data := randomBytes(t, largeSize)
	res, err := writer.Upload(context.Background(), mem, unitBucket, "k", bytes.NewReader(data),
		func(o *writer.Options) { o.PartSize = 5 * mib; o.ReadBackLimit = 0 })
	mustLand(t, mem, "k", data, res, err, verify.MethodReadBack)
}

// TestCorruptBodyCaughtAtDefaults: a body changed in flight whose store answers 200 (its
// checksum recomputed over the bad bytes, as a middlebox that strips it would leave it) is never
// a success with a wrong object, on any store personality.
func TestCorruptBodyCaughtAtDefaults(t *testing.T) {
	for _, rules := range []struct {
		name string
		r    memstore.Rules
	}{{"aws-like", memstore.Rules{}}, {"minio-like", minioLike}, {"ceph-like", cephLike}, {"refusing", memstore.Rules{RejectChecksumHeaders: true, NoDefaultChecksum: true}}} {
		for _, fault := range []faulty.Fault{faulty.FlipByte(), faulty.Truncate()} {
			for _, size := range []int{smallSize, largeSize} {
				t.Run(rules.name+"/"+fault.String()+"/"+strconv.Itoa(size/mib)+"MiB", func(t *testing.T) {
					mem := newMem(rules.r)
					op := faulty.OpPutObject
					if size > 5*mib {
						op = faulty.OpUploadPart
					}
					st := faulty.New(mem, faulty.Always(op, fault))
					data := randomBytes(t, size)
					_, err := write(t, st, "k", data)
					if !errors.Is(err, sperrors.Integrity) {
						t.Fatalf("err %v, want Integrity", err)
					}
					mustBeAbsent(t, mem, "k")

					// A replayable source, corrupted once: lands clean on a later attempt.
					st = faulty.New(mem, faulty.First(op, 1, fault))
					res, err := writer.Upload(context.Background(), st, unitBucket, "k", bytes.NewReader(data), func(o *writer.Options) { o.PartSize = 5 * mib })
					if err != nil {
						var e *sperrors.Error
						if !errors.As(err, &e) || e.Kind != sperrors.Integrity {
							t.Fatalf("replayable upload: %v, want success or Integrity", err)
						}
						mustBeAbsent(t, mem, "k")
						return
					}
					mustLand(t, mem, "k", data, res, nil, res.Verified)
				})
			}
		}
	}
}

// TestLostCompleteJudgedOnEvidence: a Complete whose answer was lost (the retry finds the upload
// gone) ends as an idempotent success when the HEAD proves the object, by checksum or by the
// MD5-of-part-MD5s ETag; when nothing proves it, Unverifiable (deleted without create-only,
// left in place with it, since it may be another writer's).
func TestLostCompleteJudgedOnEvidence(t *testing.T) {
	lost := faulty.First(faulty.OpCompleteMultipart, 1, faulty.DropResponse())
	data := randomBytes(t, largeSize)
	for _, c := range []struct {
		name   string
		r      memstore.Rules
		method verify.Method
	}{{"minio-like", minioLike, verify.MethodCRC32C}, {"ceph-like", cephLike, verify.MethodETagMD5}} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(c.r)
			res, err := write(t, faulty.New(mem, lost), "k", data)
			mustLand(t, mem, "k", data, res, err, c.method)
			if !res.AlreadyExisted {
				t.Fatal("a landed lost answer is not reported as already existing")
			}
			mem2 := newMem(c.r)
			res, err = write(t, faulty.New(mem2, lost), "k", data, func(o *writer.Options) { o.CreateOnly = true })
			mustLand(t, mem2, "k", data, res, err, c.method)
		})
	}
	t.Run("nothing proves it", func(t *testing.T) {
		mem := newMem(opaque)
		_, err := write(t, faulty.New(mem, lost), "k", data, func(o *writer.Options) { o.ReadBackLimit = 0 })
		if e := mustBeUnverifiable(t, err); !strings.Contains(e.Message, "deleted") {
			t.Fatalf("message does not say the object was deleted: %s", e.Message)
		}
		mustBeAbsent(t, mem, "k")

		_, err = write(t, faulty.New(mem, lost), "k", data, func(o *writer.Options) { o.ReadBackLimit = 0; o.CreateOnly = true })
		if e := mustBeUnverifiable(t, err); !strings.Contains(e.Message, "left in place") {
			t.Fatalf("message does not say the object was left: %s", e.Message)
		}
		if _, ok := mem.Object(unitBucket, "k"); !ok {
			t.Fatal("a create-only write deleted an object it could not prove was its own")
		}
	})
	t.Run("nothing landed", func(t *testing.T) {
		// The store says the upload is gone though it never committed: not a Precondition, but
		// an upload dropped before its commit (TestUploadVanished).
		mem := newMem(minioLike)
		gone := faulty.Response(404, "NoSuchUpload", "The specified upload does not exist.")
		_, err := write(t, faulty.New(mem, faulty.First(faulty.OpCompleteMultipart, 1, gone)), "k", data)
		if e := mustBeVanished(t, err, true); !strings.Contains(e.Message, "did not land") {
			t.Fatalf("err %v, want a failure saying the write did not land", err)
		}
		mustBeAbsent(t, mem, "k")
	})
	t.Run("a damaged part caught before Complete", func(t *testing.T) {
		// One part damaged on the way on a store that checks no checksum: its ETag is not its
		// MD5 while another part's is, so the write fails before Complete (which would be
		// refused here) and nothing lands.
		mem := newMem(cephLike)
		st := faulty.New(mem, faulty.Nth(faulty.OpUploadPart, 2, faulty.FlipByte()), faulty.Always(faulty.OpCompleteMultipart, faulty.Forbidden()))
		_, err := write(t, st, "k", data)
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Integrity || !strings.Contains(e.Message, "ETag (MD5)") {
			t.Fatalf("err %v; want Integrity naming the damaged part's ETag, before Complete", err)
		}
		if in := st.Injected(); len(in) != 1 {
			t.Fatalf("injected %v: Complete was sent", in)
		}
		mustBeAbsent(t, mem, "k")
		if ups := mem.Uploads(unitBucket); len(ups) != 0 {
			t.Fatalf("incomplete uploads left: %+v", ups)
		}
		// From an io.ReaderAt the part is sent again, and the same upload lands.
		mem = newMem(cephLike)
		res, err := writer.Upload(context.Background(), faulty.New(mem, faulty.Nth(faulty.OpUploadPart, 2, faulty.FlipByte())), unitBucket, "k",
			bytes.NewReader(data), func(o *writer.Options) { o.PartSize = 5 * mib; o.Threshold = 5 * mib })
		if err != nil {
			t.Fatal(err)
		}
		mustLand(t, mem, "k", data, res, err, res.Verified)
		if res.UploadAttempts != 1 || res.Failures[sperrors.Integrity] != 1 {
			t.Fatalf("upload attempts %d, failures %v; want the one part re-sent in the first attempt", res.UploadAttempts, res.Failures)
		}
	})
	t.Run("our own damaged commit", func(t *testing.T) {
		// Every part damaged on the way (the store answered with its real ETags, so nothing
		// before Complete can tell), then the Complete's answer lost: the object at the key is
		// the one our parts assembled, so it is ours, corrupt, and deleted; not another
		// writer's, left in place as a Precondition.
		for _, createOnly := range []bool{false, true} {
			mem := newMem(cephLike)
			st := faulty.New(mem, faulty.Always(faulty.OpUploadPart, faulty.FlipByte()), lost)
			_, err := write(t, st, "k", data, func(o *writer.Options) { o.CreateOnly = createOnly })
			var e *sperrors.Error
			if !errors.As(err, &e) || e.Kind != sperrors.Integrity || !strings.Contains(e.Message, "deleted") {
				t.Fatalf("create-only %v: err %v; want Integrity, the corrupt object deleted", createOnly, err)
			}
			mustBeAbsent(t, mem, "k")
		}
	})
	t.Run("a different object", func(t *testing.T) {
		mem := newMem(minioLike)
		other := randomBytes(t, largeSize)
		if _, err := write(t, mem, "k", other); err != nil {
			t.Fatal(err)
		}
		_, err := write(t, mem, "k", data, func(o *writer.Options) { o.CreateOnly = true })
		if !errors.Is(err, sperrors.Precondition) {
			t.Fatalf("err %v, want Precondition", err)
		}
		if got, _ := mem.Object(unitBucket, "k"); !bytes.Equal(got, other) {
			t.Fatal("the other writer's object was touched")
		}
	})
}

// TestLearnedMD5ETagsCatchCorruption: once a write on an endpoint matched its MD5 ETag, a part
// or PUT whose ETag differs from its MD5 is caught at the receipt and re-sent from the clean
// bytes, with no checksum and no read-back to help.
func TestLearnedMD5ETagsCatchCorruption(t *testing.T) {
	for _, c := range []struct {
		op    string
		size  int
		calls int // the op's calls in the first write
	}{{faulty.OpPutObject, smallSize, 1}, {faulty.OpUploadPart, largeSize, 3}} {
		t.Run(c.op, func(t *testing.T) {
			mem := newMem(memstore.Rules{IgnoreChecksumHeaders: true}) // MD5 ETags in every answer
			// One Uploader throughout (it keeps what its writes learned); the fault hits the
			// first body of the second write.
			st := faulty.New(mem, faulty.Nth(c.op, c.calls+1, faulty.FlipByte()))
			u := newUploader(t, st, func(o *writer.Options) { o.ReadBackLimit = 0 })
			first := randomBytes(t, c.size)
			res, err := writeWith(t, u, "first", first)
			mustLand(t, mem, "first", first, res, err, verify.MethodETagMD5)

			data := randomBytes(t, c.size)
			res, err = writeWith(t, u, "second", data)
			mustLand(t, mem, "second", data, res, err, verify.MethodETagMD5)
			if st.Count(faulty.FlipByte()) != 1 || res.Failures[sperrors.Integrity] < 1 {
				t.Fatalf("flips %d, integrity failures %d: the corrupt body was not caught at the receipt",
					st.Count(faulty.FlipByte()), res.Failures[sperrors.Integrity])
			}
		})
	}
}

// On a store that ignores checksum headers (the ceph profile), a create-only write whose body the
// store keeps damaged never leaves a wrong object: it lands byte-identical or fails with the key
// empty (the damaged object was this write's own, so it is removed).
func TestCreateOnlyDamagedBodyWhereChecksumsAreIgnored(t *testing.T) {
	for _, c := range []struct {
		op   string
		size int
	}{{faulty.OpPutObject, smallSize}, {faulty.OpUploadPart, largeSize}} {
		t.Run(c.op, func(t *testing.T) {
			data := randomBytes(t, c.size)
			mem := newMem(cephLike)
			st := faulty.New(mem, faulty.First(c.op, 1, faulty.FlipByte()))
			res, err := write(t, st, "k", data, func(o *writer.Options) { o.Profile = "ceph"; o.CreateOnly = true })
			if st.Count(faulty.FlipByte()) != 1 {
				t.Fatalf("%d flips, want 1", st.Count(faulty.FlipByte()))
			}
			if err == nil {
				mustLand(t, mem, "k", data, res, err, verify.MethodETagMD5)
				return
			}
			if sperrors.Classify(err).Kind != sperrors.Integrity {
				t.Fatalf("err %v, want success or Integrity", err)
			}
			mustBeAbsent(t, mem, "k")
		})
	}
}

// A store the caller drops is freed, with everything it holds, once the Uploaders that wrote to it
// are dropped too: nothing in the package keeps a store (or what was learned about it) for the
// life of the process, whether it was written through an Uploader or a shorthand.
func TestDroppedStoreIsFreed(t *testing.T) {
	var gone []weak.Pointer[memstore.Store]
	for i := range 8 {
		mem := newMem(memstore.Rules{IgnoreChecksumHeaders: true})
		data := randomBytes(t, smallSize)
		key := fmt.Sprint("k", i)
		var res *writer.Result
		var err error
		if i%2 == 0 {
			res, err = write(t, mem, key, data, func(o *writer.Options) { o.ReadBackLimit = 0 })
		} else {
			res, err = writeWith(t, newUploader(t, mem), key, data, func(o *writer.Options) { o.ReadBackLimit = 0 })
		}
		mustLand(t, mem, key, data, res, err, verify.MethodETagMD5)
		gone = append(gone, weak.Make(mem))
	}
	runtime.GC()
	for i, w := range gone {
		if w.Value() != nil {
			t.Fatalf("store %d is still alive after the GC: the writer package keeps a store its caller dropped", i)
		}
	}
}

// endpointStore gives a store the endpoint an adapter would report.
type endpointStore struct {
	store.Store
	endpoint string
}

func (s endpointStore) Endpoint() string { return s.endpoint }

// unwrapping is a store wrapper as a user writes one (metrics, tracing): embedding hides the
// wrapped store's optional methods, and Unwrap keeps them (store.Find).
type unwrapping struct{ store.Store }

func (u unwrapping) Unwrap() store.Store { return u.Store }

// At defaults a write offers CRC32C, except to an R2 endpoint, which takes CRC32C only as
// COMPOSITE: there it offers the CRC64NVME R2 takes as FULL_OBJECT. A checksum the caller names,
// or a named profile's own choice, is never changed.
func TestDefaultChecksumByEndpoint(t *testing.T) {
	data := randomBytes(t, largeSize)
	for _, c := range []struct {
		name, endpoint string
		opts           []func(*writer.Options)
		want           store.ChecksumAlgorithm
	}{
		{"unknown endpoint", "http://127.0.0.1:9000", nil, store.ChecksumCRC32C},
		{"AWS", "https://s3.us-east-1.amazonaws.com", nil, store.ChecksumCRC32C},
		{"R2", "https://0123abcd.r2.cloudflarestorage.com", nil, store.ChecksumCRC64NVME},
		{"R2, EU jurisdiction", "https://0123abcd.EU.R2.cloudflarestorage.com:443", nil, store.ChecksumCRC64NVME},
		{"R2, checksum named", "https://0123abcd.r2.cloudflarestorage.com", []func(*writer.Options){func(o *writer.Options) { o.Checksum = store.ChecksumCRC32 }}, store.ChecksumCRC32},
		{"R2, r2 profile", "https://0123abcd.r2.cloudflarestorage.com", []func(*writer.Options){func(o *writer.Options) { o.Profile = "r2" }}, store.ChecksumCRC64NVME},
		{"a look-alike host", "https://r2.cloudflarestorage.com.example.net", nil, store.ChecksumCRC32C},
	} {
		for _, wrapped := range []bool{false, true} {
			name := c.name
			if wrapped {
				name += ", behind a wrapper"
			}
			t.Run(name, func(t *testing.T) {
				mem := newMem(memstore.Rules{})
				var st store.Store = endpointStore{Store: mem, endpoint: c.endpoint}
				if wrapped { // a user's metrics wrapper: the endpoint is found through Unwrap
					st = unwrapping{st}
				}
				res, err := write(t, st, "k", data, c.opts...)
				if err != nil {
					t.Fatal(err)
				}
				if res.Checksum.Algorithm != c.want {
					t.Fatalf("checksum %s, want %s", res.Checksum.Algorithm, c.want)
				}
				mustLand(t, mem, "k", data, res, err, verify.Method(strings.ToLower(string(c.want))))
			})
		}
	}
}
