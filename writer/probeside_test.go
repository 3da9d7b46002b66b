package writer_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// probeRacer holds the checksum probe (the tiny part 1) until the write's own part 1 has been
// stored, or for hold (5 s unless set), so the probe's part lands after it where the store keeps it; lacksList
// answers ListParts 405, as s3rver does, so no listing can catch the order afterwards.
type probeRacer struct {
	store.Store
	lacksList   bool
	hold        time.Duration
	part1Stored chan struct{}
	once        sync.Once
	part1Sends  atomic.Int32
	heldForIt   atomic.Bool // the probe was released by part 1's storing, not by the timeout
}

func newProbeRacer(st store.Store, lacksList bool) *probeRacer {
	return &probeRacer{Store: st, lacksList: lacksList, hold: 5 * time.Second, part1Stored: make(chan struct{})}
}

func (s *probeRacer) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	if in.PartNumber == 1 && in.ContentLength < 1024 { // the probe
		select {
		case <-s.part1Stored:
			s.heldForIt.Store(true)
		case <-time.After(s.hold):
		}
		return s.Store.UploadPart(ctx, in)
	}
	out, err := s.Store.UploadPart(ctx, in)
	if in.PartNumber == 1 && err == nil {
		s.part1Sends.Add(1)
		s.once.Do(func() { close(s.part1Stored) })
	}
	return out, err
}

func (s *probeRacer) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	if s.lacksList {
		return nil, &store.ResponseError{StatusCode: 405, Code: "MethodNotAllowed", Message: "not supported"}
	}
	return s.Store.ListParts(ctx, in)
}

// TestPartOneBesideTheProbe: from an io.ReaderAt source, the write's part 1 goes beside the
// checksum probe instead of after its answer (probe.go). On a store that checks, the probe is
// refused and part 1 is sent once. On one that checks nothing, the probe's part may land after
// part 1, so part 1 is sent again once the probe has its answer: the object is the bytes
// written even on a store that cannot list parts, where nothing else would see the order.
func TestPartOneBesideTheProbe(t *testing.T) {
	data := randomBytes(t, 3*5*mib+77)
	opts := func(o *writer.Options) { o.PartSize, o.Concurrency = 5*mib, 3 }
	for _, c := range []struct {
		name  string
		store func() *probeRacer
		sends int32
	}{
		{"checks part checksums", func() *probeRacer { return newProbeRacer(newMem(minioLike), false) }, 1},
		{"checks nothing, cannot list parts", func() *probeRacer { return newProbeRacer(newMem(cephLike), true) }, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := c.store()
			res, err := newUploader(t, st).Upload(context.Background(), unitBucket, "k", bytes.NewReader(data), opts)
			if err != nil {
				t.Fatalf("write failed: %v", err)
			}
			mem := st.Store.(interface {
				Object(bucket, key string) ([]byte, bool)
			})
			if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, data) || !res.VerifiedStrong {
				t.Fatalf("landed %v, verified %s: want the bytes written, proven", ok, res.Verified)
			}
			if !st.heldForIt.Load() {
				t.Fatal("part 1 waited for the probe's answer (the probe was released by the timeout)")
			}
			if n := st.part1Sends.Load(); n != c.sends {
				t.Fatalf("part 1 sent %d times, want %d", n, c.sends)
			}
		})
	}
	// A stream's part 1 is a buffer, gone once sent: it still waits for the probe's answer.
	t.Run("stream waits", func(t *testing.T) {
		st := newProbeRacer(newMem(minioLike), false)
		st.hold = 300 * time.Millisecond
		start := time.Now()
		_, err := newUploader(t, st).Upload(context.Background(), unitBucket, "k", struct{ io.Reader }{bytes.NewReader(data)}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if st.heldForIt.Load() || time.Since(start) < st.hold {
			t.Fatal("a stream's part 1 went before the probe's answer")
		}
	})
}
