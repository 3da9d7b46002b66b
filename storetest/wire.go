package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/safeput/safeput/store"
)

// listRequests counts the list requests a store sends (TransportHarness), so a test sees that
// a PageSize really asks page by page. A nil *listRequests (a store without HTTP) checks nothing.
type listRequests struct {
	next           http.RoundTripper
	uploads, parts atomic.Int32
}

func (c *listRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		switch {
		case q.Has("uploads"):
			c.uploads.Add(1)
		case q.Has("uploadId"):
			c.parts.Add(1)
		}
	}
	return c.next.RoundTrip(r)
}

func (c *listRequests) reset() {
	if c != nil {
		c.uploads.Store(0)
	}
}

// check fails unless the store sent want upload listings (uploads) or part listings.
func (c *listRequests) check(t *testing.T, what string, uploads bool, want int32) {
	t.Helper()
	if c == nil {
		return
	}
	n := c.parts.Load()
	if uploads {
		n = c.uploads.Load()
	}
	if n != want {
		t.Errorf("%s sent %d list requests, want %d", what, n, want)
	}
}

// Failures without an answer keep the underlying error reachable and are no ResponseError: a
// cancelled context, and (over HTTP) a connection refused.
func testNoResponse(t *testing.T, e env) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.under.HeadObject(ctx, &store.HeadObjectInput{Bucket: e.bucket, Key: "k"})
	var re *store.ResponseError
	if !errors.Is(err, context.Canceled) || errors.As(err, &re) {
		t.Errorf("HeadObject with a cancelled context: %v, want context.Canceled and no ResponseError", err)
	}
	th, ok := e.h.(TransportHarness)
	if !ok {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	refused := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, closed)
	}}
	_, err = th.MakeStoreWithTransport(t, refused).PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "k", Body: bytes.NewReader([]byte("x")), ContentLength: 1})
	var oe *net.OpError
	if !errors.As(err, &oe) || errors.As(err, &re) {
		t.Errorf("PutObject to a closed port: %v, want a *net.OpError and no ResponseError", err)
	}
}

// Invalid input is refused before anything is sent. The context is already cancelled, so a store
// that sent the request would report context.Canceled instead of ErrInvalidInput.
func testInvalidInput(t *testing.T, e env) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := strings.Repeat("k", store.MaxKeyLength+1)
	body := func() io.ReadSeeker { return bytes.NewReader([]byte("x")) }
	b := e.bucket
	cases := map[string]func() error{
		"PutObject empty bucket": func() error {
			_, err := e.under.PutObject(ctx, &store.PutObjectInput{Key: "bad", Body: body(), ContentLength: 1})
			return err
		},
		"PutObject empty key": func() error {
			_, err := e.under.PutObject(ctx, &store.PutObjectInput{Bucket: b, Body: body(), ContentLength: 1})
			return err
		},
		"PutObject key over 1024 bytes": func() error {
			_, err := e.under.PutObject(ctx, &store.PutObjectInput{Bucket: b, Key: long, Body: body(), ContentLength: 1})
			return err
		},
		"PutObject invalid UTF-8 key": func() error {
			_, err := e.under.PutObject(ctx, &store.PutObjectInput{Bucket: b, Key: "bad\xff\xfekey", Body: body(), ContentLength: 1})
			return err
		},
		"PutObject negative content length": func() error {
			_, err := e.under.PutObject(ctx, &store.PutObjectInput{Bucket: b, Key: "bad", Body: body(), ContentLength: -1})
			return err
		},
		"PutObject nil body with a length": func() error {
			_, err := e.under.PutObject(ctx, &store.PutObjectInput{Bucket: b, Key: "bad", ContentLength: 10})
			return err
		},
		"PutObject nil input": func() error {
			_, err := e.under.PutObject(ctx, nil)
			return err
		},
		"PutObject checksum without value": func() error {
			_, err := e.under.PutObject(ctx, &store.PutObjectInput{Bucket: b, Key: "bad", Body: body(), ContentLength: 1, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME}})
			return err
		},
		"UploadPart nil body": func() error {
			_, err := e.under.UploadPart(ctx, &store.UploadPartInput{Bucket: b, Key: "bad", UploadID: "u", PartNumber: 1})
			return err
		},
		"UploadPart part number 0": func() error {
			_, err := e.under.UploadPart(ctx, &store.UploadPartInput{Bucket: b, Key: "bad", UploadID: "u", PartNumber: 0, Body: body(), ContentLength: 1})
			return err
		},
		"UploadPart part number 10001": func() error {
			_, err := e.under.UploadPart(ctx, &store.UploadPartInput{Bucket: b, Key: "bad", UploadID: "u", PartNumber: 10001, Body: body(), ContentLength: 1})
			return err
		},
		"CreateMultipartUpload type without algorithm": func() error {
			_, err := e.under.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: b, Key: "bad", ChecksumType: store.ChecksumTypeFullObject})
			return err
		},
		"CompleteMultipartUpload parts out of order": func() error {
			_, err := e.under.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: b, Key: "bad", UploadID: "u",
				Parts: []store.CompletedPart{{PartNumber: 2, ETag: "a"}, {PartNumber: 1, ETag: "b"}}})
			return err
		},
		"CompleteMultipartUpload no parts": func() error {
			_, err := e.under.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: b, Key: "bad", UploadID: "u"})
			return err
		},
		"ListParts empty upload id": func() error {
			_, err := e.under.ListParts(ctx, &store.ListPartsInput{Bucket: b, Key: "bad"})
			return err
		},
		"AbortMultipartUpload empty key": func() error {
			return e.under.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: b, UploadID: "u"})
		},
		"AbortMultipartUpload empty upload id": func() error {
			return e.under.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: b, Key: "bad"})
		},
		"HeadObject empty bucket": func() error {
			_, err := e.under.HeadObject(ctx, &store.HeadObjectInput{Key: "bad"})
			return err
		},
		"GetObject negative length": func() error {
			_, err := e.under.GetObject(ctx, &store.GetObjectInput{Bucket: b, Key: "bad", Length: -1})
			return err
		},
		"DeleteObject invalid UTF-8 key": func() error {
			return e.under.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: b, Key: "\xc3"})
		},
		"ListMultipartUploads negative page size": func() error {
			_, err := e.under.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: b, PageSize: -1})
			return err
		},
	}
	for name, do := range cases {
		err := do()
		var re *store.ResponseError
		if !errors.Is(err, store.ErrInvalidInput) || errors.Is(err, context.Canceled) || errors.As(err, &re) {
			t.Errorf("%s: err %v, want store.ErrInvalidInput before any request", name, err)
		}
	}
	if e.exists(t, "bad") {
		t.Error("invalid input stored an object")
	}
}
