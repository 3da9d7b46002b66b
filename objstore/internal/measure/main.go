// Command measure uploads one object through objstore's own S3 provider or through the
// safeput-backed Bucket, same server, same bytes, and prints throughput, client CPU per GiB, the
// process's peak RSS and what was verified. One upload per process, so the peak RSS is that
// upload's (plus the Go runtime's base).
//
//	measure -impl objstore|safeput -source stream|file -size BYTES [-file PATH]
//
// The server comes from SAFEPUT_S3_ENDPOINT, _REGION, _ACCESS_KEY and _SECRET_KEY (as
// scripts/with-s3.sh exports them); the bucket "measure" is created when missing. A file source
// is written first when PATH does not exist, by a separate run (-make-file) so its writing is not
// counted.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/go-kit/log"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/s3"

	safeobjstore "github.com/safeput/safeput/objstore"
	"github.com/safeput/safeput/writer"
)

const bucket = "measure"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

func run() error {
	impl := flag.String("impl", "safeput", "objstore or safeput")
	source := flag.String("source", "stream", "stream (unknown size) or file")
	size := flag.Int64("size", 256<<20, "bytes")
	path := flag.String("file", "/tmp/safeput-measure.bin", "the file source")
	makeFile := flag.Bool("make-file", false, "only write the file source")
	profile := flag.String("profile", "minio", "safeput profile")
	flag.Parse()
	if *makeFile {
		f, err := os.Create(*path)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, io.LimitReader(newGen(), *size)); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}

	endpoint := os.Getenv("SAFEPUT_S3_ENDPOINT")
	cfg := s3.DefaultConfig
	cfg.PutUserMetadata = map[string]string{}
	cfg.Bucket = bucket
	cfg.Endpoint = strings.TrimPrefix(endpoint, "http://")
	cfg.Insecure = strings.HasPrefix(endpoint, "http://")
	cfg.Region = os.Getenv("SAFEPUT_S3_REGION")
	cfg.AccessKey = os.Getenv("SAFEPUT_S3_ACCESS_KEY")
	cfg.SecretKey = os.Getenv("SAFEPUT_S3_SECRET_KEY")
	cfg.BucketLookupType = s3.PathLookup
	ctx := context.Background()

	mc, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: !cfg.Insecure, Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return err
	}
	if ok, err := mc.BucketExists(ctx, bucket); err != nil {
		return err
	} else if !ok {
		if err := mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			return err
		}
	}

	var bkt objstore.Bucket
	verified := "Content-MD5 of each request, checked by the server; nothing after commit"
	var method string
	switch *impl {
	case "objstore":
		b, err := s3.NewBucketWithConfig(log.NewNopLogger(), cfg, "measure", nil)
		if err != nil {
			return err
		}
		bkt = b
	case "safeput":
		b, err := safeobjstore.NewBucketWithConfig(log.NewNopLogger(), cfg, "measure", nil,
			safeobjstore.WithUploaderOptions(func(o *writer.Options) {
				o.Profile = *profile
				o.Observer = func(e writer.Event) {
					if e.Type == writer.EventDone {
						method = string(e.Method)
					}
				}
			}))
		if err != nil {
			return err
		}
		bkt = b
	default:
		return fmt.Errorf("unknown -impl %q", *impl)
	}

	var r io.Reader
	switch *source {
	case "stream":
		r = opaque{io.LimitReader(newGen(), *size)}
	case "file":
		f, err := os.Open(*path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		r = f
	default:
		return fmt.Errorf("unknown -source %q", *source)
	}

	before := cpu()
	start := time.Now()
	if err := bkt.Upload(ctx, fmt.Sprintf("%s-%s", *impl, *source), r); err != nil {
		return err
	}
	elapsed := time.Since(start)
	used := cpu() - before
	if *impl == "safeput" {
		verified = "after commit: " + method + " (and each part's checksum before commit)"
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	gib := float64(*size) / (1 << 30)
	fmt.Printf("%s\t%s\t%d MiB\t%.1f MiB/s\tCPU %.2f s/GiB\tpeak RSS %d MiB\t%s\n", *impl, *source, *size>>20,
		float64(*size)/(1<<20)/elapsed.Seconds(), used.Seconds()/gib, ru.Maxrss>>10, verified)
	return nil
}

// cpu is the process's user plus system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// opaque hides the size: a stream of unknown length.
type opaque struct{ r io.Reader }

func (o opaque) Read(p []byte) (int, error) { return o.r.Read(p) }

// gen yields a 1 MiB random block over and over, each copy stamped with its number so no two
// parts are alike, at memory speed.
type gen struct {
	block []byte
	n     uint64
	off   int
}

func newGen() *gen {
	b := make([]byte, 1<<20)
	rand.New(rand.NewSource(1)).Read(b)
	return &gen{block: b}
}

func (g *gen) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if g.off == len(g.block) {
		g.off = 0
		g.n++
	}
	if g.off == 0 {
		for i := range 8 {
			g.block[i] = byte(g.n >> (8 * i))
		}
	}
	n := copy(p, g.block[g.off:])
	g.off += n
	return n, nil
}
