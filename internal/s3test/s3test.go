// Package s3test connects integration tests to the real S3 server that scripts/test.sh starts
// (Versity S3 Gateway), through the SAFEPUT_S3_* environment variables.
//
// When the server is missing, a test fails under CI=true and skips elsewhere (so `go test ./...`
// on a laptop without the script still runs the unit tests).
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Server is how to reach the test S3 server.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	Region    string
	AccessKey string
	SecretKey string
}

// Lookup returns the server from the environment, and whether one is configured.
func Lookup() (Server, bool) {
	s := Server{
		Endpoint:  os.Getenv("SAFEPUT_S3_ENDPOINT"),
		Region:    os.Getenv("SAFEPUT_S3_REGION"),
		AccessKey: os.Getenv("SAFEPUT_S3_ACCESS_KEY"),
		SecretKey: os.Getenv("SAFEPUT_S3_SECRET_KEY"),
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	return s, s.Endpoint != "" && s.AccessKey != "" && s.SecretKey != ""
}

// Require returns the server, or ends the test: Fatal under CI=true, Skip elsewhere.
func Require(t testing.TB) Server {
	t.Helper()
	s, ok := Lookup()
	if ok {
		return s
	}
	const msg = "no S3 server: run the README test command (scripts/test.sh), which starts one and sets SAFEPUT_S3_*"
	if os.Getenv("CI") != "" && os.Getenv("CI") != "false" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return s
}

// RawClient is a plain aws-sdk-go-v2 client for test set-up and independent checks (bucket
// creation, reading back, listing uploads), so a test never checks an adapter with itself.
func (s Server) RawClient() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		// Only what tests ask for: no default CRC trailers.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// NewBucket creates a bucket with a unique name for this test.
func NewBucket(t testing.TB, s Server) string {
	t.Helper()
	name := BucketName(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.RawClient().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// BucketName turns a test name into a valid, unique bucket name.
func BucketName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	prefix := strings.Trim(b.String(), "-")
	if prefix == "" {
		prefix = "t"
	}
	var suffix [5]byte
	_, _ = rand.Read(suffix[:])
	return prefix + "-" + hex.EncodeToString(suffix[:])
}

// ReadAll reads bucket/key back with the raw client.
func ReadAll(t testing.TB, s Server, bucket, key string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := s.RawClient().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("read back %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("read back %s/%s: %v", bucket, key, err)
	}
	return data
}

// Exists reports whether bucket/key exists, via the raw client.
func Exists(t testing.TB, s Server, bucket, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.RawClient().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

// IncompleteUploads lists incomplete multipart uploads under prefix, via the raw client.
func IncompleteUploads(t testing.TB, s Server, bucket, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)}
	for {
		out, err := s.RawClient().ListMultipartUploads(ctx, in)
		if err != nil {
			t.Fatalf("list uploads %s/%s: %v", bucket, prefix, err)
		}
		for _, u := range out.Uploads {
			ids = append(ids, aws.ToString(u.Key)+"@"+aws.ToString(u.UploadId))
		}
		if !aws.ToBool(out.IsTruncated) {
			return ids
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// RandomBytes returns n bytes of non-compressible data.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
