package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// parrot is a store that checks no checksum header yet echoes the one sent on every receipt, as
// a store or middlebox that copies the header back would.
type parrot struct{ store.Store }

func (s parrot) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	out, err := s.Store.UploadPart(ctx, in)
	if out != nil && !in.Checksum.IsZero() {
		o := *out
		o.Checksums = parroted(in.Checksum)
		return &o, err
	}
	return out, err
}

// parroted is the checksums of a parrot's answer: the one sent, and no other.
func parroted(sent store.Checksum) store.Checksums {
	var cs store.Checksums
	cs.Set(sent.Algorithm, sent.Value)
	return cs
}

// writeProbing is writeCounting through u to mem, also returning how many probes it sent.
func writeProbing(t *testing.T, u *writer.Uploader, mem *memstore.Store, key string, data []byte) (res *writer.Result, hashed int64, probes int, err error) {
	t.Helper()
	probes = probesSent(t, mem, func() { res, hashed, err = writeCounting(t, u, key, data) })
	return res, hashed, probes, err
}

// probeRule is a rule for the checksum probe's requests of op only (faulty.Rule.Probe).
func probeRule(op string, f faulty.Fault) faulty.Rule {
	return faulty.Rule{Op: op, Probe: true, Fault: f}
}

// TestChecksumProbe: at defaults, a write that would spare its parts' MD5s on receipts that echo
// the checksum asks the store, once per Uploader, in a multipart upload of its own on the key:
// one tiny part with a wrong checksum, then that upload aborted (probe.go). Only a store that
// refuses the part as a digest mismatch gets its echoes trusted; whatever else happens to the
// probe's requests, every part is hashed, the write lands as sent, and nothing of the probe is
// left (or what is left is named).
func TestChecksumProbe(t *testing.T) {
	data := randomBytes(t, largeSize) // 3 parts of 5 MiB at most
	t.Run("a store that parrots the checksum: a damaged part is caught before Complete", func(t *testing.T) {
		// Part 2 is damaged on the way (the store keeps it and echoes the checksum sent) and
		// Complete is refused, so only a check before it can catch the damage: the part's ETag
		// against its MD5. In a fresh Uploader's first write, and in the second write of one
		// whose first write landed clean.
		damagedBeforeComplete := func(t *testing.T, mem *memstore.Store, fs *faulty.Store, u *writer.Uploader, key string) {
			t.Helper()
			_, hashed, err := writeCounting(t, u, key, data)
			var e *sperrors.Error
			if !errors.As(err, &e) || e.Kind != sperrors.Integrity || !strings.Contains(e.Message, "ETag (MD5)") {
				t.Fatalf("err %v; want Integrity naming the damaged part's ETag, before Complete", err)
			}
			if hashed == 0 {
				t.Fatal("no part hashed by MD5")
			}
			for _, in := range fs.Injected() {
				if in.Op == faulty.OpCompleteMultipart {
					t.Fatalf("Complete was sent: %v", fs.Injected())
				}
			}
			mustBeAbsent(t, mem, key)
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("incomplete uploads left: %+v", ups)
			}
		}
		t.Run("first write", func(t *testing.T) {
			mem := newMem(cephLike)
			fs := faulty.New(parrot{mem}, faulty.Nth(faulty.OpUploadPart, 2, faulty.FlipByte()), faulty.Always(faulty.OpCompleteMultipart, faulty.Forbidden()))
			damagedBeforeComplete(t, mem, fs, newUploader(t, fs), "k")
		})
		t.Run("second write", func(t *testing.T) {
			// The first write taught the Uploader that part ETags are MD5s: the damaged part
			// is caught at its receipt and sent again, and the write lands as sent.
			mem := newMem(cephLike)
			fs := faulty.New(parrot{mem}, faulty.Nth(faulty.OpUploadPart, 5, faulty.FlipByte()))
			u := newUploader(t, fs)
			res, hashed, err := writeCounting(t, u, "clean", data)
			mustLand(t, mem, "clean", data, res, err, verify.MethodETagMD5)
			if hashed != largeSize {
				t.Fatalf("hashed %d bytes by MD5, want every byte (the store took the probe)", hashed)
			}
			res, _, err = writeCounting(t, u, "k", data)
			mustLand(t, mem, "k", data, res, err, verify.MethodETagMD5)
			if fs.Count(faulty.FlipByte()) != 1 || res.Failures[sperrors.Integrity] != 1 {
				t.Fatalf("%d parts damaged, failures %v: want the damaged part caught", fs.Count(faulty.FlipByte()), res.Failures)
			}
		})
	})

	t.Run("a store that checks: the probe once per Uploader", func(t *testing.T) {
		mem := newMem(minioLike)
		u := newUploader(t, mem)
		for i, key := range []string{"first", "second"} {
			res, hashed, sent, err := writeProbing(t, u, mem, key, data)
			mustLand(t, mem, key, data, res, err, verify.MethodCRC32C)
			if hashed != 0 {
				t.Fatalf("%s: hashed %d bytes by MD5, want none", key, hashed)
			}
			if want := 1 - i; sent != want {
				t.Fatalf("%s: %d probes sent, want %d", key, sent, want)
			}
			if len(res.Failures) != 0 {
				t.Fatalf("%s: failures %v; the refused probe is not a failure", key, res.Failures)
			}
		}
	})

	t.Run("a store that takes the probe", func(t *testing.T) {
		// Its part stays in its own upload, aborted: the write's listing, even on a store that
		// lists every attempt of a part, holds the write's parts alone.
		for _, every := range []bool{false, true} {
			rules := cephLike
			rules.ListEveryAttempt = every
			mem := newMem(rules)
			u := newUploader(t, mem)
			for i, key := range []string{"first", "second"} {
				res, hashed, sent, err := writeProbing(t, u, mem, key, data)
				mustLand(t, mem, key, data, res, err, verify.MethodETagMD5)
				if hashed != largeSize {
					t.Fatalf("%s: hashed %d bytes by MD5, want all %d", key, hashed, largeSize)
				}
				if listedTwice(res.Notes) {
					t.Fatalf("%s: notes %q", key, res.Notes)
				}
				if want := 1 - i; sent != want { // known after the first: not asked again
					t.Fatalf("%s: %d probes sent, want %d", key, sent, want)
				}
			}
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("incomplete uploads left: %+v", ups)
			}
		}
	})

	for _, c := range []struct {
		name  string
		op    string
		fault faulty.Fault
	}{
		{"part answered 500", faulty.OpUploadPart, faulty.InternalError()},
		{"part throttled", faulty.OpUploadPart, faulty.SlowDown()}, // once: no throttle allowance of its own before the parts'
		{"part's answer lost", faulty.OpUploadPart, faulty.DropResponse()},
		{"part damaged and re-summed on the way", faulty.OpUploadPart, faulty.FlipByte()},
		{"part refused as a mismatch by a middlebox, not the store", faulty.OpUploadPart, faulty.ChecksumMismatch()},
		{"create answered 500", faulty.OpCreateMultipartUpload, faulty.InternalError()},
		{"create throttled", faulty.OpCreateMultipartUpload, faulty.SlowDown()},
		{"create's answer lost", faulty.OpCreateMultipartUpload, faulty.DropResponse()}, // the upload it made is swept
	} {
		t.Run("probe "+c.name, func(t *testing.T) {
			stores := []memstore.Rules{minioLike, cephLike}
			if c.op == faulty.OpCreateMultipartUpload {
				stores = stores[:1] // no part is sent: what the store does with one does not matter
			}
			for _, rules := range stores {
				mem := newMem(rules)
				fs := faulty.New(mem, probeRule(c.op, c.fault))
				u := newUploader(t, fs)
				res, hashed, err := writeCounting(t, u, "k", data, func(o *writer.Options) { o.Retry = fastPolicy() })
				want := verify.MethodCRC32C
				if rules.IgnoreChecksumHeaders {
					want = verify.MethodETagMD5
				}
				mustLand(t, mem, "k", data, res, err, want)
				if fs.Count(c.fault) != 1 {
					t.Fatalf("the fault was injected %d times, want once (the probe, never retried)", fs.Count(c.fault))
				}
				if ups := mem.Uploads(unitBucket); len(ups) != 0 || len(res.LeftBehind) != 0 {
					t.Fatalf("incomplete uploads left: %+v (reported %v)", ups, res.LeftBehind)
				}
				if c.fault == faulty.ChecksumMismatch() && !rules.IgnoreChecksumHeaders {
					// Indistinguishable from the store's own refusal: trusted, as the store
					// behind it does check.
					continue
				}
				if c.fault == faulty.ChecksumMismatch() {
					// Trusted, but the store's receipts do not echo: every part hashed still.
					if hashed != largeSize {
						t.Fatalf("hashed %d bytes, want all %d (no receipt echoed)", hashed, largeSize)
					}
					continue
				}
				if hashed != largeSize {
					t.Fatalf("hashed %d bytes by MD5, want all %d (the probe showed nothing)", hashed, largeSize)
				}
			}
		})
	}

	// Writes that start together send one probe between them, and one that learned nothing is
	// not sent again.
	t.Run("once per Uploader, even when it learned nothing", func(t *testing.T) {
		mem := newMem(minioLike)
		fs := faulty.New(mem, probeRule(faulty.OpUploadPart, faulty.InternalError()))
		u := newUploader(t, fs)
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				key := fmt.Sprint("k", i)
				res, _, err := writeCounting(t, u, key, data, func(o *writer.Options) { o.Retry = fastPolicy() })
				if err != nil || !res.VerifiedStrong {
					t.Errorf("%s: %v; want landed, verified", key, err)
				}
			})
		}
		wg.Wait()
		if n := fs.Count(faulty.InternalError()); n != 1 {
			t.Fatalf("%d probes sent by 3 writes, want 1", n)
		}
	})

	// The probe's abort refused: the write lands, and names the probe's upload as left behind,
	// for a sweep to remove.
	t.Run("probe's abort refused", func(t *testing.T) {
		mem := newMem(minioLike)
		fs := faulty.New(mem, probeRule(faulty.OpAbortMultipart, faulty.Forbidden()))
		res, _, err := writeCounting(t, newUploader(t, fs), "k", data, func(o *writer.Options) { o.Retry = fastPolicy() })
		mustLand(t, mem, "k", data, res, err, verify.MethodCRC32C)
		ups := mem.Uploads(unitBucket)
		if len(ups) != 1 || len(res.LeftBehind) != 1 || res.LeftBehind[0] != ups[0].UploadID || ups[0].UploadID == res.UploadID {
			t.Fatalf("left behind %v, incomplete uploads %+v: want the probe's upload, and it alone, named", res.LeftBehind, ups)
		}
	})

	// A part that gets no answer holds the write no longer than the probe's bound: the write
	// then hashes every part, and the probe's upload is aborted.
	t.Run("probe's part hangs", func(t *testing.T) {
		mem := newMem(minioLike)
		fs := faulty.New(mem, probeRule(faulty.OpUploadPart, faulty.Hang()))
		start := time.Now()
		res, hashed, err := writeCounting(t, newUploader(t, fs), "k", data, func(o *writer.Options) { o.Retry = fastPolicy() })
		took := time.Since(start)
		mustLand(t, mem, "k", data, res, err, verify.MethodCRC32C)
		if bound := writer.ProbeTimeout + 5*time.Second; took > bound {
			t.Fatalf("the write took %v, bound %v", took, bound)
		}
		if hashed != largeSize {
			t.Fatalf("hashed %d bytes by MD5, want all %d (the probe showed nothing)", hashed, largeSize)
		}
		if ups := mem.Uploads(unitBucket); len(ups) != 0 {
			t.Fatalf("incomplete uploads left: %+v", ups)
		}
	})

	// A 403 to the probe's part or create is an answer to the write's credentials on the write's
	// key, not to the probe's checksum: the write fails Permanent with it, as a 403 to any other
	// request of the write does, and leaves nothing.
	for _, op := range []string{faulty.OpUploadPart, faulty.OpCreateMultipartUpload} {
		t.Run("probe's "+op+" refused 403", func(t *testing.T) {
			mem := newMem(minioLike)
			fs := faulty.New(mem, probeRule(op, faulty.Forbidden()))
			_, _, err := writeCounting(t, newUploader(t, fs), "k", data, func(o *writer.Options) { o.Retry = fastPolicy() })
			var e *sperrors.Error
			if !errors.As(err, &e) || e.Kind != sperrors.Permanent || e.StatusCode != 403 {
				t.Fatalf("err %v; want Permanent with status 403", err)
			}
			if fs.Count(faulty.Forbidden()) != 1 {
				t.Fatalf("the 403 was answered %d times, want once", fs.Count(faulty.Forbidden()))
			}
			mustBeAbsent(t, mem, "k")
		})
	}
}

// partLog is a store that records every UploadPart it passes on: the upload, the part, its
// size, and whether it came from the checksum probe (its context carries writer.SaveProbe), and
// the probe's creates and aborts.
type partLog struct {
	store.Store
	mu      sync.Mutex
	parts   []loggedPart
	created []string // the probe's uploads
	aborted []string // the probe's aborts
}

type loggedPart struct {
	uploadID string
	number   int32
	size     int64
	probe    bool
}

// Unwrap keeps the capabilities of the store underneath (store.Find).
func (s *partLog) Unwrap() store.Store { return s.Store }

func (s *partLog) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	s.mu.Lock()
	s.parts = append(s.parts, loggedPart{in.UploadID, in.PartNumber, in.ContentLength, ctx.Value(writer.SaveProbe) == true})
	s.mu.Unlock()
	return s.Store.UploadPart(ctx, in)
}

func (s *partLog) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	out, err := s.Store.CreateMultipartUpload(ctx, in)
	if err == nil && ctx.Value(writer.SaveProbe) == true {
		s.mu.Lock()
		s.created = append(s.created, out.UploadID)
		s.mu.Unlock()
	}
	return out, err
}

func (s *partLog) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	if ctx.Value(writer.SaveProbe) == true {
		s.mu.Lock()
		s.aborted = append(s.aborted, in.UploadID)
		s.mu.Unlock()
	}
	return s.Store.AbortMultipartUpload(ctx, in)
}

// TestProbeNeverInTheCallersUpload: the caller's upload receives the caller's parts and nothing
// else; the probe's part goes to an upload of its own on the same key, which is aborted, on a
// store that refuses the probe's part and on one that takes it, from a stream and from an
// io.ReaderAt source.
func TestProbeNeverInTheCallersUpload(t *testing.T) {
	data := randomBytes(t, largeSize) // three 5 MiB parts
	for _, rules := range []memstore.Rules{minioLike, cephLike} {
		for _, src := range []struct {
			name string
			r    func() io.Reader
		}{
			{"stream", func() io.Reader { return struct{ io.Reader }{bytes.NewReader(data)} }},
			{"readerat", func() io.Reader { return bytes.NewReader(data) }},
		} {
			t.Run(fmt.Sprintf("checks-%v/%s", !rules.IgnoreChecksumHeaders, src.name), func(t *testing.T) {
				mem := newMem(rules)
				st := &partLog{Store: mem}
				res, err := newUploader(t, st).Upload(context.Background(), unitBucket, "k", src.r(),
					func(o *writer.Options) { o.PartSize, o.Concurrency = 5*mib, 3 })
				want := verify.MethodCRC32C
				if rules.IgnoreChecksumHeaders {
					want = verify.MethodETagMD5
				}
				mustLand(t, mem, "k", data, res, err, want)
				var mine, probes []loggedPart
				for _, p := range st.parts {
					if p.uploadID == res.UploadID {
						mine = append(mine, p)
					} else {
						probes = append(probes, p)
					}
				}
				if len(mine) != 3 {
					t.Errorf("the caller's upload received %d parts, want its 3: %+v", len(mine), mine)
				}
				var bytes int64
				numbers := map[int32]bool{}
				for _, p := range mine {
					bytes += p.size
					numbers[p.number] = true
					if p.probe {
						t.Errorf("the caller's upload received the probe's part %+v", p)
					}
				}
				if bytes != largeSize || !numbers[1] || !numbers[2] || !numbers[3] {
					t.Errorf("the caller's upload received parts %v of %d bytes in all: want 1, 2, 3 of the object's %d", numbers, bytes, largeSize)
				}
				if len(probes) != 1 || !probes[0].probe || len(st.created) != 1 || probes[0].uploadID != st.created[0] {
					t.Fatalf("probe parts %+v in uploads %v: want one, in the probe's own upload", probes, st.created)
				}
				if len(st.aborted) != 1 || st.aborted[0] != st.created[0] {
					t.Fatalf("the probe aborted %v, want its upload %v", st.aborted, st.created)
				}
				if ups := mem.Uploads(unitBucket); len(ups) != 0 {
					t.Fatalf("incomplete uploads left: %+v", ups)
				}
				// The probe's create, part and abort are no request of the write's.
				total := 0
				for _, n := range mem.RequestCounts() {
					total += n
				}
				if res.Requests != total-3 {
					t.Fatalf("Result.Requests %d, the store answered %d: want all but the probe's 3", res.Requests, total)
				}
			})
		}
	}
}
