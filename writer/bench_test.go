package writer_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// genReader yields n bytes of non-compressible data without holding them, so the heap measured
// is the writer's, not the source's.
type genReader struct {
	rng  *rand.ChaCha8
	left int64
}

func newGen(n int64) *genReader { return &genReader{rng: rand.NewChaCha8([32]byte{1}), left: n} }

func (g *genReader) Read(p []byte) (int, error) {
	if g.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	_, _ = g.rng.Read(p)
	g.left -= int64(len(p))
	return len(p), nil
}

// heapSampler records the peak of live heap objects while a benchmark runs.
type heapSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done sync.WaitGroup
}

func sampleHeap() *heapSampler {
	s := &heapSampler{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > s.peak.Load() {
				s.peak.Store(v)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *heapSampler) Stop() uint64 {
	close(s.stop)
	s.done.Wait()
	return s.peak.Load()
}

// BenchmarkUploadPeakHeap streams 256 MiB and 1 GiB through each adapter at 16 MiB × 4 and
// reports the peak live heap, for larger objects than the test suite uploads; the bound itself
// is asserted by TestStreamMemoryBound. Run: bash scripts/with-s3.sh go test -run=^$ -bench=PeakHeap ./writer/
func BenchmarkUploadPeakHeap(b *testing.B) {
	srv, ok := s3test.Lookup()
	if !ok {
		b.Skip("no S3 server: run under scripts/with-s3.sh")
	}
	const partSize, conc = 16 << 20, 4
	for _, a := range testkit.Adapters {
		st, err := a.New(srv)
		if err != nil {
			b.Fatal(err)
		}
		bucket := s3test.NewBucket(b, srv)
		for _, size := range []int64{256 << 20, 1 << 30} {
			b.Run(fmt.Sprintf("%s/%dMiB", a.Name, size>>20), func(b *testing.B) {
				b.SetBytes(size)
				var peak uint64
				for i := 0; i < b.N; i++ {
					runtime.GC()
					s := sampleHeap()
					res, err := writer.Upload(context.Background(), st, bucket, "peak", newGen(size),
						func(o *writer.Options) { o.Profile = "versitygw"; o.PartSize = partSize; o.Concurrency = conc })
					peak = max(peak, s.Stop())
					if err != nil {
						b.Fatal(err)
					}
					if res.Size != size || !res.VerifiedStrong {
						b.Fatalf("size %d verified %s", res.Size, res.Verified)
					}
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			})
		}
	}
}

// BenchmarkBudget is the part-buffer pool's get/put cost once warm.
func BenchmarkBudget(b *testing.B) {
	budget, _ := writer.NewBudget(64 << 20)
	b.ReportAllocs()
	for b.Loop() {
		writer.BudgetRoundTrip(budget, 16<<20)
	}
}
