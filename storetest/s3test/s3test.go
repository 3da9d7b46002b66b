// Package s3test connects integration tests to the real S3 servers that scripts/test.sh starts
// (Versity S3 Gateway, MinIO and Ceph RGW), through the SAFEPUT_S3_* environment variables that
// scripts/s3server.sh documents.
//
// When no server is configured, a test fails under CI=true and skips elsewhere (so `go test ./...`
// on a laptop without the script still runs the unit tests).
//
// Test support, outside safeput's compatibility promise (see package storetest).
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Names of the servers the test command starts; tests key server-specific facts by them.
const (
	VersityGW = "versitygw"
	MinIO     = "minio"
	Ceph      = "ceph" // Ceph RADOS Gateway
)

// External names a server given only by SAFEPUT_S3_ENDPOINT (no SAFEPUT_S3_SERVERS): a store
// the tests know nothing specific about.
const External = "external"

// Server is how to reach one test S3 server.
type Server struct {
	Name      string // VersityGW, MinIO, External, ...
	Endpoint  string // http://127.0.0.1:PORT
	Region    string
	AccessKey string
	SecretKey string
	// CABundle is the PEM CA that signs the endpoint's certificate, for an https endpoint with a
	// private CA (TLSFront); empty for plain HTTP.
	CABundle []byte
	plain    string // the plain endpoint behind a TLSFront
}

func (s Server) complete() bool {
	return s.Endpoint != "" && s.AccessKey != "" && s.SecretKey != ""
}

func serverFromEnv(name, prefix string) Server {
	s := Server{
		Name:      name,
		Endpoint:  os.Getenv(prefix + "ENDPOINT"),
		Region:    os.Getenv(prefix + "REGION"),
		AccessKey: os.Getenv(prefix + "ACCESS_KEY"),
		SecretKey: os.Getenv(prefix + "SECRET_KEY"),
	}
	if s.Region == "" {
		s.Region = "us-east-1"
	}
	return s
}

var nonAlnum = regexp.MustCompile(`[^A-Z0-9]`)

// LookupAll returns every configured server, in the script's order. SAFEPUT_S3_SERVERS lists them
// (SAFEPUT_S3_<NAME>_* each); it is believed only when its first server is the one
// SAFEPUT_S3_ENDPOINT names, so a user who points SAFEPUT_S3_ENDPOINT at another store gets that
// store alone even with a stale list in the environment.
func LookupAll() []Server {
	single := serverFromEnv(External, "SAFEPUT_S3_")
	var list []Server
	for _, name := range strings.Split(os.Getenv("SAFEPUT_S3_SERVERS"), ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		s := serverFromEnv(name, "SAFEPUT_S3_"+nonAlnum.ReplaceAllString(strings.ToUpper(name), "_")+"_")
		if s.complete() {
			list = append(list, s)
		}
	}
	if len(list) > 0 && (single.Endpoint == "" || list[0].Endpoint == single.Endpoint) {
		return list
	}
	if single.complete() {
		return []Server{single}
	}
	return nil
}

// Lookup returns the first server, and whether one is configured.
func Lookup() (Server, bool) {
	all := LookupAll()
	if len(all) == 0 {
		return Server{}, false
	}
	return all[0], true
}

const noServerMsg = "no S3 server: run the README test command (scripts/test.sh), which starts them and sets SAFEPUT_S3_*"

// Servers returns the servers a test runs on once each (ForEach's), or ends the test: Fatal
// under CI=true, Skip elsewhere. SAFEPUT_S3_MATRIX (a comma-separated list of names) narrows it
// to those: the test command runs the root module's tests once under -race on one server and
// once without -race on the others (scripts/test.sh says why). A name in it that is not
// configured is an error, not a silent narrowing to nothing.
func Servers(t testing.TB) []Server {
	t.Helper()
	noteAsked(t)
	all := LookupAll()
	if len(all) == 0 {
		noServer(t)
	}
	only := os.Getenv("SAFEPUT_S3_MATRIX")
	if only == "" {
		return all
	}
	var picked []Server
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, s := range all {
			if s.Name == name {
				picked, found = append(picked, s), true
			}
		}
		if !found && name != "" {
			t.Fatalf("SAFEPUT_S3_MATRIX names %q, which is not among the configured servers %v", name, serverNames(all))
		}
	}
	if len(picked) == 0 {
		t.Fatal("SAFEPUT_S3_MATRIX names no server")
	}
	return picked
}

func serverNames(servers []Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Name
	}
	return out
}

// Require returns the first configured server (for code that runs on one, like the benchmark
// harness; SAFEPUT_S3_MATRIX does not move it), or ends the test as Servers does.
func Require(t testing.TB) Server {
	t.Helper()
	noteAsked(t)
	all := LookupAll()
	if len(all) == 0 {
		noServer(t)
	}
	return all[0]
}

// ForEach runs fn as a subtest per server, named by the server; the servers' subtests run in
// parallel with each other (go test's -parallel bounds how many at once). Each server is its own
// process with its own buckets, so what one subtest does cannot change another's answers, and
// most of a subtest's time is spent waiting on its server: run one after another, the three
// servers left a core idle for most of the test command. fn must not share mutable state
// between servers without locking (the race detector, which the test command runs, finds it).
// A test that measures the process (allocations, heap) uses ForEachSerial.
func ForEach(t *testing.T, fn func(t *testing.T, srv Server)) {
	t.Helper()
	for _, srv := range Servers(t) {
		t.Run(srv.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, srv)
		})
	}
}

// ForEachSerial is ForEach with the servers one after another, for a test whose measure is
// process-wide (heap, allocations) and so would count another server's upload as its own.
func ForEachSerial(t *testing.T, fn func(t *testing.T, srv Server)) {
	t.Helper()
	for _, srv := range Servers(t) {
		t.Run(srv.Name, func(t *testing.T) { fn(t, srv) })
	}
}

// noteAsked appends the name of t's top-level test to the file SAFEPUT_S3_ASKED_LOG names, when
// it names one: the test command runs the writer's race-free shares on the tests a static search
// finds reaching a server (testreport servertests), and checks that list against the tests that
// asked for one under -race, so that a test the search missed fails the command instead of
// silently running on one server only.
func noteAsked(t testing.TB) {
	t.Helper()
	path := os.Getenv("SAFEPUT_S3_ASKED_LOG")
	if path == "" {
		return
	}
	name, _, _ := strings.Cut(t.Name(), "/")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(name + "\n") // one short append: whole, beside other tests' appends
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatalf("SAFEPUT_S3_ASKED_LOG: %v", err)
	}
}

func noServer(t testing.TB) {
	t.Helper()
	if os.Getenv("CI") != "" && os.Getenv("CI") != "false" {
		t.Fatal(noServerMsg)
	}
	t.Skip(noServerMsg)
}

// KMSKeyID is the run's KMS key, which scripts/s3server.sh gives MinIO's and RGW's KMS
// (SAFEPUT_S3_KMS_KEY_ID), or ends the test as a missing server does: Fatal under CI=true, Skip
// elsewhere.
func KMSKeyID(t testing.TB) string {
	t.Helper()
	id := os.Getenv("SAFEPUT_S3_KMS_KEY_ID")
	if id == "" {
		const msg = "SAFEPUT_S3_KMS_KEY_ID unset: the servers were not started with a KMS key (run the README test command)"
		if os.Getenv("CI") != "" && os.Getenv("CI") != "false" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return id
}

// RawClient is a plain aws-sdk-go-v2 client for test set-up and independent checks (bucket
// creation, reading back, listing uploads), so a test never checks an adapter with itself.
func (s Server) RawClient() *s3.Client {
	o := s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		// Only what tests ask for: no default CRC trailers.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if hc := s.httpClient(); hc != nil {
		o.HTTPClient = hc
	}
	return s3.New(o)
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
	// Emptied and removed when the test ends: a whole run writes more than a small disk holds,
	// and MinIO refuses every write (507 XMinioStorageFull) once its disk is under its
	// free-space floor, which a run that kept its objects brought about.
	if os.Getenv("SAFEPUT_KEEP_BUCKETS") == "" {
		t.Cleanup(func() {
			if err := s.removeBucket(name); err != nil {
				t.Logf("remove bucket %s (set SAFEPUT_KEEP_BUCKETS=1 to keep buckets): %v", name, err)
			}
		})
	}
	return name
}

// removeBucket aborts the bucket's incomplete uploads, deletes its objects, then the bucket.
func (s Server) removeBucket(bucket string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := s.RawClient()
	var errs []error
	uploads := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
	for {
		out, err := c.ListMultipartUploads(ctx, uploads)
		if err != nil {
			errs = append(errs, err)
			break
		}
		for _, u := range out.Uploads {
			if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId}); err != nil {
				errs = append(errs, err)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		uploads.KeyMarker, uploads.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	objects := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for objects.HasMorePages() {
		page, err := objects.NextPage(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		for _, o := range page.Contents {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
	// Room for the whole object up front (at most 1 GiB: the length is the server's claim):
	// io.ReadAll's doubling would copy a large object several times over, which the race
	// detector makes costly.
	buf := bytes.NewBuffer(make([]byte, 0, max(0, min(aws.ToInt64(out.ContentLength), 1<<30))+bytes.MinRead))
	if _, err := buf.ReadFrom(out.Body); err != nil {
		t.Fatalf("read back %s/%s: %v", bucket, key, err)
	}
	return buf.Bytes()
}

// Exists reports whether bucket/key exists, via the raw client.
func Exists(t testing.TB, s Server, bucket, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := s.RawClient().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

// IncompleteUploads lists incomplete multipart uploads under prefix, via the raw client. It
// lists the whole bucket and filters here: MinIO lists by prefix only for an exact key, so a
// prefix listing there would miss every upload under a directory-like prefix.
func IncompleteUploads(t testing.TB, s Server, bucket, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
	for {
		out, err := s.RawClient().ListMultipartUploads(ctx, in)
		if err != nil {
			t.Fatalf("list uploads %s: %v", bucket, err)
		}
		for _, u := range out.Uploads {
			if strings.HasPrefix(aws.ToString(u.Key), prefix) {
				ids = append(ids, aws.ToString(u.Key)+"@"+aws.ToString(u.UploadId))
			}
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

// IgnoresChecksums reports whether the server ignores x-amz-checksum-* headers. Ceph RGW 16.2
// does: a wrong value is accepted, nothing is echoed, stored or returned by HEAD.
func (s Server) IgnoresChecksums() bool { return s.Name == Ceph }

// EmptyCompleteETag reports whether a successful CompleteMultipartUpload answers without an
// ETag. Ceph RGW 16.2 answers 200 with <ETag></ETag>; the object is committed and HEAD has it.
func (s Server) EmptyCompleteETag() bool { return s.Name == Ceph }

// IgnoresConditionalComplete reports whether the server ignores If-None-Match: * on
// CompleteMultipartUpload: Ceph RGW 16.2 commits over an existing key (it honours the header on
// PutObject), so two create-only multipart writes racing to one key may both land.
func (s Server) IgnoresConditionalComplete() bool { return s.Name == Ceph }

// CutErrorDocument answers status promising a 200-byte error document, sends only prefix of it,
// then drops the connection: an error document lost on the way (fake servers' handlers).
func CutErrorDocument(w http.ResponseWriter, status int, prefix string) {
	w.Header().Set("Content-Length", "200")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, prefix)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if conn, _, err := rc.Hijack(); err == nil {
		_ = conn.Close()
	}
}

// AssumeRoleAnswer answers an STS AssumeRole request with these keys, expiring at expires, in the
// document STS sends (stand-in STS servers' handlers).
func AssumeRoleAnswer(w http.ResponseWriter, accessKey, secretKey, sessionToken string, expires time.Time) {
	w.Header().Set("Content-Type", "text/xml")
	_, _ = fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>`+
		`<AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken>`+
		`<Expiration>%s</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`,
		accessKey, secretKey, sessionToken, expires.UTC().Format(time.RFC3339))
}
