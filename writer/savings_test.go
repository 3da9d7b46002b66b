package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store/storetest/faulty"
	"github.com/safeput/safeput/store/storetest/memstore"
	"github.com/safeput/safeput/store/storetest/s3test"
	"github.com/safeput/safeput/store/storetest/testkit"
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
			savings := writer.SaveLateMD5 | writer.SaveProbe | writer.SaveEchoTrust | writer.SavePrefault // the default
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
					t.Fatalf("savings %04b: landed, but not the bytes written, or not proven (%s)", savings, res.Verified)
				}
			case !errors.Is(err, sperrors.Integrity):
				t.Fatalf("savings %04b: %v, want Integrity", savings, err)
			default:
				mustBeAbsent(t, mem, "k")
			}
			if ups := mem.Uploads(unitBucket); len(ups) != 0 {
				t.Fatalf("savings %04b: incomplete uploads left: %+v", savings, ups)
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
