package writer_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// heapObjects is the bytes of heap objects, live or not yet swept.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapAllocs is the cumulative count of bytes the Go heap has handed out.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A stream upload holds at most concurrency × part size of part buffers, reused from part to
// part: what it allocates must not grow with the object. Allocated bytes are deterministic
// enough to assert (unlike time); the peak live heap is sampled and bounded too. The slack
// covers per-request garbage (about 0.1 MiB a part when measured: 21.3–21.9 MiB allocated for
// 24 parts of 5 MiB × 4) with room for the adapters to change; a pool that stopped reusing its
// buffers would allocate the whole 120 MiB object.
func TestStreamMemoryBound(t *testing.T) { testStreamMemoryBound(t, testkit.ForEachSerial, 0) }

// TestStreamMemoryBoundTLS holds the same bound over TLS, the adapters trusting the run's CA.
// Under -race only, crypto/tls's per-record buffers come from a sync.Pool that drops a quarter
// of what is put back, so about a quarter of the bytes sent is allocated again (measured: 40 MiB
// allocated for this upload instead of 22 MiB); the bound then allows that much more, still far
// below the 120 MiB a pool that stopped reusing part buffers would allocate.
func TestStreamMemoryBoundTLS(t *testing.T) {
	slack := 0
	if raceEnabled {
		slack = streamBoundSize / 4
	}
	testStreamMemoryBound(t, testkit.ForEachSerialTLS, slack)
}

const streamBoundSize = 24 * 5 << 20

func testStreamMemoryBound(t *testing.T, each func(*testing.T, func(*testing.T, testkit.Env)), slack int) {
	const partSize, conc, parts = 5 << 20, 4, 24
	const size = parts * partSize
	bound := uint64(conc*partSize + 8<<20 + slack)
	each(t, func(t *testing.T, env testkit.Env) {
		runtime.GC()
		base := heapObjects() // what earlier tests still hold is not this upload's
		s := sampleHeap()
		before := heapAllocs()
		res, err := writer.Upload(context.Background(), env.Store, env.Bucket, "bound", newGen(size),
			func(o *writer.Options) { o.Profile = env.Profile(); o.PartSize = partSize; o.Concurrency = conc })
		allocated := heapAllocs() - before
		top := s.Stop()
		peak := top - min(base, top)
		if err != nil {
			t.Fatal(err)
		}
		if res.Size != size || !res.VerifiedStrong {
			t.Fatalf("size %d verified %s", res.Size, res.Verified)
		}
		t.Logf("%s: %d MiB in %d parts of %d MiB × %d: allocated %.1f MiB, peak heap %.1f MiB over the %.1f MiB before",
			env.Adapter, size>>20, parts, partSize>>20, conc, float64(allocated)/(1<<20), float64(peak)/(1<<20), float64(base)/(1<<20))
		if allocated > bound {
			t.Errorf("allocated %d bytes during the upload, want ≤ concurrency × part size + 8 MiB (+ %d under -race over TLS) = %d", allocated, slack, bound)
		}
		if peak > bound {
			t.Errorf("peak heap %d bytes over the start, want ≤ concurrency × part size + 8 MiB (+ %d under -race over TLS) = %d", peak, slack, bound)
		}
	})
}
