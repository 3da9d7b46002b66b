package writer_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/safeput/safeput/store/memstore"
	"github.com/safeput/safeput/writer"
)

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDefaultsHashing is the process CPU per GiB of a 128 MiB stream written at defaults (no
// profile, 16 MiB × 4) to the in-memory store, as the store personality of MinIO and the gateway
// (echoes the checksum, HEAD reports it) and of Ceph RGW 16.2 (ignores checksum headers): through
// a fresh Uploader per write (the CLI: one write per process) and through one shared Uploader
// (a program's later writes). The store's own work (copying, its MD5 ETags) is in the figure
// and the same before and after a change of the writer's hashing; compare runs with benchstat:
//
//	go test -run '^$' -bench BenchmarkDefaultsHashing -count 6 ./writer/ > new.txt; benchstat old.txt new.txt
func BenchmarkDefaultsHashing(b *testing.B) {
	const size = 128 << 20
	for _, c := range []struct {
		name  string
		rules memstore.Rules
	}{{"echoing", minioLike}, {"ignoring", cephLike}} {
		for _, shared := range []bool{false, true} {
			name := c.name + "/fresh-uploader"
			if shared {
				name = c.name + "/shared-uploader"
			}
			b.Run(name, func(b *testing.B) {
				mem := newMem(c.rules)
				var u *writer.Uploader
				if shared {
					u = benchUploader(b, mem)
					// The shared Uploader's first write has taught it the endpoint.
					if _, err := u.Upload(context.Background(), unitBucket, "k", newGen(size)); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(size)
				b.ResetTimer()
				start := processCPU(b)
				for b.Loop() {
					up := u
					if up == nil {
						up = benchUploader(b, mem)
					}
					if _, err := up.Upload(context.Background(), unitBucket, "k", newGen(size)); err != nil {
						b.Fatal(err)
					}
				}
				spent := processCPU(b) - start
				b.ReportMetric(float64(spent.Milliseconds())/(float64(size)*float64(b.N)/(1<<30)), "cpu-ms/GiB")
			})
		}
	}
}

func benchUploader(b *testing.B, mem *memstore.Store) *writer.Uploader {
	u, err := writer.NewUploader(mem)
	if err != nil {
		b.Fatal(err)
	}
	return u
}
