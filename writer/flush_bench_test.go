package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/safeput/safeput/writer"
)

// BenchmarkSmallWrites is the writer's CPU and allocation per object in a flush: 16 goroutines
// sharing one Uploader at its defaults write small objects, through Upload of a *bytes.Reader
// (size known) and through New, one Write, Close (a stream of unknown size, the io.Writer path),
// to a store that keeps nothing and makes MD5 ETags (parrotStore; the MD5 it takes of every body
// is in the figure, the same before and after any change of the writer): one that ignores
// checksum headers (Ceph RGW 16.2: every write is proven by its answer's MD5 ETag), and one that
// checks them and echoes them (MinIO, the gateway: once the Uploader's probe showed it checks,
// a write is proven by the echo in its answer and takes no MD5). Each write is one PutObject.
// Compare runs with benchstat:
//
//	go test -run '^$' -bench BenchmarkSmallWrites -count 6 ./writer/ > new.txt; benchstat old.txt new.txt
func BenchmarkSmallWrites(b *testing.B) {
	for _, checks := range []bool{false, true} {
		for _, path := range []string{"upload", "writer"} {
			for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
				b.Run(fmt.Sprintf("%s/%s/%dKiB", map[bool]string{false: "ignoring", true: "checking"}[checks], path, size>>10), func(b *testing.B) {
					smallWrites(b, &parrotStore{echo: checks}, path, size)
				})
			}
		}
	}
}

// smallWrites is one row of BenchmarkSmallWrites: objects of size bytes through one fresh
// Uploader of st, by Upload of a *bytes.Reader or by New, Write and Close (path).
func smallWrites(b *testing.B, st *parrotStore, path string, size int) {
	u := benchUploader(b, st)
	body := bytes.Repeat([]byte("flush"), size/5+1)[:size]
	write := func(ctx context.Context) (*writer.Result, error) {
		if path == "upload" {
			return u.Upload(ctx, "b", "k", bytes.NewReader(body))
		}
		w, err := u.New(ctx, "b", "k")
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(body); err != nil {
			_ = w.Abort(ctx)
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return w.Result(), nil
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.SetParallelism(8) // 16 writers on 2 cores, as the bench's flush runs them
	b.ResetTimer()
	start := processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			res, err := write(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if res.Size != int64(size) || !res.VerifiedStrong || res.Requests != 1 {
				b.Errorf("size %d, verified %s, %d requests: want %d bytes in one PutObject, verified strong", res.Size, res.Verified, res.Requests, size)
				return
			}
		}
	})
	b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/object")
}
