package safeblob_test

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // the ContentMD5 gocloud asks for
	stderrors "errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/drivertest"
	"gocloud.dev/gcerrors"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"

	safeblob "github.com/safeput/safeput/gocloud"
)

// partSize is the smallest part S3 takes, so a stream "larger than a part" stays small.
const partSize = 5 << 20

// client is the aws-sdk-go-v2 client a gocloud user builds for env's server, through endpoint.
func client(env testkit.Env, endpoint string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       env.Srv.Region,
		Credentials: aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: env.Srv.AccessKey, SecretAccessKey: env.Srv.SecretKey}, nil
		})),
		UsePathStyle: true,
		// What s3blob's own docs advise for S3-compatible stores (its reads and copies).
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

func adapter(env testkit.Env) safeblob.Adapter {
	if env.Adapter == "minio" {
		return safeblob.MinioGo
	}
	return safeblob.AWSSDK
}

func safeputOptions(env testkit.Env) []safeblob.Option {
	return []safeblob.Option{safeblob.WithAdapter(adapter(env)),
		safeblob.WithUploaderOptions(func(o *writer.Options) { o.Profile = env.Profile() })}
}

func openBucket(t *testing.T, env testkit.Env, endpoint string) *blob.Bucket {
	t.Helper()
	b, err := safeblob.OpenBucket(context.Background(), client(env, endpoint), env.Bucket, nil, safeputOptions(env)...)
	if err != nil {
		t.Fatalf("OpenBucket: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// harness is drivertest's harness for one server × adapter and its bucket.
type harness struct{ env testkit.Env }

func (h harness) MakeDriver(ctx context.Context) (driver.Bucket, error) {
	return safeblob.NewBucket(ctx, client(h.env, h.env.Srv.Endpoint), h.env.Bucket, nil, safeputOptions(h.env)...)
}

func (h harness) MakeDriverForNonexistentBucket(ctx context.Context) (driver.Bucket, error) {
	return safeblob.NewBucket(ctx, client(h.env, h.env.Srv.Endpoint), h.env.Bucket+"-missing", nil, safeputOptions(h.env)...)
}

func (harness) HTTPClient() *http.Client { return &http.Client{} }
func (harness) SupportsCopy() bool       { return true }

// SupportsNonSlashDelimiters: MinIO answers a paged listing with a delimiter other than "/" with
// the continuation token it was given, for ever (its token names the "directory" it stopped in);
// drivertest's TestListDelimiters then pages without end on s3blob's reads as on ours.
func (h harness) SupportsNonSlashDelimiters() bool { return h.env.Server != s3test.MinIO }

func (harness) SkipDownloadAt() bool { return false }
func (harness) Close()               {}

// skips are the conformance tests that cannot pass, each for the reason given: test name suffix
// to reason, for every server ("") or one.
var skips = map[string]map[string]string{
	s3test.MinIO: {
		"/TestList/by_1":               "MinIO answers the third of three one-key pages as truncated, with a token whose page is empty (s3blob's reads pass it on)",
		"/TestListWeirdKeys":           "MinIO refuses the key foo//bar///baz (400 XMinioInvalidObjectName)",
		"/TestKeys/repeatedfwdslashes": "MinIO refuses the key foo//bar///baz (400 XMinioInvalidObjectName)",
		"/TestKeys/dotdotbackslash":    "MinIO refuses a key with .. components (400 XMinioInvalidResourceName)",
		"/TestKeys/ascii-3":            s3blobCopyEscape,
		"/TestKeys/spaces":             s3blobCopyEscape,
	},
	s3test.Ceph: {
		"/TestMetadata/valid_metadata":      cephUnderscores,
		"/TestMetadata/weird_metadata_keys": cephUnderscores,
		"/TestKeys/ascii-3":                 s3blobCopyEscape,
		"/TestKeys/spaces":                  s3blobCopyEscape,
	},
	s3test.VersityGW: {
		// Its posix backend stores a key ending in "/" as a directory.
		"/TestListWeirdKeys": versityDirectory,
		"/TestKeys/ascii-3":  versityDirectory,
	},
}

const (
	versityDirectory = "Versity S3 Gateway refuses data under a key ending in / (400 DirectoryObjectContainsData)"
	s3blobCopyEscape = "s3blob's Copy sends x-amz-copy-source query-escaped (a space as '+'), which MinIO and Ceph RGW read as a literal '+': 404 NoSuchKey"
	// Ceph RGW 16.2 returns x-amz-meta-* names with every underscore turned into a dash, so a key
	// with one (and gocloud's escapes, __0x3d__) does not come back as written, through s3blob's
	// reads as through any S3 client.
	cephUnderscores = "Ceph RGW returns metadata names with '_' turned into '-' (key_a reads back as key-a)"
)

// TestConformance is gocloud's own conformance suite on every server through both adapters.
func TestConformance(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		drivertest.RunConformanceTests(t, func(_ context.Context, t *testing.T) (drivertest.Harness, error) {
			for _, server := range []string{"", env.Server} {
				for suffix, why := range skips[server] {
					if strings.HasSuffix(t.Name(), suffix) {
						t.Skip(why)
					}
				}
			}
			return harness{env}, nil
		}, []drivertest.AsTest{&asTest{}})
		noIncompleteUploads(t, env)
	})
}

// asTest checks the types As exposes: s3blob's for the delegated calls, safeput's for writes.
type asTest struct{ events atomic.Int64 }

func (*asTest) Name() string { return "safeblob As" }

func (*asTest) BucketCheck(b *blob.Bucket) error {
	var c *s3.Client
	var u *writer.Uploader
	if !b.As(&c) || !b.As(&u) || c == nil || u == nil {
		return stderrors.New("Bucket.As: want *s3.Client and *writer.Uploader")
	}
	return nil
}

func (*asTest) ErrorCheck(b *blob.Bucket, err error) error {
	var e smithy.APIError
	if !b.ErrorAs(err, &e) {
		return fmt.Errorf("ErrorAs of a read's error %w: no smithy.APIError", err)
	}
	return nil
}

func (*asTest) BeforeRead(as func(any) bool) error {
	var in *s3.GetObjectInput
	if !as(&in) {
		return stderrors.New("BeforeRead: no *s3.GetObjectInput")
	}
	return nil
}

// BeforeWrite adds an observer to the write's options; AttributesCheck then finds it was called.
func (a *asTest) BeforeWrite(as func(any) bool) error {
	var opts *[]func(*writer.Options)
	if !as(&opts) {
		return stderrors.New("BeforeWrite: no *[]func(*writer.Options)")
	}
	*opts = append(*opts, func(o *writer.Options) { o.Observer = func(writer.Event) { a.events.Add(1) } })
	return nil
}

func (*asTest) BeforeCopy(as func(any) bool) error {
	var in *s3.CopyObjectInput
	if !as(&in) {
		return stderrors.New("BeforeCopy: no *s3.CopyObjectInput")
	}
	return nil
}

func (*asTest) BeforeDelete(as func(any) bool) error {
	var in *s3.DeleteObjectInput
	if !as(&in) {
		return stderrors.New("BeforeDelete: no *s3.DeleteObjectInput")
	}
	return nil
}

func (*asTest) BeforeList(as func(any) bool) error {
	var in *s3.ListObjectsV2Input
	if !as(&in) {
		return stderrors.New("BeforeList: no *s3.ListObjectsV2Input")
	}
	return nil
}

func (*asTest) BeforeSign(as func(any) bool) error {
	var get *s3.GetObjectInput
	var put *s3.PutObjectInput
	if as(&get) || as(&put) {
		return nil
	}
	return stderrors.New("BeforeSign: no *s3.GetObjectInput or *s3.PutObjectInput")
}

func (a *asTest) AttributesCheck(attrs *blob.Attributes) error {
	var out s3.HeadObjectOutput
	if !attrs.As(&out) {
		return stderrors.New("Attributes.As: no s3.HeadObjectOutput")
	}
	if a.events.Load() == 0 {
		return stderrors.New("the observer BeforeWrite added saw no event of the write")
	}
	return nil
}

func (*asTest) ReaderCheck(r *blob.Reader) error {
	var out s3.GetObjectOutput
	if !r.As(&out) {
		return stderrors.New("Reader.As: no s3.GetObjectOutput")
	}
	return nil
}

func (*asTest) ListObjectCheck(o *blob.ListObject) error {
	if o.IsDir {
		var p types.CommonPrefix
		if !o.As(&p) {
			return stderrors.New("ListObject.As: no types.CommonPrefix")
		}
		return nil
	}
	var obj types.Object
	if !o.As(&obj) {
		return stderrors.New("ListObject.As: no types.Object")
	}
	return nil
}

// opaque hides every interface but Read, so nothing knows the size: a pipe, a socket.
type opaque struct{ r io.Reader }

func (o opaque) Read(p []byte) (int, error) { return o.r.Read(p) }

func payload(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b) //nolint:gosec // test data
	return b
}

func noIncompleteUploads(t *testing.T, env testkit.Env) {
	t.Helper()
	out, err := env.Store.ListMultipartUploads(context.Background(), &store.ListMultipartUploadsInput{Bucket: env.Bucket})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	if len(out.Uploads) > 0 {
		t.Errorf("%d incomplete multipart uploads left behind: %+v", len(out.Uploads), out.Uploads)
	}
}

func exists(t *testing.T, env testkit.Env, key string) bool {
	t.Helper()
	_, err := env.Store.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: env.Bucket, Key: key})
	return err == nil
}

// TestCanceledWrite: a multipart write cut by its context after two parts were sent leaves no
// object and no incomplete upload, and its error is Canceled both ways.
func TestCanceledWrite(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		b := openBucket(t, env, env.Srv.Endpoint)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var parts atomic.Int64
		sent := make(chan struct{})
		w, err := b.NewWriter(ctx, "canceled", &blob.WriterOptions{ContentType: "application/octet-stream", BufferSize: partSize,
			BeforeWrite: func(as func(any) bool) error {
				var opts *[]func(*writer.Options)
				if !as(&opts) {
					return stderrors.New("no *[]func(*writer.Options)")
				}
				*opts = append(*opts, func(o *writer.Options) {
					o.Observer = func(e writer.Event) {
						if e.Type == writer.EventPartDone && parts.Add(1) == 2 {
							close(sent)
						}
					}
				})
				return nil
			}})
		if err != nil {
			t.Fatalf("NewWriter: %v", err)
		}
		if _, err := w.Write(payload(3*partSize, 1)); err != nil {
			t.Fatalf("Write: %v", err)
		}
		select {
		case <-sent:
		case <-time.After(2 * time.Minute):
			t.Fatal("two parts were not sent within 2 minutes")
		}
		cancel()
		err = w.Close()
		if gcerrors.Code(err) != gcerrors.Canceled {
			t.Errorf("Close: %v (code %v), want Canceled", err, gcerrors.Code(err))
		}
		var e *sperrors.Error
		if !b.ErrorAs(err, &e) || e.Kind != sperrors.Canceled {
			t.Errorf("ErrorAs *errors.Error of %v: %v", err, e)
		}
		if exists(t, env, "canceled") {
			t.Error("a canceled write left an object")
		}
		noIncompleteUploads(t, env)
	})
}

// startProxy starts a fault proxy in front of env's server, closed when t ends.
func startProxy(t *testing.T, env testkit.Env) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(faultproxy.Config{Upstream: env.Srv.Endpoint, AccessKey: env.Srv.AccessKey,
		SecretKey: env.Srv.SecretKey, Region: env.Srv.Region, Seed: 1})
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// TestVerificationFailure: every copy of part 2 is stored with a byte flipped while the server
// answers 200 (its checksum recomputed, so only safeput's check after the store can see it). The
// write fails as Integrity, which gcerrors.Code calls Internal and ErrorAs reaches, and it leaves
// no object and no incomplete upload.
func TestVerificationFailure(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		p := startProxy(t, env)
		p.SetRules(faultproxy.Rule{Op: faultproxy.UploadPart, PartNumber: 2,
			Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped, Rechecksum: true}})
		b := openBucket(t, env, p.URL())
		w, err := b.NewWriter(context.Background(), "flipped", &blob.WriterOptions{ContentType: "application/octet-stream", BufferSize: partSize})
		if err != nil {
			t.Fatalf("NewWriter: %v", err)
		}
		if _, err = io.Copy(w, opaque{bytes.NewReader(payload(2*partSize+777, 2))}); err == nil {
			err = w.Close()
		} else {
			_ = w.Close()
		}
		if p.Stats().Injected[faultproxy.StoreFlipped] == 0 {
			t.Fatal("no flip injected")
		}
		if err == nil {
			t.Fatal("a write whose part 2 is always stored flipped succeeded")
		}
		if c := gcerrors.Code(err); c != gcerrors.Internal {
			t.Errorf("gcerrors.Code(%v) = %v, want Internal", err, c)
		}
		var e *sperrors.Error
		if !b.ErrorAs(err, &e) || e.Kind != sperrors.Integrity {
			t.Errorf("ErrorAs *errors.Error of %v: %+v, want kind Integrity", err, e)
		}
		if !stderrors.As(err, &e) {
			t.Errorf("errors.As does not reach *errors.Error in %v", err)
		}
		if exists(t, env, "flipped") {
			t.Error("a failed write left an object")
		}
		noIncompleteUploads(t, env)
	})
}

// TestIfNotExistAfterAFault: a create-only write over these very bytes is FailedPrecondition
// even when its first commit (the PUT, or the Complete) was answered 503 and retried: the
// answered attempt committed nothing, so the object was there first. A create-only write whose
// first commit's answer was lost after the store took it lands, its retry's 412 (or NoSuchUpload)
// notwithstanding: the object is most likely its own.
func TestIfNotExistAfterAFault(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		p := startProxy(t, env)
		b := openBucket(t, env, p.URL())
		ctx := context.Background()
		for _, c := range []struct {
			name string
			data []byte
			op   faultproxy.Op
		}{
			{"single PUT", []byte("up and down"), faultproxy.PutObject},
			{"multipart", payload(2*partSize+777, 3), faultproxy.CompleteMultipartUpload},
		} {
			t.Run(c.name, func(t *testing.T) {
				createOnly := &blob.WriterOptions{ContentType: "text/plain", IfNotExist: true, BufferSize: partSize}
				there, lost := "ifnotexist/there/"+c.name, "ifnotexist/lost/"+c.name
				if err := b.WriteAll(ctx, there, c.data, createOnly); err != nil {
					t.Fatalf("first create-only write: %v", err)
				}
				before := p.Stats().Injected
				// Only a conditional commit: a store whose profile sends no If-None-Match on it
				// (Ceph RGW's Complete) has the key checked by a HEAD first, which finds the object.
				p.SetRules(faultproxy.Rule{Op: c.op, Header: "If-None-Match", Nth: 1, Times: 1,
					Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: http.StatusServiceUnavailable, Code: "SlowDown"}})
				err := b.WriteAll(ctx, there, c.data, createOnly)
				guarded := c.op != faultproxy.CompleteMultipartUpload || env.Server != s3test.Ceph
				if injected := p.Stats().Injected[faultproxy.Status] - before[faultproxy.Status]; guarded && injected != 1 {
					t.Fatalf("injected %d 503s, want one on the conditional %s", injected, c.op)
				}
				if gcerrors.Code(err) != gcerrors.FailedPrecondition {
					t.Errorf("IfNotExist over these very bytes after an answered 503: %v (code %v), want FailedPrecondition", err, gcerrors.Code(err))
				}

				p.SetRules(faultproxy.Rule{Op: c.op, Nth: 1, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.DropResponse}})
				if err := b.WriteAll(ctx, lost, c.data, createOnly); err != nil {
					t.Errorf("IfNotExist whose first %s landed and lost its answer: %v, want it landed", c.op, err)
				}
				if injected := p.Stats().Injected[faultproxy.DropResponse] - before[faultproxy.DropResponse]; injected != 1 {
					t.Fatalf("injected %d dropped answers, want one", injected)
				}
				if got, err := b.ReadAll(ctx, lost); err != nil || !bytes.Equal(got, c.data) {
					t.Errorf("read back %d bytes, %v; want the %d written", len(got), err, len(c.data))
				}
				p.SetRules()
				noIncompleteUploads(t, env)
			})
		}
	})
}

// TestWriterOptions: Content-Type, metadata, the cache headers, ContentMD5, IfNotExist and
// BeforeWrite are honoured; a mismatched ContentMD5, an IfNotExist over an existing key and a
// failing hook leave nothing written.
func TestWriterOptions(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		b := openBucket(t, env, env.Srv.Endpoint)
		ctx := context.Background()
		data := []byte("hello, verified world")
		sum := md5sum(data)
		err := b.WriteAll(ctx, "opts/ok", data, &blob.WriterOptions{ContentType: "text/x-test", ContentMD5: sum[:],
			Metadata: map[string]string{"Owner": "ops", "weird key=": "v@l"}})
		if err != nil {
			t.Fatalf("WriteAll: %v", err)
		}
		a, err := b.Attributes(ctx, "opts/ok")
		if err != nil {
			t.Fatalf("Attributes: %v", err)
		}
		weird := a.Metadata["weird key="] == "v@l"
		if env.Server == s3test.Ceph { // cephUnderscores: the escaped name comes back with dashes
			weird = a.Metadata["weird key--0x3d--"] == "v@l"
		}
		if a.ContentType != "text/x-test" || a.Metadata["owner"] != "ops" || !weird {
			t.Errorf("attributes %q %v; want the content type and metadata written", a.ContentType, a.Metadata)
		}
		// A ContentMD5 that does not match: nothing committed, FailedPrecondition.
		err = b.WriteAll(ctx, "opts/md5", []byte("other bytes"), &blob.WriterOptions{ContentType: "text/plain", ContentMD5: sum[:]})
		if gcerrors.Code(err) != gcerrors.FailedPrecondition || exists(t, env, "opts/md5") {
			t.Errorf("mismatched ContentMD5: %v (code %v), exists %v; want FailedPrecondition and no object", err, gcerrors.Code(err), exists(t, env, "opts/md5"))
		}
		// IfNotExist over an existing key: FailedPrecondition, the first object kept.
		err = b.WriteAll(ctx, "opts/ok", []byte("again"), &blob.WriterOptions{IfNotExist: true})
		var e *sperrors.Error
		if gcerrors.Code(err) != gcerrors.FailedPrecondition || !b.ErrorAs(err, &e) || e.Kind != sperrors.Precondition {
			t.Errorf("IfNotExist over an existing key: %v (code %v)", err, gcerrors.Code(err))
		}
		if got, _ := b.ReadAll(ctx, "opts/ok"); !bytes.Equal(got, data) {
			t.Errorf("read back %q after a refused create-only write, want %q", got, data)
		}
		// The cache headers land as given, as s3blob reads them back.
		// Content-Encoding gzip over bytes that are not gzip: nothing on the way (safeput's
		// checks after commit, s3blob's read) may decode them.
		hdrs := blob.WriterOptions{ContentType: "text/plain", CacheControl: "no-cache", ContentDisposition: "attachment",
			ContentEncoding: "gzip", ContentLanguage: "nl"}
		if err := b.WriteAll(ctx, "opts/headers", data, &hdrs); err != nil {
			t.Fatalf("WriteAll with cache headers: %v", err)
		}
		if a, err := b.Attributes(ctx, "opts/headers"); err != nil || a.CacheControl != hdrs.CacheControl ||
			a.ContentDisposition != hdrs.ContentDisposition || a.ContentEncoding != hdrs.ContentEncoding || a.ContentLanguage != hdrs.ContentLanguage {
			t.Errorf("Attributes: %+v, %v; want the headers written", a, err)
		}
		if got, err := b.ReadAll(ctx, "opts/headers"); err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadAll of the gzip-labelled object: %q, %v; want the bytes written", got, err)
		}
		// Read back after commit too (BeforeWrite adds writer.Options.ReadBack): the adapter's GET
		// must not decode them either.
		hdrs.BeforeWrite = func(as func(any) bool) error {
			var opts *[]func(*writer.Options)
			if !as(&opts) {
				return stderrors.New("no *[]func(*writer.Options)")
			}
			*opts = append(*opts, func(o *writer.Options) { o.ReadBack = true })
			return nil
		}
		if err := b.WriteAll(ctx, "opts/headers", data, &hdrs); err != nil {
			t.Errorf("WriteAll of a gzip-labelled object, read back after commit: %v", err)
		}
		// A BeforeWrite hook's error fails the write before anything is sent.
		hookErr := stderrors.New("hook says no")
		err = b.WriteAll(ctx, "opts/hook", data, &blob.WriterOptions{BeforeWrite: func(func(any) bool) error { return hookErr }})
		if !stderrors.Is(err, hookErr) {
			t.Errorf("BeforeWrite error: got %v", err)
		}
		if exists(t, env, "opts/hook") {
			t.Error("a refused write left an object")
		}
		noIncompleteUploads(t, env)
	})
}

// TestURL: "safes3://" takes s3blob's query parameters; the bucket writes through safeput. Serial:
// the credentials come from the environment, as for s3://.
func TestURL(t *testing.T) {
	s3test.ForEachSerial(t, func(t *testing.T, srv s3test.Server) {
		env := testkit.Env{Srv: srv, Bucket: s3test.NewBucket(t, srv)}
		t.Setenv("AWS_ACCESS_KEY_ID", env.Srv.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", env.Srv.SecretKey)
		u := fmt.Sprintf("%s://%s?endpoint=%s&region=%s&use_path_style=true&request_checksum_calculation=when_required&response_checksum_validation=when_required",
			safeblob.Scheme, env.Bucket, env.Srv.Endpoint, env.Srv.Region)
		b, err := blob.OpenBucket(context.Background(), u)
		if err != nil {
			t.Fatalf("OpenBucket(%s): %v", u, err)
		}
		defer func() { _ = b.Close() }()
		var up *writer.Uploader
		if !b.As(&up) {
			t.Fatal("the URL's bucket has no safeput Uploader")
		}
		data := payload(1000, 3)
		if err := b.WriteAll(context.Background(), "url/obj", data, nil); err != nil {
			t.Fatalf("WriteAll: %v", err)
		}
		if got, err := b.ReadAll(context.Background(), "url/obj"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadAll: %v, equal %v", err, bytes.Equal(got, data))
		}
	})
}

func md5sum(b []byte) [16]byte { return md5.Sum(b) } //nolint:gosec // the ContentMD5 gocloud asks for

// TestOneTransport: reads and writes, through either adapter, all go through the HTTP client of
// the *s3.Client the caller gave (its transport, its instrumentation).
func TestOneTransport(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		var mu sync.Mutex
		seen := map[string]int{}
		c := client(env, env.Srv.Endpoint)
		c = s3.New(c.Options(), func(o *s3.Options) {
			o.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				seen[r.Method]++
				mu.Unlock()
				return http.DefaultTransport.RoundTrip(r)
			})}
		})
		b, err := safeblob.OpenBucket(context.Background(), c, env.Bucket, nil, safeputOptions(env)...)
		if err != nil {
			t.Fatalf("OpenBucket: %v", err)
		}
		defer func() { _ = b.Close() }()
		data := payload(partSize+1, 4)
		if err := b.WriteAll(context.Background(), "transport/obj", data, &blob.WriterOptions{ContentType: "application/octet-stream", BufferSize: partSize}); err != nil {
			t.Fatalf("WriteAll: %v", err)
		}
		if got, err := b.ReadAll(context.Background(), "transport/obj"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadAll: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		// A multipart write: create and complete (POST), two parts (PUT), a HEAD after commit.
		if seen[http.MethodPost] < 2 || seen[http.MethodPut] < 2 || seen[http.MethodHead] < 1 || seen[http.MethodGet] < 1 {
			t.Errorf("requests through the caller's HTTP client by method: %v; want the write's and the read's", seen)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
