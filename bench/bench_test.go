package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/storetest/s3test"
)

// envSize reads a size such as "64MiB" from the environment.
func envSize(b *testing.B, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := bytesize.Parse(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a size such as 64MiB", name, v)
	}
	return n
}

// BenchmarkUpload is an end-to-end upload through each implementation against the test server,
// in this process, for benchstat (scripts/bench.sh runs it with BENCH_GO=1). Size and settings
// come from SAFEPUT_BENCH_SIZE (default 32MiB), SAFEPUT_BENCH_PART (16MiB) and
// SAFEPUT_BENCH_CONC (4). The read-back check runs outside the timer, once per benchmark.
func BenchmarkUpload(b *testing.B) {
	srv := s3test.Require(b)
	size := envSize(b, "SAFEPUT_BENCH_SIZE", 32<<20)
	params := Params{PartSize: envSize(b, "SAFEPUT_BENCH_PART", 16<<20), Concurrency: 4, Signing: SigningUnsigned}
	if c := os.Getenv("SAFEPUT_BENCH_CONC"); c != "" {
		if _, err := fmt.Sscan(c, &params.Concurrency); err != nil || params.Concurrency < 1 {
			b.Fatalf("SAFEPUT_BENCH_CONC=%q: want a positive integer", c)
		}
	}
	bucket := s3test.NewBucket(b, srv)
	data, err := Generate(b.TempDir(), size)
	if err != nil {
		b.Fatal(err)
	}
	raw := srv.RawClient()
	ctx := context.Background()
	for _, kind := range []string{SourceStream, SourceReaderAt} {
		for _, im := range Impls() {
			b.Run(fmt.Sprintf("src=%s/impl=%s", kind, im.Name), func(b *testing.B) {
				up, err := im.New(srv, bucket, params)
				if err != nil {
					b.Fatal(err)
				}
				key := fmt.Sprintf("gobench/%s/%s", im.Name, kind)
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					src, closer, err := Open(data.Path, data.Size, kind)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					_, err = up(ctx, key, src)
					b.StopTimer()
					_ = closer.Close()
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.StopTimer()
				if err := CheckObject(ctx, raw, bucket, key, data); err != nil {
					b.Fatal(err)
				}
				_, _ = raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
			})
		}
	}
}
