package writer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// The reference path: with every saving off (Options.Savings 0) a write takes every part's MD5 as
// its bytes arrive, sends no probe and trusts no echo, and still lands what the default path
// lands, verified as strongly, on every store personality; the default path spares work only
// where the store showed it safe. Both run through one fault (a part damaged on the way) too.
func TestSavingsOffIsTheReferencePath(t *testing.T) {
	large, small := randomBytes(t, largeSize), randomBytes(t, smallSize)
	for _, c := range []struct {
		name  string
		rules memstore.Rules
	}{
		{"minio-like", minioLike},
		{"ceph-like", cephLike},
		{"refusing checksum headers", refusing},
	} {
		for _, data := range [][]byte{small, large} {
			t.Run(fmt.Sprintf("%s/%d", c.name, len(data)), func(t *testing.T) {
				type outcome struct {
					parts  int
					strong bool
					hashed int64
					probes int
				}
				run := func(opts ...func(*writer.Options)) outcome {
					mem := newMem(c.rules)
					var res *writer.Result
					var hashed int64
					var err error
					probes := probesSent(t, mem, func() { res, hashed, err = writeCounting(t, newUploader(t, mem), "k", data, opts...) })
					if err != nil {
						t.Fatalf("write failed: %v", err)
					}
					if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, data) {
						t.Fatal("the object is not the bytes written")
					}
					if len(data) <= smallSize {
						probes = 0 // probesSent counts a multipart write's parts
					}
					return outcome{res.Parts, res.VerifiedStrong, hashed, probes}
				}
				def, ref := run(), run(func(o *writer.Options) { o.Savings = 0 })
				if !ref.strong || !def.strong || ref.parts != def.parts {
					t.Fatalf("default %+v, reference %+v: both must land strongly verified in the same parts", def, ref)
				}
				if ref.probes != 0 || ref.hashed != int64(len(data)) {
					t.Fatalf("reference path: %d probes, %d bytes hashed; want none and every byte (%d)", ref.probes, ref.hashed, len(data))
				}
				if def.hashed > ref.hashed {
					t.Fatalf("the default path hashed more (%d) than the reference (%d)", def.hashed, ref.hashed)
				}
			})
		}
	}
	// A part damaged on the way to a store that re-sums it and echoes the checksum: either path
	// catches it before Complete (its receipt, or ListParts against the checksums sent) and,
	// with a one-pass stream that cannot send it again, fails Integrity: never a damaged object,
	// never an upload left.
	t.Run("a part damaged on the way", func(t *testing.T) {
		for _, off := range []bool{true, false} {
			savings := writer.SaveLateMD5 | writer.SaveProbe | writer.SaveEchoTrust | writer.SavePrefault | writer.SaveRereads // the default
			if off {
				savings = 0
			}
			mem := newMem(minioLike)
			fs := faulty.New(parrot{mem}, faulty.Nth(faulty.OpUploadPart, 2, faulty.FlipByte()))
			res, _, err := writeCounting(t, newUploader(t, fs), "k", large, func(o *writer.Options) {
				if off {
					o.Savings = 0
				}
				o.Retry = fastPolicy()
			})
			switch {
			case err == nil:
				if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, large) || !res.VerifiedStrong {
					t.Fatalf("savings %05b: landed, but not the bytes written, or not proven (%s)", savings, res.Verified)
				}
			case !errors.Is(err, sperrors.Integrity):
				t.Fatalf("savings %05b: %v, want Integrity", savings, err)
			default:
				mustBeAbsent(t, mem, "k")
			}
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("savings %05b: incomplete uploads left: %+v", savings, ups)
			}
		}
	})
}

// The same comparison on the real servers, through both adapters: the core paths (single PUT,
// multipart, a stream and a replayable source) land identical with every saving off.
func TestSavingsOffOnServers(t *testing.T) {
	sizes := []int{1, part + 1, 2*part + 7}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, size := range sizes {
			data := s3test.RandomBytes(size)
			for _, src := range []source{stream, replayable} {
				key := fmt.Sprintf("savings-off/%d-%s", size, src)
				res, err := writer.Upload(context.Background(), env.Store, env.Bucket, key, src.reader(data),
					func(o *writer.Options) { o.PartSize = part; o.Savings = 0 })
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				if !res.VerifiedStrong || res.Size != int64(size) {
					t.Fatalf("%s: size %d verified %s (strong %v)", key, res.Size, res.Verified, res.VerifiedStrong)
				}
				if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
					t.Fatalf("%s: read back differs", key)
				}
			}
		}
	})
}

// SaveRereads: a multipart write leaves out the ListParts before Complete only when every
// part's receipt echoed the checksum sent and the store showed (the probe) that it checks it,
// and the HEAD after Complete only when, on top of that, Complete's answer carried the object's
// checksum, equal to the write's. A store that then holds a part other than its receipt said is
// caught before commit all the same: its Complete refuses the part (InvalidPart), the write lists
// the parts, and re-sends the wrong one from a replayable source or fails Integrity, leaving
// nothing.
func TestListPartsLeftOutWhenReceiptsProve(t *testing.T) {
	data := randomBytes(t, largeSize)
	for _, c := range []struct {
		name     string
		rules    memstore.Rules
		wrap     func(store.Store) store.Store
		opts     func(*writer.Options)
		listings int
		heads    int
	}{
		{"checks and echoes", minioLike, nil, nil, 0, 0},
		{"saving off", minioLike, nil, func(o *writer.Options) { o.Savings &^= writer.SaveRereads }, 1, 1},
		{"checks nothing (MD5 ETags)", cephLike, nil, nil, 1, 1},
		{"parrots the header, checks nothing", cephLike, func(s store.Store) store.Store { return parrot{s} }, nil, 1, 1},
		{"answers Complete without the checksum", minioLike, func(s store.Store) store.Store { return completeSays{s, ""} }, nil, 0, 1},
		{"answers Complete with another checksum", minioLike, func(s store.Store) store.Store { return completeSays{s, "AAAAAA=="} }, nil, 0, 1},
		{"read-back asked", minioLike, nil, func(o *writer.Options) { o.ReadBack = true }, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(c.rules)
			var st store.Store = mem
			if c.wrap != nil {
				st = c.wrap(mem)
			}
			var opts []func(*writer.Options)
			if c.opts != nil {
				opts = append(opts, c.opts)
			}
			res, _, err := writeCounting(t, newUploader(t, st), "k", data, opts...)
			if err != nil {
				t.Fatalf("write failed: %v", err)
			}
			if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, data) || !res.VerifiedStrong {
				t.Fatalf("landed %v, verified %s (strong %v): want the bytes written, proven", ok, res.Verified, res.VerifiedStrong)
			}
			if n := mem.Requests("ListParts"); n != c.listings {
				t.Fatalf("ListParts sent %d times, want %d", n, c.listings)
			}
			if n := mem.Requests("HeadObject"); n != c.heads {
				t.Fatalf("HEAD sent %d times, want %d", n, c.heads)
			}
		})
	}
	// The store takes part 2 with its checksum echoed, then keeps it with a byte flipped.
	for _, src := range []source{replayable, stream} {
		t.Run("kept other than its receipt/"+src.String(), func(t *testing.T) {
			mem := newMem(minioLike)
			fs := faulty.New(mem, faulty.Nth(faulty.OpUploadPart, 2, faulty.FlipByte()))
			res, err := writer.Upload(context.Background(), fs, unitBucket, "k", src.reader(data),
				func(o *writer.Options) { o.PartSize = 5 * mib; o.Retry = fastPolicy() })
			// After Complete refused the part: the layout check, then the check again after the
			// re-send, or the abort's confirmation.
			if n := mem.Requests("ListParts"); n != 2 {
				t.Fatalf("ListParts sent %d times, want 2", n)
			}
			if src == stream {
				if !errors.Is(err, sperrors.Integrity) {
					t.Fatalf("got %v, want Integrity", err)
				}
				mustBeAbsent(t, mem, "k")
				return
			}
			if err != nil {
				t.Fatalf("write failed: %v; injected %v", err, fs.Injected())
			}
			if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, data) || !res.VerifiedStrong {
				t.Fatalf("landed %v, verified %s: want the bytes written, proven", ok, res.Verified)
			}
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("incomplete uploads left: %+v", ups)
			}
		})
	}
}

// completeSays answers every Complete with the full-object checksum sum ("" for none) in place
// of the store's own, as a store that reports none, or a wrong one, would.
type completeSays struct {
	store.Store
	sum string
}

func (s completeSays) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	out, err := s.Store.CompleteMultipartUpload(ctx, in)
	if out != nil {
		o := *out
		o.Checksums = store.Checksums{}
		if s.sum != "" {
			o.Checksums.Set(in.FullObjectChecksum.Algorithm, s.sum)
		}
		return &o, err
	}
	return out, err
}

// TestSinglePutProvenByItsAnswer: a single PUT sends no HEAD when its answer proves the object:
// its ETag is the MD5 of the body (a fresh Uploader's first write included; no Content-MD5
// went, so the store hashed what it took), or it echoes the checksum sent and the Uploader knows
// the store checks checksums (an earlier multipart write's probe). The HEAD stays with the saving
// off, for a read-back, for encryption to confirm, where ETags are not MD5s, and where
// Content-MD5 went to a store not known to check it (it could answer it back as its ETag).
func TestSinglePutProvenByItsAnswer(t *testing.T) {
	large, small := randomBytes(t, largeSize), randomBytes(t, 1000)
	rereadsOff := func(o *writer.Options) { o.Savings &^= writer.SaveRereads }
	for _, c := range []struct {
		name    string
		rules   memstore.Rules
		wrap    func(store.Store) store.Store
		learned bool // a multipart write through the same Uploader first
		opts    func(*writer.Options)
		heads   int
		method  verify.Method
		by      string
	}{
		{"known to check: the echo", minioLike, nil, true, nil, 0, verify.MethodCRC32C, "PutObject"},
		{"fresh Uploader: the MD5 ETag", minioLike, nil, false, nil, 0, verify.MethodETagMD5, "PutObject"},
		{"saving off", minioLike, nil, true, rereadsOff, 1, verify.MethodCRC32C, "HeadObject"},
		{"saving off, fresh Uploader", minioLike, nil, false, rereadsOff, 1, verify.MethodCRC32C, "HeadObject"},
		{"checks nothing: the MD5 ETag", ignoring, nil, true, nil, 0, verify.MethodETagMD5, "PutObject"},
		{"parrots the header, checks nothing: the MD5 ETag", ignoring, func(s store.Store) store.Store { return parrot{s} }, true, nil, 0, verify.MethodETagMD5, "PutObject"},
		{"an answer without an ETag", cephLike, nil, false, nil, 1, verify.MethodETagMD5, "HeadObject"},
		{"read-back asked", minioLike, nil, true, func(o *writer.Options) { o.ReadBack = true }, 1, verify.MethodReadBack, "GetObject"},
		{"SSE-S3 asked: only the HEAD reports it", minioLike, nil, false, func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSES3} }, 1, verify.MethodCRC32C, "HeadObject"},
		{"ETags not MD5s", opaque, nil, false, nil, 1, verify.MethodReadBack, "GetObject"},
		{"Content-MD5 sent, the store not known to check it", ignoring, nil, false, func(o *writer.Options) { o.ContentMD5 = true }, 1, verify.MethodETagMD5, "HeadObject"},
		{"Content-MD5 sent, the profile says the store checks it", ignoring, nil, false, func(o *writer.Options) { o.Profile = "ceph" }, 0, verify.MethodETagMD5, "PutObject"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(c.rules)
			var st store.Store = mem
			if c.wrap != nil {
				st = c.wrap(mem)
			}
			u := newUploader(t, st)
			var opts []func(*writer.Options)
			if c.opts != nil {
				opts = append(opts, c.opts)
			}
			if c.learned {
				if _, _, err := writeCounting(t, u, "large", large, opts...); err != nil {
					t.Fatal(err)
				}
			}
			before := mem.Requests("HeadObject")
			res, _, err := writeCounting(t, u, "small", small, opts...)
			if err != nil {
				t.Fatalf("write failed: %v", err)
			}
			if got, ok := mem.Object(unitBucket, "small"); !ok || !bytes.Equal(got, small) || !res.VerifiedStrong || res.Multipart {
				t.Fatalf("landed %v, verified %s (strong %v), multipart %v: want the bytes written by one PUT, proven", ok, res.Verified, res.VerifiedStrong, res.Multipart)
			}
			if n := mem.Requests("HeadObject") - before; n != c.heads {
				t.Fatalf("HEAD sent %d times, want %d", n, c.heads)
			}
			if res.Verified != c.method || res.VerifiedBy != c.by {
				t.Fatalf("verified %q by %q, want %q by %q", res.Verified, res.VerifiedBy, c.method, c.by)
			}
		})
	}
}

// md5Echo is a store that takes its PutObject ETag from the Content-MD5 header sent, checks
// nothing, and keeps the body damaged: its ETag then equals the writer's MD5 though the bytes
// differ, so such an answer must not stand for the HEAD.
type md5Echo struct{ store.Store }

func (s md5Echo) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	if in.ContentMD5 == "" {
		return s.Store.PutObject(ctx, in)
	}
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	body[len(body)/2] ^= 0xff
	damaged := *in
	damaged.Body, damaged.ContentMD5 = bytes.NewReader(body), ""
	out, err := s.Store.PutObject(ctx, &damaged)
	if err != nil {
		return nil, err
	}
	sum, err := base64.StdEncoding.DecodeString(in.ContentMD5)
	if err != nil {
		return nil, err
	}
	o := *out
	o.ETag = hex.EncodeToString(sum)
	return &o, nil
}

// TestSinglePutDamagedNeverLands: a PUT body damaged or cut on the way to a store that checks
// nothing (no checksum can refuse it), answered 200 with the ETag of what it kept, with the
// saving on (the answer would stand for the HEAD) and off: never a success, and the damaged
// object does not stay at the key. A one-pass stream fails Integrity; an io.ReaderAt source is
// sent again and lands. A store echoing the Content-MD5 sent as its ETag is caught the same way.
func TestSinglePutDamagedNeverLands(t *testing.T) {
	data := randomBytes(t, 100<<10)
	flip, cut := faulty.FlipByte(), faulty.Truncate()
	for _, c := range []struct {
		name  string
		fault *faulty.Fault
		wrap  func(store.Store) store.Store
		opts  func(*writer.Options)
	}{
		{"flipped", &flip, nil, nil},
		{"truncated", &cut, nil, nil},
		{"Content-MD5 echoed as the ETag", nil, func(s store.Store) store.Store { return md5Echo{s} }, func(o *writer.Options) { o.ContentMD5 = true }},
	} {
		for _, saving := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/saving %v", c.name, saving), func(t *testing.T) {
				opts := []func(*writer.Options){func(o *writer.Options) {
					o.Retry = fastPolicy()
					if !saving {
						o.Savings &^= writer.SaveRereads
					}
				}}
				if c.opts != nil {
					opts = append(opts, c.opts)
				}
				build := func() (*memstore.Store, store.Store) {
					mem := newMem(ignoring)
					var st store.Store = mem
					if c.wrap != nil {
						st = c.wrap(mem)
					}
					if c.fault != nil {
						st = faulty.New(st, faulty.First(faulty.OpPutObject, 1, *c.fault))
					}
					return mem, st
				}
				mem, st := build()
				res, _, err := writeCounting(t, newUploader(t, st), "stream", data, opts...)
				if !errors.Is(err, sperrors.Integrity) {
					t.Fatalf("stream: result %+v, err %v: want Integrity", res, err)
				}
				mustBeAbsent(t, mem, "stream")

				if c.wrap != nil {
					return // every attempt is damaged: nothing lands
				}
				mem, st = build()
				res, err = writer.Upload(context.Background(), st, unitBucket, "file", bytes.NewReader(data), opts...)
				mustLand(t, mem, "file", data, res, err, verify.MethodETagMD5)
				if res.UploadAttempts < 2 && res.Failures[sperrors.Integrity] < 1 {
					t.Fatalf("landed in %d attempts with failures %v: the damaged attempt was not seen", res.UploadAttempts, res.Failures)
				}
			})
		}
	}
}
