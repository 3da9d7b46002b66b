package integrity

import (
	"crypto/md5" //nolint:gosec // the ETag evidence path is MD5.
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
)

const (
	benchPart  = 16 << 20 // the writer's default part size
	benchParts = 4        // its default concurrency
	gib        = 1 << 30
)

// cpuTime is the process's user+system CPU time: the cost of a path, whatever its parallelism.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchEvidence runs fn over bytesPerOp bytes per iteration and reports CPU ms per GiB hashed.
func benchEvidence(b *testing.B, bytesPerOp int64, fn func()) {
	b.SetBytes(bytesPerOp)
	b.ResetTimer()
	start := cpuTime(b)
	for b.Loop() {
		fn()
	}
	spent := cpuTime(b) - start
	b.ReportMetric(float64(spent.Milliseconds())/(float64(bytesPerOp)*float64(b.N)/gib), "cpu-ms/GiB")
}

// BenchmarkEvidence is the CPU cost per GiB of each evidence path the writer computes as the
// bytes pass: the CRC64NVME it always computes, the body MD5 of a single PUT, and the part MD5s
// of a multipart upload (hashed in parallel, one goroutine per part, as the part goroutines do,
// then combined into the MD5-of-MD5s-N ETag).
//
//	go test -run '^$' -bench BenchmarkEvidence -benchtime 2s ./verify/
func BenchmarkEvidence(b *testing.B) {
	parts := make([][]byte, benchParts)
	for i := range parts {
		parts[i] = make([]byte, benchPart)
		for j := range parts[i] {
			parts[i][j] = byte(i*31 + j*7)
		}
	}
	b.Run("crc64nvme", func(b *testing.B) {
		benchEvidence(b, benchPart, func() { _ = ChecksumOf(store.ChecksumCRC64NVME, parts[0]) })
	})
	b.Run("md5-single", func(b *testing.B) {
		benchEvidence(b, benchPart, func() { _ = md5.Sum(parts[0]) }) //nolint:gosec // see import
	})
	b.Run("md5-parts-parallel", func(b *testing.B) {
		sums := make([][md5.Size]byte, benchParts)
		benchEvidence(b, benchPart*benchParts, func() {
			var wg sync.WaitGroup
			for i := range parts {
				wg.Go(func() { sums[i] = md5.Sum(parts[i]) }) //nolint:gosec // see import
			}
			wg.Wait()
			_ = MultipartETag(sums)
		})
	})
}
