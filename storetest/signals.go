package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
)

// watchedBody is a request body that knows how far its last pass has read.
type watchedBody struct {
	r   *bytes.Reader
	pos atomic.Int64
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.pos.Add(int64(n))
	return n, err
}

func (b *watchedBody) Seek(off int64, whence int) (int64, error) {
	n, err := b.r.Seek(off, whence)
	b.pos.Store(n)
	return n, err
}

// writtenSignal records the request-written signal of one call (store.ReportRequestWritten, or
// httptrace's WroteRequest on net/http) and where its body had been read to when it came.
type writtenSignal struct {
	body    *watchedBody // nil for a call without a body
	signals atomic.Int32
	at      chan int64 // the body's position at the first signal of a written request
}

func newWrittenSignal(body *watchedBody) *writtenSignal {
	return &writtenSignal{body: body, at: make(chan int64, 1)}
}

// ctx listens where the writer does: httptrace's WroteRequest, which net/http and
// store.ReportRequestWritten both call.
func (w *writtenSignal) ctx(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err != nil || w.signals.Add(1) > 1 {
			return
		}
		var pos int64
		if w.body != nil {
			pos = w.body.pos.Load()
		}
		w.at <- pos
	}})
}

// check fails unless the call was signalled written, after its whole body (size bytes) had been
// read. A net/http transport signals on its own goroutine, which may run just after the call
// returned, so the signal is awaited a while.
func (w *writtenSignal) check(t *testing.T, what string, size int64) {
	t.Helper()
	select {
	case pos := <-w.at:
		if pos != size {
			t.Errorf("%s: signalled written with %d of its %d body bytes read, want all of them", what, pos, size)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s: no request-written signal (store.ReportRequestWritten, or httptrace's WroteRequest on net/http): the writer cannot hand a part's slot on or hash ahead", what)
	}
}

// Every request a call sends tells the call's context once it has been written out, body
// included, as store.Store's contract says: PutObject and UploadPart after their whole body,
// CreateMultipartUpload once sent. A request that never left (a closed port) signals nothing.
func testRequestWritten(t *testing.T, e env) {
	data := randomBytes(t, 256<<10)
	body := &watchedBody{r: bytes.NewReader(data)}
	sig := newWrittenSignal(body)
	if _, err := e.under.PutObject(sig.ctx(ctxFor(t)), &store.PutObjectInput{Bucket: e.bucket, Key: "written/put", Body: body,
		ContentLength: int64(len(data)), Checksum: e.sum(data)}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	sig.check(t, "PutObject", int64(len(data)))

	sig = newWrittenSignal(nil)
	up, err := e.under.CreateMultipartUpload(sig.ctx(ctxFor(t)), &store.CreateMultipartUploadInput{Bucket: e.bucket, Key: "written/mpu"})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	t.Cleanup(func() {
		_ = e.ref.AbortMultipartUpload(context.Background(), &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: "written/mpu", UploadID: up.UploadID})
	})
	sig.check(t, "CreateMultipartUpload", 0)

	body = &watchedBody{r: bytes.NewReader(data)}
	sig = newWrittenSignal(body)
	if _, err := e.under.UploadPart(sig.ctx(ctxFor(t)), &store.UploadPartInput{Bucket: e.bucket, Key: "written/mpu", UploadID: up.UploadID,
		PartNumber: 1, Body: body, ContentLength: int64(len(data)), ContentMD5: b64(md5Of(data))}); err != nil {
		t.Fatalf("UploadPart: %v", err)
	}
	sig.check(t, "UploadPart", int64(len(data)))

	th, ok := e.h.(TransportHarness)
	if !ok {
		return
	}
	sig = newWrittenSignal(nil)
	_, err = th.MakeStoreWithTransport(t, refusedTransport(t)).PutObject(sig.ctx(ctxFor(t)), &store.PutObjectInput{Bucket: e.bucket, Key: "written/refused",
		Body: bytes.NewReader(data), ContentLength: int64(len(data))})
	if err == nil {
		t.Fatal("PutObject to a closed port succeeded")
	}
	if n := sig.signals.Load(); n != 0 {
		t.Errorf("PutObject to a closed port: signalled written %d times, want never: nothing left", n)
	}
}

// A failure before the request had a connection is a store.NotSentError saying so, so the writer
// knows the store cannot have acted on it; the store's own answer is not one.
func testNotSent(t *testing.T, e env) {
	_, err := e.under.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "no-such-key"})
	var ns store.NotSentError
	if !isStatus(err, http.StatusNotFound) {
		t.Fatalf("HeadObject of a missing key: %v, want the store's 404", err)
	}
	if errors.As(err, &ns) && ns.NotSent() {
		t.Errorf("HeadObject of a missing key: the store's answer is marked not sent")
	}
	th, ok := e.h.(TransportHarness)
	if !ok {
		return
	}
	_, err = th.MakeStoreWithTransport(t, refusedTransport(t)).HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "k"})
	if !errors.As(err, &ns) || !ns.NotSent() {
		t.Errorf("HeadObject to a closed port: %v (%T), want a store.NotSentError whose NotSent is true", err, err)
	}
}

// A throttling answer's Retry-After reaches store.ResponseError.RetryAfter, which the retry
// policy waits for. The answer comes from a transport standing in for the store, as no test
// server throttles on demand.
func testRetryAfter(t *testing.T, e env) {
	th, ok := e.h.(TransportHarness)
	if !ok {
		return
	}
	st := th.MakeStoreWithTransport(t, throttling{})
	data := []byte("throttled")
	_, err := st.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "k", Body: bytes.NewReader(data), ContentLength: int64(len(data))})
	re := responseError(t, "PutObject answered 503 SlowDown with Retry-After: 3", err, http.StatusServiceUnavailable, "SlowDown")
	if re.RetryAfter != 3*time.Second {
		t.Errorf("PutObject answered with Retry-After: 3: RetryAfter %v, want 3s", re.RetryAfter)
	}
}

// throttling answers every request 503 SlowDown with Retry-After: 3, having read its body.
type throttling struct{}

func (throttling) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	doc := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>THROTTLED1</RequestId></Error>`
	return &http.Response{
		StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/xml"}, "Retry-After": {"3"}, "X-Amz-Request-Id": {"THROTTLED1"}},
		Body:   io.NopCloser(strings.NewReader(doc)), ContentLength: int64(len(doc)), Request: r,
	}, nil
}

// refusedTransport dials a port nothing listens on.
func refusedTransport(t *testing.T) http.RoundTripper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	return &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, closed)
	}}
}
