package writer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/storetest/faulty"
	"github.com/safeput/safeput/store/storetest/memstore"
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
		o.Checksums = store.Checksums{}
		o.Checksums.Set(in.Checksum.Algorithm, in.Checksum.Value)
		return &o, err
	}
	return out, err
}

// writeProbing is writeCounting through u to mem, also returning how many probes it sent.
func writeProbing(t *testing.T, u *writer.Uploader, mem *memstore.Store, key string, data []byte) (res *writer.Result, hashed int64, probes int, err error) {
	t.Helper()
	probes = probesSent(t, mem, func() { res, hashed, err = writeCounting(t, u, key, data) })
	return res, hashed, probes, err
}

// TestChecksumProbe: at defaults, a write that would spare its parts' MD5s on receipts that echo
// the checksum first sends one tiny part with a wrong checksum (probe.go). Only a store that
// refuses it as a digest mismatch gets its echoes trusted; whatever else happens to the probe,
// every part is hashed, the write lands as sent, and nothing of the probe is left.
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
		// The write's part 1 replaces it; a store that lists every attempt lists it too, and the
		// layout check leaves it out.
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
		fault faulty.Fault
	}{
		{"answered 500", faulty.InternalError()},
		{"throttled", faulty.SlowDown()}, // once: no throttle allowance of its own before the parts'
		{"answer lost", faulty.DropResponse()},
		{"damaged and re-summed on the way", faulty.FlipByte()},
		{"refused as a mismatch by a middlebox, not the store", faulty.ChecksumMismatch()},
	} {
		t.Run("probe "+c.name, func(t *testing.T) {
			for _, rules := range []memstore.Rules{minioLike, cephLike} {
				mem := newMem(rules)
				fs := faulty.New(mem, faulty.Always(faulty.OpUploadPartProbe, c.fault))
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
				if ups := mem.Uploads(unitBucket); len(ups) != 0 {
					t.Fatalf("incomplete uploads left: %+v", ups)
				}
			}
		})
	}

	// A 403 to the probe is an answer to the write's credentials, not to the probe's checksum:
	// the write fails Permanent with it, as a 403 to any other request of the write does, and
	// leaves nothing (before, the write sent its parts and landed).
	t.Run("probe refused 403", func(t *testing.T) {
		mem := newMem(minioLike)
		fs := faulty.New(mem, faulty.Always(faulty.OpUploadPartProbe, faulty.Forbidden()))
		_, _, err := writeCounting(t, newUploader(t, fs), "k", data, func(o *writer.Options) { o.Retry = fastPolicy() })
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Permanent || e.StatusCode != 403 {
			t.Fatalf("err %v; want Permanent with status 403", err)
		}
		if fs.Count(faulty.Forbidden()) != 1 {
			t.Fatalf("the 403 was answered %d times, want once", fs.Count(faulty.Forbidden()))
		}
		mustBeAbsent(t, mem, "k")
		if ups := mem.Uploads(unitBucket); len(ups) != 0 {
			t.Fatalf("incomplete uploads left: %+v", ups)
		}
	})
}
