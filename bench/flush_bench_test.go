package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/storetest/s3test"
)

// BenchmarkFlush is the flush workload in go test's form, for benchstat and pprof: 16 goroutines
// share each implementation's one client and write objects of 4 KiB, 64 KiB and 1 MiB to the test
// server on loopback (scripts/with-s3.sh), one object per op. cpu-ms/object is this process's
// user + system time per object; srv-ms/object the server process's (from the PID
// scripts/with-s3.sh exports), which is where a checksum header's cost shows. The objects are
// not read back (TestFlushTiny and the flush section do that). For example:
//
//	TMPDIR=/dev/shm SAFEPUT_S3_START=minio bash scripts/with-s3.sh bash -c 'cd bench && go test -run ^$ -bench "Flush/^impl=(safeput:minio|minio-go|minio-go\+md5)$/^size=4KiB$" -benchtime 3000x -count 10 . | tee flush.txt'
//	benchstat -col /impl flush.txt
func BenchmarkFlush(b *testing.B) {
	srv := s3test.Require(b)
	serverPID, _ := strconv.Atoi(os.Getenv(ServerVar(srv.Name) + "_PID")) // 0: not reported
	bucket := s3test.NewBucket(b, srv)
	ctx := context.Background()
	for _, im := range FlushImpls() {
		put, err := im.New(srv, bucket, Params{Signing: SigningUnsigned})
		if err != nil {
			b.Fatal(err)
		}
		for _, size := range []int64{4 << 10, 64 << 10, 1 << 20} {
			base := newFlushBase(size)
			b.Run(fmt.Sprintf("impl=%s/size=%s", strings.ReplaceAll(im.Name, "/", ":"), strings.ReplaceAll(bytesize.Format(size), " ", "")), func(b *testing.B) {
				b.SetBytes(size)
				b.ReportAllocs()
				b.SetParallelism(8) // 16 workers on 2 cores
				var next atomic.Int64
				cpu0, srv0 := selfCPU(), procCPU(serverPID)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := int(next.Add(1))
						if _, err := put(ctx, fmt.Sprintf("gobench/%s/%d/%d", im.Name, size, i%512), base.body(i)); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64((selfCPU()-cpu0).Microseconds())/1e3/float64(b.N), "cpu-ms/object")
				if srv1 := procCPU(serverPID); srv0 >= 0 && srv1 >= 0 {
					b.ReportMetric(1e3*(srv1-srv0)/float64(b.N), "srv-ms/object")
				}
			})
		}
	}
}
