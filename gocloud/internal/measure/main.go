// Command measure writes one object through gocloud's s3blob ("s3://") or through safeblob
// ("safes3://"), the same URL but for its scheme, same server, same bytes, and prints the time,
// throughput, client CPU per GiB, the process's peak RSS and what was verified. One write per
// process, so the peak RSS is that write's (plus the Go runtime's base).
//
//	measure -impl s3blob|safeblob -source stream|file -size BYTES [-file PATH]
//
// The server comes from SAFEPUT_S3_ENDPOINT, _REGION, _ACCESS_KEY and _SECRET_KEY (as
// scripts/with-s3.sh exports them); the bucket "measure-gocloud" is created when missing. A
// file source is written first by a separate run (-make-file) so its writing is not counted.
// measure.sh runs the whole comparison and writes gocloud/measurements.txt.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // registers s3://

	safeblob "github.com/safeput/safeput/gocloud"
	"github.com/safeput/safeput/writer"
)

const bucket = "measure-gocloud"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

func run() error {
	impl := flag.String("impl", "safeblob", "s3blob or safeblob")
	source := flag.String("source", "stream", "stream (blob.Writer fed by io.Copy, size unknown) or file (blob.Bucket.Upload of an *os.File)")
	size := flag.Int64("size", 256<<20, "bytes")
	path := flag.String("file", "/tmp/safeput-measure-gocloud.bin", "the file source")
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

	endpoint, region := os.Getenv("SAFEPUT_S3_ENDPOINT"), os.Getenv("SAFEPUT_S3_REGION")
	if endpoint == "" {
		return errors.New("SAFEPUT_S3_ENDPOINT is not set (run under scripts/with-s3.sh)")
	}
	// The credentials a gocloud program takes from its environment.
	_ = os.Setenv("AWS_ACCESS_KEY_ID", os.Getenv("SAFEPUT_S3_ACCESS_KEY"))
	_ = os.Setenv("AWS_SECRET_ACCESS_KEY", os.Getenv("SAFEPUT_S3_SECRET_KEY"))
	ctx := context.Background()
	if err := makeBucket(ctx, endpoint, region); err != nil {
		return err
	}

	// The same URL for both; only the scheme differs.
	query := url.Values{"endpoint": {endpoint}, "region": {region}, "use_path_style": {"true"},
		"request_checksum_calculation": {"when_required"}, "response_checksum_validation": {"when_required"}}
	u := &url.URL{Scheme: "s3", Host: bucket, RawQuery: query.Encode()}
	var bkt *blob.Bucket
	var err error
	verified := "nothing checked after commit (the transfer manager, request_checksum_calculation=when_required as in the URL)"
	var method string
	switch *impl {
	case "s3blob":
		bkt, err = blob.OpenBucket(ctx, u.String())
	case "safeblob":
		u.Scheme = safeblob.Scheme
		// URLOpener with the measure's options: what blob.OpenBucket("safes3://...") opens, plus
		// the profile and an observer that learns what was verified.
		o := &safeblob.URLOpener{Safeput: []safeblob.Option{safeblob.WithUploaderOptions(func(o *writer.Options) {
			o.Profile = *profile
			o.Observer = func(e writer.Event) {
				if e.Type == writer.EventDone {
					method = string(e.Method)
				}
			}
		})}}
		bkt, err = o.OpenBucketURL(ctx, u)
	default:
		return fmt.Errorf("unknown -impl %q", *impl)
	}
	if err != nil {
		return err
	}
	defer func() { _ = bkt.Close() }()

	key := fmt.Sprintf("%s-%s", *impl, *source)
	opts := &blob.WriterOptions{ContentType: "application/octet-stream"}
	before := cpu()
	start := time.Now()
	switch *source {
	case "stream":
		w, err := bkt.NewWriter(ctx, key, opts)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, opaque{io.LimitReader(newGen(), *size)}); err != nil {
			_ = w.Close()
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
	case "file":
		f, err := os.Open(*path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		if err := bkt.Upload(ctx, key, f, opts); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown -source %q", *source)
	}
	elapsed := time.Since(start)
	used := cpu() - before
	if *impl == "safeblob" {
		verified = "after commit: " + method + " (and each part's checksum before commit)"
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	gib := float64(*size) / (1 << 30)
	fmt.Printf("%s\t%s\t%d MiB\t%.2f s\t%.1f MiB/s\tCPU %.2f s/GiB\tpeak RSS %d MiB\t%s\n", *impl, *source, *size>>20,
		elapsed.Seconds(), float64(*size)/(1<<20)/elapsed.Seconds(), used.Seconds()/gib, ru.Maxrss>>10, verified)
	return nil
}

// makeBucket creates the bucket when missing.
func makeBucket(ctx context.Context, endpoint, region string) error {
	c := s3.New(s3.Options{BaseEndpoint: aws.String(endpoint), Region: region, UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}, nil
		})})
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		return nil
	}
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	return err
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
	rand.New(rand.NewSource(1)).Read(b) //nolint:gosec // test data
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
