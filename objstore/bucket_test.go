package safeobjstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/s3"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"

	safeobjstore "github.com/safeput/safeput/objstore"
)

// partSize is the smallest part S3 takes, so a stream "larger than a part" stays small.
const partSize = 5 << 20

// config is objstore's S3 configuration for env's server, as a Thanos user writes it.
func config(env testkit.Env, endpoint string) s3.Config {
	c := s3.DefaultConfig
	c.PutUserMetadata = map[string]string{}
	c.Bucket = env.Bucket
	c.Endpoint = strings.TrimPrefix(endpoint, "http://")
	c.Insecure = true
	c.Region = env.Srv.Region
	c.AccessKey = env.Srv.AccessKey
	c.SecretKey = env.Srv.SecretKey
	c.BucketLookupType = s3.PathLookup
	c.PartSize = partSize
	return c
}

func adapter(env testkit.Env) safeobjstore.Adapter {
	if env.Adapter == "aws" {
		return safeobjstore.AWSSDK
	}
	return safeobjstore.MinioGo
}

// newBucket builds the Bucket for env's server and adapter; requests counts what the caller's
// round-tripper wrapper saw.
func newBucket(t *testing.T, env testkit.Env, endpoint string, requests *atomic.Int64) *safeobjstore.Bucket {
	t.Helper()
	return newBucketLogging(t, env, endpoint, requests, log.NewNopLogger())
}

func newBucketLogging(t *testing.T, env testkit.Env, endpoint string, requests *atomic.Int64, logger log.Logger) *safeobjstore.Bucket {
	t.Helper()
	wrap := func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if requests != nil {
				requests.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	bkt, err := safeobjstore.NewBucketWithConfig(logger, config(env, endpoint), "test", wrap,
		safeobjstore.WithAdapter(adapter(env)),
		safeobjstore.WithUploaderOptions(func(o *writer.Options) { o.Profile = env.Profile() }))
	if err != nil {
		t.Fatalf("NewBucketWithConfig: %v", err)
	}
	t.Cleanup(func() { _ = bkt.Close() })
	return bkt
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAcceptance is objstore's own acceptance test on every server through both adapters.
func TestAcceptance(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		objstore.AcceptanceTest(t, newBucket(t, env, env.Srv.Endpoint, nil))
		noIncompleteUploads(t, env)
	})
}

// opaque hides every interface but Read, so nothing knows the size: a pipe, a socket.
type opaque struct{ r io.Reader }

func (o opaque) Read(p []byte) (int, error) { return o.r.Read(p) }

func payload(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// TestUploadStreamOfUnknownSize: a stream larger than a part lands identical through
// WrapWithMetrics, which counts the upload, and the caller's round-tripper sees the requests.
func TestUploadStreamOfUnknownSize(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		var requests atomic.Int64
		reg := prometheus.NewRegistry()
		bkt := objstore.WrapWithMetrics(newBucket(t, env, env.Srv.Endpoint, &requests), reg, "test")
		data := payload(2*partSize+12345, 1)
		if err := bkt.Upload(context.Background(), "stream/obj", opaque{bytes.NewReader(data)},
			objstore.WithContentType("application/x-test")); err != nil {
			t.Fatalf("Upload: %v", err)
		}
		readBack(t, bkt, "stream/obj", data)
		// objstore's Upload overwrites: the second write of a key replaces the first.
		again := payload(1000, 5)
		if err := bkt.Upload(context.Background(), "stream/obj", bytes.NewReader(again), objstore.WithContentType("application/x-test")); err != nil {
			t.Fatalf("Upload over an existing key: %v", err)
		}
		readBack(t, bkt, "stream/obj", again)
		if n := counter(t, reg, "objstore_bucket_operations_total"); n != 2 {
			t.Errorf("upload operations counted: %v, want 2", n)
		}
		if requests.Load() < 4 { // create, 3 parts, complete, head: at least
			t.Errorf("the round-tripper wrapper saw %d requests", requests.Load())
		}
		head, err := env.Store.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: env.Bucket, Key: "stream/obj"})
		if err != nil {
			t.Fatalf("HEAD: %v", err)
		}
		if head.ContentType != "application/x-test" {
			t.Errorf("content type %q, want application/x-test", head.ContentType)
		}
		noIncompleteUploads(t, env)
	})
}

// TestUploadFlippedPart: a part stored with a byte flipped while the server answers 200. The
// object lands identical (a replayable source is sent again) or Upload fails as Integrity, and
// nothing is left behind either way.
func TestUploadFlippedPart(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, tc := range []struct {
			name   string
			source func([]byte) io.Reader
		}{
			{"stream", func(b []byte) io.Reader { return opaque{bytes.NewReader(b)} }},
			{"bytes.Reader", func(b []byte) io.Reader { return bytes.NewReader(b) }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, err := faultproxy.Start(faultproxy.Config{Upstream: env.Srv.Endpoint, AccessKey: env.Srv.AccessKey,
					SecretKey: env.Srv.SecretKey, Region: env.Srv.Region, Seed: 1})
				if err != nil {
					t.Fatalf("fault proxy: %v", err)
				}
				t.Cleanup(func() { _ = p.Close() })
				p.SetRules(faultproxy.Rule{Op: faultproxy.UploadPart, PartNumber: 2, Nth: 1,
					Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped, Rechecksum: true}})
				reg := prometheus.NewRegistry()
				bkt := objstore.WrapWithMetrics(newBucket(t, env, p.URL(), nil), reg, "test")
				key := "flipped/" + tc.name
				data := payload(2*partSize+777, 2)
				err = bkt.Upload(context.Background(), key, tc.source(data))
				if injected := p.Stats().Injected[faultproxy.StoreFlipped]; injected != 1 {
					t.Fatalf("flips injected: %d, want 1", injected)
				}
				if n := counter(t, reg, "objstore_bucket_operations_total"); n != 1 {
					t.Errorf("upload operations counted: %v, want 1", n)
				}
				if err != nil {
					if k := sperrors.KindOf(err); k != sperrors.Integrity {
						t.Fatalf("Upload: %v (kind %v), want nil or Integrity", err, k)
					}
					if n := counter(t, reg, "objstore_bucket_operation_failures_total"); n != 1 {
						t.Errorf("upload failures counted: %v, want 1", n)
					}
					if _, err := env.Store.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: env.Bucket, Key: key}); err == nil {
						t.Errorf("a failed upload left an object at %s", key)
					}
				} else {
					readBack(t, newBucket(t, env, env.Srv.Endpoint, nil), key, data)
				}
				t.Logf("outcome: %v", err)
				noIncompleteUploads(t, env)
			})
		}
	})
}

// TestUploadFailure: a part refused with AccessDenied fails the Upload as objstore's
// IsAccessDeniedErr says, with no object and no incomplete upload left; when the abort is refused
// too, the upload left behind is logged through the go-kit logger with its id.
func TestUploadFailure(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, abortFails := range []bool{false, true} {
			t.Run(fmt.Sprintf("abortFails=%v", abortFails), func(t *testing.T) {
				p, err := faultproxy.Start(faultproxy.Config{Upstream: env.Srv.Endpoint, AccessKey: env.Srv.AccessKey,
					SecretKey: env.Srv.SecretKey, Region: env.Srv.Region, Seed: 1})
				if err != nil {
					t.Fatalf("fault proxy: %v", err)
				}
				t.Cleanup(func() { _ = p.Close() })
				denied := faultproxy.Fault{Kind: faultproxy.Status, Status: http.StatusForbidden, Code: "AccessDenied"}
				rules := []faultproxy.Rule{{Op: faultproxy.UploadPart, PartNumber: 2, Fault: denied}}
				if abortFails {
					rules = append(rules, faultproxy.Rule{Op: faultproxy.AbortMultipartUpload, Fault: denied})
				}
				p.SetRules(rules...)
				var logs syncBuffer
				bkt := newBucketLogging(t, env, p.URL(), nil, log.NewLogfmtLogger(&logs))
				key := fmt.Sprintf("denied/%v", abortFails)
				err = bkt.Upload(context.Background(), key, opaque{bytes.NewReader(payload(2*partSize+1, 6))})
				if !bkt.IsAccessDeniedErr(err) || bkt.IsObjNotFoundErr(err) {
					t.Fatalf("Upload: %v; want an error IsAccessDeniedErr answers", err)
				}
				if ok, _ := bkt.Exists(context.Background(), key); ok {
					t.Error("a failed upload left an object")
				}
				out, err := env.Store.ListMultipartUploads(context.Background(), &store.ListMultipartUploadsInput{Bucket: env.Bucket, Prefix: key})
				if err != nil {
					t.Fatalf("ListMultipartUploads: %v", err)
				}
				if !abortFails {
					if len(out.Uploads) != 0 || strings.Contains(logs.String(), "upload_id") {
						t.Errorf("incomplete uploads %+v, log %q; want none", out.Uploads, logs.String())
					}
					return
				}
				if len(out.Uploads) != 1 || !strings.Contains(logs.String(), "upload_id="+out.Uploads[0].UploadID) {
					t.Fatalf("incomplete uploads %+v, log %q; want the one left behind logged with its id", out.Uploads, logs.String())
				}
				// The sweep a user would run. Versity S3 Gateway has answered it 500 once in a
				// while here, so it is tried a few times.
				for i := 0; ; i++ {
					err := env.Store.AbortMultipartUpload(context.Background(), &store.AbortMultipartUploadInput{Bucket: env.Bucket, Key: key, UploadID: out.Uploads[0].UploadID})
					if err == nil {
						break
					}
					if i == 4 {
						t.Fatalf("abort: %v", err)
					}
					time.Sleep(200 * time.Millisecond)
				}
			})
		}
	})
}

// syncBuffer is a log sink the writer's goroutines and the test may share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUploadSizes: objstore's sizes are declared; a source that disagrees fails naming both
// numbers and leaves nothing behind.
func TestUploadSizes(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		bkt := newBucket(t, env, env.Srv.Endpoint, nil)
		ctx := context.Background()
		data := payload(partSize+100, 3)
		// A LimitedReader whose N is its size; an ObjectSizer; both land identical.
		if err := bkt.Upload(ctx, "sizes/limited", &io.LimitedReader{R: opaque{bytes.NewReader(data)}, N: int64(len(data))}); err != nil {
			t.Fatalf("LimitedReader: %v", err)
		}
		readBack(t, bkt, "sizes/limited", data)
		if err := bkt.Upload(ctx, "sizes/sizer", objstore.NopCloserWithSize(bytes.NewBuffer(data))); err != nil {
			t.Fatalf("ObjectSizer: %v", err)
		}
		readBack(t, bkt, "sizes/sizer", data)

		// A sizer that claims more than the source yields.
		short := sizer{opaque{bytes.NewReader(data[:partSize+50])}, int64(len(data))}
		err := bkt.Upload(ctx, "sizes/short", short)
		if err == nil {
			t.Fatal("a source shorter than its declared size landed")
		}
		for _, n := range []string{"5242930", "5242980"} {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("error %q does not name %s", err, n)
			}
		}
		if ok, _ := bkt.Exists(ctx, "sizes/short"); ok {
			t.Error("a short source left an object")
		}
		noIncompleteUploads(t, env)
	})
}

type sizer struct {
	io.Reader
	n int64
}

func (s sizer) ObjectSize() (int64, error) { return s.n, nil }

func readBack(t *testing.T, bkt objstore.BucketReader, name string, want []byte) {
	t.Helper()
	rc, err := bkt.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get %s: %v", name, err)
	}
	defer func() { _ = rc.Close() }()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: read back %d bytes that differ from the %d sent", name, len(got), len(want))
	}
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

// counter reads the upload operation's value of a WrapWithMetrics counter, as a dashboard does.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" && l.GetValue() == objstore.OpUpload {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{operation=%q}", name, objstore.OpUpload)
	return 0
}
