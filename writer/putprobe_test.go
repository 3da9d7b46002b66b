package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// putParrot is parrot (checksumprobe_test.go) for single PUTs too: a store that checks no
// checksum header yet echoes the one sent on every answer.
type putParrot struct{ parrot }

func (s putParrot) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	out, err := s.Store.PutObject(ctx, in)
	if out != nil && !in.Checksum.IsZero() {
		o := *out
		o.Checksums = parroted(in.Checksum)
		return &o, err
	}
	return out, err
}

// wireDamage alters the body of the nth PutObject on its way to the store, as the wire fault
// proxy's StoreFlipped and StoreTruncated do: a byte inverted (or the second half cut), the
// checksum headers dropped, or with rechecksum recomputed over the altered bytes (a middlebox
// that rewrites both), and the store's answer passed back unchanged. The store keeps bytes
// other than the ones sent and answers 200.
type wireDamage struct {
	store.Store
	nth        atomic.Int64 // the PutObject to damage, counted from 1; 0: none
	truncate   bool
	rechecksum bool
	puts       atomic.Int64
	damaged    atomic.Int64
}

func (s *wireDamage) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	if s.puts.Add(1) != s.nth.Load() {
		return s.Store.PutObject(ctx, in)
	}
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	if s.truncate {
		body = body[:len(body)/2]
	} else {
		body[len(body)/2] ^= 0xff
	}
	altered := *in
	altered.Body, altered.ContentLength, altered.ContentMD5 = bytes.NewReader(body), int64(len(body)), ""
	altered.Checksum = store.Checksum{}
	if s.rechecksum && !in.Checksum.IsZero() {
		sum, err := integrity.Sum(in.Checksum.Algorithm, body)
		if err != nil {
			return nil, err
		}
		altered.Checksum = store.Checksum{Algorithm: in.Checksum.Algorithm, Value: sum}
	}
	s.damaged.Add(1)
	return s.Store.PutObject(ctx, &altered)
}

// probeRequests is how many requests of the checksum probe mem took: a flush of single PUTs
// sends no multipart upload of its own, so every create, part and abort is the probe's.
func probeRequests(mem *memstore.Store) int {
	return mem.Requests("CreateMultipartUpload") + mem.Requests("UploadPart") + mem.Requests("AbortMultipartUpload")
}

// TestSinglePutsLearnTheStoreChecks: an Uploader that writes only single PUTs learns, from the
// checksum probe its second one sends (beside the PUT when the store is known to take the
// checksum header, after its answer when the header is only offered), whether the store checks
// checksums; its first sends none, since it may be the Uploader's only write. Once it knows the
// store checks, a PUT whose answer echoes the checksum sent is proven by that echo
// (Result.Verified crc32c, VerifiedBy PutObject, one request) and takes no MD5; until then, and
// on a store that checks nothing (whatever it echoes), every PUT takes its MD5 and is proven by
// its answer's ETag. Nothing of the probe is left, or lands in the object.
func TestSinglePutsLearnTheStoreChecks(t *testing.T) {
	data := randomBytes(t, smallSize)
	profiles := map[string]func(*writer.Options){
		"defaults":      func(*writer.Options) {},                        // the header offered: the probe after the second PUT's answer
		"minio profile": func(o *writer.Options) { o.Profile = "minio" }, // the header known taken: the probe beside the second PUT
	}
	for name, profile := range profiles {
		t.Run("checks and echoes/"+name, func(t *testing.T) {
			mem := newMem(minioLike)
			u := newUploader(t, mem, profile)
			for i, key := range []string{"first", "second"} {
				res, hashed, err := writeCounting(t, u, key, data)
				mustLand(t, mem, key, data, res, err, verify.MethodETagMD5)
				if hashed != smallSize || res.VerifiedBy != "PutObject" || res.Requests != 1 {
					t.Fatalf("%s write: hashed %d, verified by %s, %d requests: want its MD5 taken and its answer's ETag proving it, one request", key, hashed, res.VerifiedBy, res.Requests)
				}
				if n := mem.Requests("CreateMultipartUpload"); n != i || mem.Requests("UploadPart") != i {
					t.Fatalf("%d probe creates, %d parts after the %s write: want %d (none beside an Uploader's first write, then one)", n, mem.Requests("UploadPart"), key, i)
				}
			}
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("the probe's upload left after the write's Close: %+v", ups)
			}
			probes := probeRequests(mem)
			for i := range 3 {
				key := fmt.Sprint("later", i)
				var (
					res    *writer.Result
					hashed int64
					err    error
				)
				if i == 2 {
					res, err = u.Upload(context.Background(), unitBucket, key, bytes.NewReader(data))
				} else {
					res, hashed, err = writeCounting(t, u, key, data)
				}
				mustLand(t, mem, key, data, res, err, verify.MethodCRC32C)
				if hashed != 0 || res.VerifiedBy != "PutObject" || res.Requests != 1 {
					t.Fatalf("%s: hashed %d, verified by %s, %d requests: want no MD5, the echo in the PUT's answer proving it, one request", key, hashed, res.VerifiedBy, res.Requests)
				}
			}
			if n := probeRequests(mem); n != probes || mem.Requests("HeadObject") != 0 {
				t.Fatalf("%d probe requests after the first write's %d, %d HEADs: want no other probe, no HEAD", n, probes, mem.Requests("HeadObject"))
			}
		})
	}

	t.Run("ignores checksum headers", func(t *testing.T) {
		mem := newMem(ignoring)
		u := newUploader(t, mem)
		for _, key := range []string{"first", "second", "third"} {
			res, hashed, err := writeCounting(t, u, key, data)
			mustLand(t, mem, key, data, res, err, verify.MethodETagMD5)
			if hashed != smallSize {
				t.Fatalf("%s: hashed %d bytes, want all %d (the store took the probe's wrong checksum)", key, hashed, smallSize)
			}
		}
		// The first answer carried no echo of the checksum sent: this endpoint's answers can
		// spare no MD5, so nothing is asked.
		if n := mem.Requests("CreateMultipartUpload"); n != 0 {
			t.Fatalf("%d probes sent, want none", n)
		}
	})

	t.Run("parrots the checksum without checking it", func(t *testing.T) {
		// An echo alone proves nothing: the store took the probe's wrong checksum, so every PUT
		// keeps its MD5, and a body damaged on the way (the checksum recomputed over it and the
		// echo replaced by the one sent) is caught by the answer's ETag and sent again.
		mem := newMem(ignoring)
		fs := faulty.New(putParrot{parrot{mem}}, faulty.Nth(faulty.OpPutObject, 3, faulty.FlipByte()))
		u := newUploader(t, fs, func(o *writer.Options) { o.Retry = fastPolicy() })
		for _, key := range []string{"first", "second", "damaged"} {
			res, hashed, err := writeCounting(t, u, key, data)
			mustLand(t, mem, key, data, res, err, verify.MethodETagMD5)
			if hashed != smallSize {
				t.Fatalf("%s: hashed %d bytes, want all %d", key, hashed, smallSize)
			}
			if key == "damaged" && (fs.Count(faulty.FlipByte()) != 1 || res.Failures[sperrors.Integrity] != 1) {
				t.Fatalf("%d bodies damaged, failures %v: want the damaged one caught", fs.Count(faulty.FlipByte()), res.Failures)
			}
		}
		if n := mem.Requests("CreateMultipartUpload"); n != 1 || len(mem.Uploads(unitBucket)) != 0 {
			t.Fatalf("%d probes sent, uploads left %+v: want one, aborted", n, mem.Uploads(unitBucket))
		}
	})

	t.Run("the probe refused", func(t *testing.T) {
		// A 403 to the probe's own create answers nothing about checksums, and the PUT's own
		// answer stands for the write's credentials: the write lands; every PUT keeps its MD5.
		mem := newMem(minioLike)
		fs := faulty.New(mem, probeRule(faulty.OpCreateMultipartUpload, faulty.Forbidden()))
		u := newUploader(t, fs)
		for _, key := range []string{"first", "second"} {
			res, hashed, err := writeCounting(t, u, key, data)
			mustLand(t, mem, key, data, res, err, verify.MethodETagMD5)
			if hashed != smallSize {
				t.Fatalf("%s: hashed %d bytes, want all %d", key, hashed, smallSize)
			}
		}
		if n := fs.Count(faulty.Forbidden()); n != 1 {
			t.Fatalf("the probe was refused %d times, want once: not sent again", n)
		}
	})

	// No probe where nothing it could learn would spare an MD5 or a HEAD.
	for _, c := range []struct {
		name string
		opts func(*writer.Options)
	}{
		{"SSE-S3", func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSES3} }},
		{"SSE-C", func(o *writer.Options) {
			o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: bytes.Repeat([]byte{7}, 32)}
			o.AllowSSECOverHTTP = true
		}},
		{"SaveProbe off", func(o *writer.Options) { o.Savings &^= writer.SaveProbe }},
		{"SaveRereads off", func(o *writer.Options) { o.Savings &^= writer.SaveRereads }},
		{"ReadBack", func(o *writer.Options) { o.ReadBack = true }},
	} {
		t.Run("no probe/"+c.name, func(t *testing.T) {
			mem := newMem(minioLike)
			u := newUploader(t, mem, c.opts)
			for _, key := range []string{"first", "second"} {
				res, err := writeWith(t, u, key, data)
				if err != nil || !res.VerifiedStrong {
					t.Fatalf("%s: %v; want landed, strongly verified", key, err)
				}
			}
			if n := mem.Requests("CreateMultipartUpload"); n != 0 {
				t.Fatalf("%d probes sent, want none", n)
			}
		})
	}

	t.Run("no probe/a package shorthand", func(t *testing.T) {
		// writer.Upload makes an Uploader for its one call: nothing learned would serve a later write.
		mem := newMem(minioLike)
		res, err := writer.Upload(context.Background(), mem, unitBucket, "k", bytes.NewReader(data))
		mustLand(t, mem, "k", data, res, err, verify.MethodETagMD5)
		if n := mem.Requests("CreateMultipartUpload"); n != 0 {
			t.Fatalf("%d probes sent, want none", n)
		}
	})

	t.Run("a flush", func(t *testing.T) {
		// 16 writers sharing one fresh Uploader send one probe between them; every write lands,
		// and once it is answered the writes take no MD5.
		mem := newMem(minioLike)
		u := newUploader(t, mem)
		small := randomBytes(t, 64<<10)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for j := range 4 {
					key := fmt.Sprintf("flush/%d-%d", i, j)
					res, err := u.Upload(context.Background(), unitBucket, key, bytes.NewReader(small))
					if err != nil || !res.VerifiedStrong || res.Requests != 1 {
						t.Errorf("%s: %v; want landed, strongly verified, one request", key, err)
					}
				}
			})
		}
		wg.Wait()
		if n := mem.Requests("CreateMultipartUpload"); n != 1 || len(mem.Uploads(unitBucket)) != 0 {
			t.Fatalf("%d probes sent, uploads left %+v: want one, aborted", n, mem.Uploads(unitBucket))
		}
		res, hashed, err := writeCounting(t, u, "after", small)
		mustLand(t, mem, "after", small, res, err, verify.MethodCRC32C)
		if hashed != 0 {
			t.Fatalf("hashed %d bytes after the probe's answer, want none", hashed)
		}
	})
}

// TestSinglePutDamagedOnceKnownToCheck: an Uploader that learned its store checks checksums
// takes no MD5 for a PUT whose answer echoes the checksum sent. A body damaged on the way (a byte
// flipped or half cut, the checksum headers dropped, or recomputed over the altered bytes) that
// the store keeps and answers 200 for carries no echo of the checksum sent, so the MD5 is taken
// then, from the bytes still held: its answer's ETag shows the damage at the receipt and the
// bytes go again, a stream's too, and the write lands as sent. The server-backed version is
// TestWireSinglePutDamagedOnceKnownToCheck.
func TestSinglePutDamagedOnceKnownToCheck(t *testing.T) {
	data := randomBytes(t, smallSize)
	for _, profile := range []string{"", "minio"} {
		for _, truncate := range []bool{false, true} {
			for _, rechecksum := range []bool{false, true} {
				for _, stream := range []bool{false, true} {
					name := fmt.Sprintf("profile-%q/truncate-%v/rechecksum-%v/stream-%v", profile, truncate, rechecksum, stream)
					t.Run(name, func(t *testing.T) {
						mem := newMem(minioLike)
						wd := &wireDamage{Store: mem, truncate: truncate, rechecksum: rechecksum}
						u := newUploader(t, wd, func(o *writer.Options) { o.Profile = profile; o.Retry = fastPolicy() })
						for _, key := range []string{"clean", "probed"} { // the Uploader's second write sends the probe
							res, _, err := writeCounting(t, u, key, data)
							mustLand(t, mem, key, data, res, err, verify.MethodETagMD5)
						}
						res, hashed, err := writeCounting(t, u, "learned", data)
						if err != nil || res.Verified != verify.MethodCRC32C || hashed != 0 {
							t.Fatalf("the write after the probe: %v, verified %v, hashed %d: want crc32c from its answer, no MD5 (the damage came too soon?)", err, res, hashed)
						}
						wd.nth.Store(wd.puts.Load() + 1)
						key := "damaged"
						if stream {
							res, _, err = writeCounting(t, u, key, data)
						} else {
							res, err = u.Upload(context.Background(), unitBucket, key, bytes.NewReader(data))
						}
						if wd.damaged.Load() != 1 {
							t.Fatal("the body was never damaged")
						}
						if err != nil {
							var e *sperrors.Error
							if !errors.As(err, &e) || e.Kind != sperrors.Integrity || e.ObjectLeft {
								t.Fatalf("failed with %v, want Integrity, the damaged object removed", err)
							}
							mustBeAbsent(t, mem, key)
						}
						// The answer's ETag is known to be the MD5 of what the store took (the
						// profile says so, or the first PUT's answer showed it): the damage is
						// caught at the receipt, with no HEAD, and the held bytes go again.
						if err != nil || res.Failures[sperrors.Integrity] != 1 {
							t.Fatalf("err %v: want the damage caught at the receipt and the body sent again", err)
						}
						mustLand(t, mem, key, data, res, err, verify.MethodCRC32C)
					})
				}
			}
		}
	}
}
