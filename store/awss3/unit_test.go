package awss3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/catrust"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/s3test"
)

// These tests run against an httptest.Server that records what the adapter sends, so the wire
// format (headers, signing, request body) and the handling of odd answers are checked without
// a real S3 server.

type recorded struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

type fake struct {
	mu   sync.Mutex
	reqs []recorded
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// newFake starts a server that records every request and answers with handle.
func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) (*fake, *httptest.Server) {
	t.Helper()
	f := &fake{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

func newTestStore(t *testing.T, endpoint string, signed bool) *s3Store {
	t.Helper()
	s, err := New(Config{Endpoint: endpoint, AccessKey: "AKID", SecretKey: "SECRET", PathStyle: true, SignedPayload: signed})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*s3Store)
}

// okPut answers a PUT (PutObject or UploadPart) with a quoted ETag, as S3 does.
func okPut(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("ETag", `"0123abcd"`)
	w.WriteHeader(http.StatusOK)
}

func checksumHeaders(h http.Header) []string {
	var names []string
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") {
			names = append(names, k)
		}
	}
	return names
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// The heart of the wire contract: a request with a checksum carries exactly that header, plain
// (no aws-chunked, no trailer, no SDK algorithm header), signed UNSIGNED-PAYLOAD; a request
// without one carries no checksum header and a real SHA-256 payload hash.
func TestChecksumHeaders(t *testing.T) {
	f, srv := newFake(t, okPut)
	data := []byte("hello, checksummed world")
	const crc = "AAAAAAAAAAE=" // any valid-looking base64: the fake does not verify it
	ctx := context.Background()

	plain := newTestStore(t, srv.URL, false)
	signed := newTestStore(t, srv.URL, true)
	// A client built with the SDK defaults (WhenSupported: CRC32 on every upload, 3 attempts):
	// the per-call options must still win.
	defaults, err := NewFromClient(s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	}))
	if err != nil {
		t.Fatal(err)
	}

	type call struct {
		name     string
		st       *s3Store
		put      bool // PutObject, else UploadPart
		checksum store.Checksum
		wantSHA  string
	}
	crcSum := store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crc}
	calls := []call{
		{"put with crc", plain, true, crcSum, "UNSIGNED-PAYLOAD"},
		{"part with crc", plain, false, crcSum, "UNSIGNED-PAYLOAD"},
		{"put without", plain, true, store.Checksum{}, sha256Hex(data)},
		{"part without", plain, false, store.Checksum{}, sha256Hex(data)},
		{"put with crc, SignedPayload", signed, true, crcSum, sha256Hex(data)},
		{"put with crc, NewFromClient", defaults.(*s3Store), true, crcSum, "UNSIGNED-PAYLOAD"},
		{"part without, NewFromClient", defaults.(*s3Store), false, store.Checksum{}, sha256Hex(data)},
	}
	for _, c := range calls {
		before := len(f.requests())
		var etag string
		if c.put {
			out, err := c.st.PutObject(ctx, &store.PutObjectInput{Bucket: "b", Key: "k", Body: bytes.NewReader(data), ContentLength: int64(len(data)), Checksum: c.checksum})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			etag = out.ETag
		} else {
			out, err := c.st.UploadPart(ctx, &store.UploadPartInput{Bucket: "b", Key: "k", UploadID: "u", PartNumber: 2, Body: bytes.NewReader(data), ContentLength: int64(len(data)), Checksum: c.checksum})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			etag = out.ETag
		}
		if etag != "0123abcd" {
			t.Errorf("%s: ETag %q, want the quotes stripped: 0123abcd", c.name, etag)
		}
		reqs := f.requests()
		if len(reqs) != before+1 {
			t.Fatalf("%s: %d requests sent, want 1", c.name, len(reqs)-before)
		}
		r := reqs[len(reqs)-1]
		names := checksumHeaders(r.Header)
		if c.checksum.IsZero() {
			if len(names) != 0 {
				t.Errorf("%s: checksum headers %v sent, want none", c.name, names)
			}
		} else {
			if len(names) != 1 || r.Header.Get("X-Amz-Checksum-Crc64nvme") != crc {
				t.Errorf("%s: checksum headers %v (crc64nvme %q), want exactly x-amz-checksum-crc64nvme: %s", c.name, names, r.Header.Get("X-Amz-Checksum-Crc64nvme"), crc)
			}
		}
		for _, h := range []string{"X-Amz-Trailer", "X-Amz-Sdk-Checksum-Algorithm", "X-Amz-Decoded-Content-Length"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("%s: %s: %q sent, want none", c.name, h, v)
			}
		}
		if ce := r.Header.Get("Content-Encoding"); strings.Contains(ce, "aws-chunked") {
			t.Errorf("%s: Content-Encoding %q, want no aws-chunked", c.name, ce)
		}
		if got := r.Header.Get("X-Amz-Content-Sha256"); got != c.wantSHA {
			t.Errorf("%s: x-amz-content-sha256 %q, want %q", c.name, got, c.wantSHA)
		}
		if !bytes.Equal(r.Body, data) {
			t.Errorf("%s: body %q, want %q", c.name, r.Body, data)
		}
	}
}

// The body is read from its current position for exactly ContentLength bytes, also when the
// reader holds more and the SDK seeks it to hash and rewind.
func TestBodyWindow(t *testing.T) {
	f, srv := newFake(t, okPut)
	st := newTestStore(t, srv.URL, false)
	data := []byte("0123456789abcdef")
	r := bytes.NewReader(data)
	if _, err := r.Seek(3, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: "k", Body: r, ContentLength: 5}); err != nil {
		t.Fatal(err)
	}
	got := f.requests()[0]
	if string(got.Body) != "34567" || got.Header.Get("X-Amz-Content-Sha256") != sha256Hex([]byte("34567")) {
		t.Fatalf("sent %q signed %s, want 34567 signed with its own SHA-256", got.Body, got.Header.Get("X-Amz-Content-Sha256"))
	}

	// A body shorter than ContentLength fails without a response, instead of a short upload.
	_, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: "k", Body: bytes.NewReader(data[:4]), ContentLength: 10})
	var re *store.ResponseError
	if err == nil || errors.As(err, &re) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short body: err %v, want a transport error wrapping io.ErrUnexpectedEOF", err)
	}
}

func TestCompleteRequest(t *testing.T) {
	f, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-amz-checksum-crc64nvme", "full==")
		w.Header().Set("x-amz-checksum-type", "FULL_OBJECT")
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"abc-2"</ETag><ChecksumCRC64NVME>full==</ChecksumCRC64NVME><ChecksumType>FULL_OBJECT</ChecksumType></CompleteMultipartUploadResult>`)
	})
	st := newTestStore(t, srv.URL, false)
	out, err := st.CompleteMultipartUpload(context.Background(), &store.CompleteMultipartUploadInput{
		Bucket: "b", Key: "k", UploadID: "up1",
		Parts: []store.CompletedPart{
			{PartNumber: 1, ETag: "e1", Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: "p1=="}},
			{PartNumber: 2, ETag: `"e2"`, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: "p2=="}},
		},
		FullObjectChecksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: "full=="},
		ChecksumType:       store.ChecksumTypeFullObject,
		IfNoneMatch:        true,
		ObjectSize:         12345,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.ETag != "abc-2" || out.Checksums.CRC64NVME != "full==" || out.Checksums.Type != store.ChecksumTypeFullObject {
		t.Errorf("output %+v", out)
	}
	r := f.requests()[0]
	for h, want := range map[string]string{
		"If-None-Match":            "*",
		"X-Amz-Mp-Object-Size":     "12345",
		"X-Amz-Checksum-Crc64nvme": "full==",
		"X-Amz-Checksum-Type":      "FULL_OBJECT",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s: %q, want %q", h, got, want)
		}
	}
	if r.Header.Get("X-Amz-Sdk-Checksum-Algorithm") != "" || r.Header.Get("Content-Encoding") != "" {
		t.Errorf("unexpected checksum framing headers: %v", r.Header)
	}
	body := string(r.Body)
	for _, want := range []string{
		`<ETag>&#34;e1&#34;</ETag>`, `<ETag>&#34;e2&#34;</ETag>`, // quoted once, however the caller wrote it
		`<ChecksumCRC64NVME>p1==</ChecksumCRC64NVME>`, `<ChecksumCRC64NVME>p2==</ChecksumCRC64NVME>`,
		`<PartNumber>1</PartNumber>`, `<PartNumber>2</PartNumber>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("Complete body lacks %s:\n%s", want, body)
		}
	}
}

// A 200 whose body is <Error> must not be taken for success.
func TestCompleteEmbeddedError(t *testing.T) {
	_, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-amz-request-id", "req-200err")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message><RequestId>req-200err</RequestId></Error>`)
	})
	st := newTestStore(t, srv.URL, false)
	out, err := st.CompleteMultipartUpload(context.Background(), &store.CompleteMultipartUploadInput{
		Bucket: "b", Key: "k", UploadID: "u", Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}},
	})
	var re *store.ResponseError
	if err == nil || out != nil || !errors.As(err, &re) {
		t.Fatalf("got %+v, %v; want a *store.ResponseError", out, err)
	}
	if re.Code != "InternalError" || re.Op != "CompleteMultipartUpload" || re.RequestID != "req-200err" || !strings.Contains(re.Message, "internal error") {
		t.Fatalf("ResponseError %+v", re)
	}
	// The SDK reports the embedded error as a 500, as AWS advises treating it.
	if re.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", re.StatusCode)
	}
}

// Answers that break the protocol are errors wrapping store.ErrNonCompliant, never nil results.
func TestNonCompliant(t *testing.T) {
	ctx := context.Background()
	body := func(s string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, s) }
	}
	cases := []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request)
		do     func(st *s3Store) (any, error)
	}{
		{"Create without UploadId", body(`<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key></InitiateMultipartUploadResult>`),
			func(st *s3Store) (any, error) {
				return st.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "b", Key: "k"})
			}},
		{"Create with malformed XML", body(`<InitiateMultipartUploadResult><UploadId>u`),
			func(st *s3Store) (any, error) {
				return st.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "b", Key: "k"})
			}},
		{"Complete with malformed XML", body(`<CompleteMultipartUploadResult><ETag>"x"</Et`),
			func(st *s3Store) (any, error) {
				return st.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: "b", Key: "k", UploadID: "u", Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}}})
			}},
		{"UploadPart without ETag", func(w http.ResponseWriter, r *http.Request) {},
			func(st *s3Store) (any, error) {
				return st.UploadPart(ctx, &store.UploadPartInput{Bucket: "b", Key: "k", UploadID: "u", PartNumber: 1, Body: strings.NewReader("x"), ContentLength: 1})
			}},
		{"ListParts truncated without marker", body(`<ListPartsResult><IsTruncated>true</IsTruncated><Part><PartNumber>1</PartNumber><ETag>"e"</ETag><Size>1</Size></Part></ListPartsResult>`),
			func(st *s3Store) (any, error) {
				return st.ListParts(ctx, &store.ListPartsInput{Bucket: "b", Key: "k", UploadID: "u"})
			}},
		{"ListParts part without ETag", body(`<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>1</PartNumber><Size>1</Size></Part></ListPartsResult>`),
			func(st *s3Store) (any, error) {
				return st.ListParts(ctx, &store.ListPartsInput{Bucket: "b", Key: "k", UploadID: "u"})
			}},
		{"ListMultipartUploads truncated without marker", body(`<ListMultipartUploadsResult><IsTruncated>true</IsTruncated></ListMultipartUploadsResult>`),
			func(st *s3Store) (any, error) {
				return st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: "b"})
			}},
		{"HeadObject without ETag", func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Length", "3") },
			func(st *s3Store) (any, error) {
				return st.HeadObject(ctx, &store.HeadObjectInput{Bucket: "b", Key: "k"})
			}},
		{"GetObject range ignored", body(`whole object`),
			func(st *s3Store) (any, error) {
				return st.GetObject(ctx, &store.GetObjectInput{Bucket: "b", Key: "k", Offset: 2, Length: 3})
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, srv := newFake(t, c.handle)
			out, err := c.do(newTestStore(t, srv.URL, false))
			if !errors.Is(err, store.ErrNonCompliant) {
				t.Fatalf("err %v, want one wrapping store.ErrNonCompliant", err)
			}
			var re *store.ResponseError
			if !errors.As(err, &re) || re.StatusCode != http.StatusOK || re.Op == "" {
				t.Fatalf("err %#v, want a *store.ResponseError with the 200 the store sent", err)
			}
			if out != nil && !isNilPtr(out) {
				t.Fatalf("result %+v alongside the error, want nil", out)
			}
		})
	}
}

// TestCommitWithoutETag: a 200 PutObject or Complete answer without an ETag (Ceph RGW sends
// <ETag></ETag>) is passed on with an empty ETag, not failed: the writer's HEAD decides.
func TestCommitWithoutETag(t *testing.T) {
	ctx := context.Background()
	body := func(s string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, s) }
	}
	complete := func(st *s3Store) (string, error) {
		out, err := st.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: "b", Key: "k", UploadID: "u", Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}}})
		if err != nil {
			return "", err
		}
		return out.ETag, nil
	}
	cases := []struct {
		name   string
		handle http.HandlerFunc
		do     func(st *s3Store) (string, error)
	}{
		{"Complete with empty ETag", body(`<CompleteMultipartUploadResult><Bucket>b</Bucket><ETag></ETag></CompleteMultipartUploadResult>`), complete},
		{"Complete without ETag", body(`<CompleteMultipartUploadResult><Bucket>b</Bucket></CompleteMultipartUploadResult>`), complete},
		{"PutObject without ETag", func(w http.ResponseWriter, r *http.Request) {}, func(st *s3Store) (string, error) {
			out, err := st.PutObject(ctx, &store.PutObjectInput{Bucket: "b", Key: "k", Body: strings.NewReader("x"), ContentLength: 1})
			if err != nil {
				return "", err
			}
			return out.ETag, nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, srv := newFake(t, c.handle)
			etag, err := c.do(newTestStore(t, srv.URL, false))
			if err != nil || etag != "" {
				t.Fatalf("got ETag %q, %v; want an empty ETag and no error", etag, err)
			}
		})
	}
}

func isNilPtr(v any) bool {
	switch p := v.(type) {
	case *store.PutObjectOutput:
		return p == nil
	case *store.CreateMultipartUploadOutput:
		return p == nil
	case *store.UploadPartOutput:
		return p == nil
	case *store.CompleteMultipartUploadOutput:
		return p == nil
	case *store.ListPartsOutput:
		return p == nil
	case *store.ListMultipartUploadsOutput:
		return p == nil
	case *store.HeadObjectOutput:
		return p == nil
	case *store.GetObjectOutput:
		return p == nil
	}
	return false
}

// One call is one attempt, whatever retry settings the client was built with, and the error
// carries every raw fact the classifier needs.
func TestNoSDKRetries(t *testing.T) {
	f, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-amz-request-id", "req-503")
		w.Header().Set("Retry-After", "3")
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>req-503</RequestId></Error>`)
	})
	retrying, err := NewFromClient(s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		RetryMaxAttempts: 5,
	}))
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*s3Store{"New": newTestStore(t, srv.URL, false), "NewFromClient(RetryMaxAttempts 5)": retrying.(*s3Store)} {
		before := len(f.requests())
		_, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: "k", Body: strings.NewReader("abc"), ContentLength: 3})
		if n := len(f.requests()) - before; n != 1 {
			t.Errorf("%s: %d requests, want 1 (SDK retries off)", name, n)
		}
		var re *store.ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("%s: err %v, want *store.ResponseError", name, err)
		}
		want := store.ResponseError{Op: "PutObject", StatusCode: 503, Code: "SlowDown", Message: "Please reduce your request rate.", RequestID: "req-503", RetryAfter: 3 * time.Second}
		if re.Op != want.Op || re.StatusCode != want.StatusCode || re.Code != want.Code || re.Message != want.Message || re.RequestID != want.RequestID || re.RetryAfter != want.RetryAfter || re.Err == nil {
			t.Errorf("%s: got %+v, want %+v", name, *re, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"X-Amz-Retry-After": {"1500"}}, 1500 * time.Millisecond},
		{http.Header{"X-Amz-Retry-After": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {now.Add(4 * time.Second).Format(http.TimeFormat)}}, 4 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{}, 0},
	} {
		if got := retryAfter(c.h, now); got != c.want {
			t.Errorf("retryAfter(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

// A 404 with no body (every HEAD) has no S3 code: the SDK's invented "NotFound" is dropped.
// A 404 with a body keeps the store's code; DeleteObject of a missing key is success.
func TestNotFound(t *testing.T) {
	_, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
	})
	st := newTestStore(t, srv.URL, false)
	ctx := context.Background()
	_, err := st.HeadObject(ctx, &store.HeadObjectInput{Bucket: "b", Key: "k"})
	var re *store.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 404 || re.Code != "" || re.Op != "HeadObject" {
		t.Fatalf("HeadObject: %#v, want a 404 ResponseError with no code", err)
	}
	_, err = st.GetObject(ctx, &store.GetObjectInput{Bucket: "b", Key: "k"})
	if !errors.As(err, &re) || re.StatusCode != 404 || re.Code != "NoSuchKey" || re.Message == "" {
		t.Fatalf("GetObject: %#v, want a 404 NoSuchKey ResponseError", err)
	}
	if err := st.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: "b", Key: "k"}); err != nil {
		t.Fatalf("DeleteObject of a missing key: %v, want nil", err)
	}
}

// An error status whose document the connection dropped says so: the code is unknown, not
// absent (Ceph RGW has been seen to answer a PUT that way).
func TestErrorDocumentLost(t *testing.T) {
	_, srv := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		s3test.CutErrorDocument(w, http.StatusNotFound, "<Error><Code>NoSuchBu")
	})
	st := newTestStore(t, srv.URL, false)
	_, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: "k", Body: strings.NewReader("x"), ContentLength: 1})
	var re *store.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 404 || re.Code != "" || !strings.Contains(re.Message, "error document lost") || re.DocumentLost == nil {
		t.Fatalf("PutObject: %#v, want a 404 ResponseError saying its document was lost", err)
	}
	if k := sperrors.Classify(err).Kind; k != sperrors.Transient {
		t.Errorf("classified %s, want Transient: another attempt gets the store's whole answer", k)
	}
}

func TestTransportErrors(t *testing.T) {
	// A port nothing listens on: dial fails, nothing answered.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	st := newTestStore(t, "http://"+addr, false)
	_, err = st.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "b", Key: "k"})
	var oe *net.OpError
	var re *store.ResponseError
	if !errors.As(err, &oe) || errors.As(err, &re) || !strings.HasPrefix(err.Error(), "HeadObject: ") {
		t.Fatalf("dial failure: %v, want a *net.OpError wrapped with the op name and no ResponseError", err)
	}

	_, srv := newFake(t, okPut)
	st = newTestStore(t, srv.URL, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = st.PutObject(ctx, &store.PutObjectInput{Bucket: "b", Key: "k", Body: strings.NewReader("x"), ContentLength: 1})
	if !errors.Is(err, context.Canceled) || errors.As(err, &re) {
		t.Fatalf("cancelled: %v, want context.Canceled and no ResponseError", err)
	}
}

// Invalid input is refused before anything reaches the wire.
func TestInvalidInputSendsNothing(t *testing.T) {
	f, srv := newFake(t, okPut)
	st := newTestStore(t, srv.URL, false)
	ctx := context.Background()
	long := strings.Repeat("k", store.MaxKeyLength+1)
	body := strings.NewReader("x")
	errs := map[string]error{}
	_, errs["put empty bucket"] = st.PutObject(ctx, &store.PutObjectInput{Key: "k", Body: body, ContentLength: 1})
	_, errs["put nil body"] = st.PutObject(ctx, &store.PutObjectInput{Bucket: "b", Key: "k"})
	_, errs["put negative length"] = st.PutObject(ctx, &store.PutObjectInput{Bucket: "b", Key: "k", Body: body, ContentLength: -1})
	_, errs["put nil input"] = st.PutObject(ctx, nil)
	_, errs["part long key"] = st.UploadPart(ctx, &store.UploadPartInput{Bucket: "b", Key: long, UploadID: "u", PartNumber: 1, Body: body})
	_, errs["part number 0"] = st.UploadPart(ctx, &store.UploadPartInput{Bucket: "b", Key: "k", UploadID: "u", Body: body})
	_, errs["create bad utf8"] = st.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "b", Key: "a\xffb"})
	_, errs["complete out of order"] = st.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: "b", Key: "k", UploadID: "u",
		Parts: []store.CompletedPart{{PartNumber: 2, ETag: "e"}, {PartNumber: 1, ETag: "e"}}})
	_, errs["list parts no upload id"] = st.ListParts(ctx, &store.ListPartsInput{Bucket: "b", Key: "k"})
	_, errs["list uploads empty bucket"] = st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{})
	errs["abort empty key"] = st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: "b", UploadID: "u"})
	_, errs["head empty key"] = st.HeadObject(ctx, &store.HeadObjectInput{Bucket: "b"})
	_, errs["get negative offset"] = st.GetObject(ctx, &store.GetObjectInput{Bucket: "b", Key: "k", Offset: -1})
	errs["delete empty bucket"] = st.DeleteObject(ctx, &store.DeleteObjectInput{Key: "k"})
	for name, err := range errs {
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want store.ErrInvalidInput", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid input, want 0", n)
	}
}

func TestHeadChecksumMode(t *testing.T) {
	f, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", "42")
		w.Header().Set("x-amz-checksum-crc64nvme", "crc64==")
		w.Header().Set("x-amz-checksum-crc32c", "crc32c==")
		w.Header().Set("x-amz-checksum-type", "FULL_OBJECT")
		w.Header().Set("x-amz-meta-color", "blue")
	})
	st := newTestStore(t, srv.URL, false)
	out, err := st.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "b", Key: "k", ChecksumMode: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Header.Get("X-Amz-Checksum-Mode"); got != "ENABLED" {
		t.Errorf("x-amz-checksum-mode %q, want ENABLED", got)
	}
	want := store.Checksums{CRC64NVME: "crc64==", CRC32C: "crc32c==", Type: store.ChecksumTypeFullObject}
	if out.Size != 42 || out.ETag != "e" || out.Checksums != want || out.Metadata["color"] != "blue" {
		t.Errorf("got %+v, want size 42, ETag e, checksums %+v, metadata color=blue", out, want)
	}
	if _, err := st.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "b", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[1].Header.Get("X-Amz-Checksum-Mode"); got != "" {
		t.Errorf("x-amz-checksum-mode %q without ChecksumMode, want none", got)
	}
}

func TestGetObjectRange(t *testing.T) {
	f, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Range", "bytes 2-4/10")
		w.WriteHeader(http.StatusPartialContent)
		_, _ = io.WriteString(w, "234")
	})
	st := newTestStore(t, srv.URL, false)
	out, err := st.GetObject(context.Background(), &store.GetObjectInput{Bucket: "b", Key: "k", Offset: 2, Length: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	data, _ := io.ReadAll(out.Body)
	if string(data) != "234" || out.Size != 3 || out.ETag != "e" {
		t.Errorf("got %q size %d etag %q", data, out.Size, out.ETag)
	}
	if got := f.requests()[0].Header.Get("Range"); got != "bytes=2-4" {
		t.Errorf("Range %q, want bytes=2-4", got)
	}
}

func TestListPartsFollowsPages(t *testing.T) {
	pages := map[string]string{
		"":  `<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>1</NextPartNumberMarker><Part><PartNumber>1</PartNumber><ETag>"e1"</ETag><Size>5</Size><ChecksumCRC64NVME>c1</ChecksumCRC64NVME></Part></ListPartsResult>`,
		"1": `<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>2</NextPartNumberMarker><Part><PartNumber>2</PartNumber><ETag>"e2"</ETag><Size>5</Size></Part></ListPartsResult>`,
		"2": `<ListPartsResult><IsTruncated>false</IsTruncated><Part><PartNumber>3</PartNumber><ETag>"e3"</ETag><Size>1</Size></Part></ListPartsResult>`,
	}
	f, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, pages[r.URL.Query().Get("part-number-marker")])
	})
	st := newTestStore(t, srv.URL, false)
	out, err := st.ListParts(context.Background(), &store.ListPartsInput{Bucket: "b", Key: "k", UploadID: "u", PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Parts) != 3 || out.Parts[0].ETag != "e1" || out.Parts[0].Checksums.CRC64NVME != "c1" || out.Parts[2].PartNumber != 3 || out.Parts[2].Size != 1 {
		t.Fatalf("parts %+v", out.Parts)
	}
	reqs := f.requests()
	if len(reqs) != 3 || !strings.Contains(reqs[0].Query, "max-parts=1") {
		t.Fatalf("%d requests (first query %q), want 3 with max-parts=1", len(reqs), reqs[0].Query)
	}
}

func TestConstructors(t *testing.T) {
	if _, err := NewFromClient(nil); err == nil {
		t.Error("NewFromClient(nil): no error")
	}
	for _, cfg := range []Config{
		{Endpoint: "127.0.0.1:9000", AccessKey: "a", SecretKey: "b"},
		{Endpoint: "ftp://host", AccessKey: "a", SecretKey: "b"},
		{Endpoint: "http://host", AccessKey: "a"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
	if _, err := New(Config{Endpoint: "https://s3.example.com", AccessKey: "a", SecretKey: "b"}); err != nil {
		t.Errorf("New with a valid config: %v", err)
	}
	hc, _ := newHTTPClient(nil)
	tr, ok := hc.Transport.(*http.Transport)
	if !ok || tr.MaxIdleConnsPerHost < 64 || tr.DisableKeepAlives {
		t.Errorf("default transport %+v, want keep-alive and >= 64 idle connections per host", tr)
	}
}

func TestListMultipartUploadsFollowsPages(t *testing.T) {
	f, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch q.Get("key-marker") + "|" + q.Get("upload-id-marker") {
		case "|":
			_, _ = io.WriteString(w, `<ListMultipartUploadsResult><IsTruncated>true</IsTruncated><NextKeyMarker>p/a</NextKeyMarker><NextUploadIdMarker>u1</NextUploadIdMarker><Upload><Key>p/a</Key><UploadId>u1</UploadId><Initiated>2026-01-02T03:04:05.000Z</Initiated></Upload></ListMultipartUploadsResult>`)
		case "p/a|u1":
			_, _ = io.WriteString(w, `<ListMultipartUploadsResult><IsTruncated>false</IsTruncated><Upload><Key>p/a</Key><UploadId>u2</UploadId></Upload></ListMultipartUploadsResult>`)
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	st := newTestStore(t, srv.URL, false)
	out, err := st.ListMultipartUploads(context.Background(), &store.ListMultipartUploadsInput{Bucket: "b", Prefix: "p/", PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Uploads) != 2 || out.Uploads[0].UploadID != "u1" || out.Uploads[1].UploadID != "u2" || out.Uploads[0].Initiated.IsZero() {
		t.Fatalf("uploads %+v", out.Uploads)
	}
	reqs := f.requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].Query, "max-uploads=1") || !strings.Contains(reqs[0].Query, "prefix=p%2F") {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestInsecureSkipVerifyOnlyOnOwnClient(t *testing.T) {
	insecure, err := catrust.Config(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	ihc, _ := newHTTPClient(insecure)
	tr, _ := ihc.Transport.(*http.Transport)
	if tr == nil || tr.TLSClientConfig == nil || !tr.TLSClientConfig.InsecureSkipVerify {
		t.Fatal("InsecureSkipVerify not applied to the built client")
	}
	if dhc, _ := newHTTPClient(nil); dhc.Transport.(*http.Transport).TLSClientConfig != nil {
		t.Fatal("verification must stay on by default")
	}
	if _, err := New(Config{InsecureSkipVerify: true, HTTPClient: &http.Client{}}); err == nil {
		t.Fatal("InsecureSkipVerify with a caller's HTTPClient must be refused")
	}
}

// Config.Credentials signs instead of static keys (keys that are renewed, say); both at once is
// refused.
func TestCredentialsSign(t *testing.T) {
	given := credentials.NewStaticCredentialsProvider("given", "secret", "TOKEN2")
	for _, c := range []Config{{AccessKey: "a", SecretKey: "b", Credentials: given}, {SessionToken: "t", Credentials: given}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted static keys and Credentials together", c)
		}
	}
	var auth, token string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, token = r.Header.Get("Authorization"), r.Header.Get("X-Amz-Security-Token")
		okPut(w, r)
	}))
	defer srv.Close()
	st, err := New(Config{Endpoint: srv.URL, Credentials: given, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: "k", Body: bytes.NewReader(nil)}); err != nil {
		t.Fatal(err)
	}
	if token != "TOKEN2" || !strings.Contains(auth, "Credential=given/") {
		t.Errorf("signed with %q, token %q; want the Credentials' keys", auth, token)
	}
	// Anonymous credentials, even in a cache, sign nothing: the adapter's wrapper, which
	// registers the keys a provider hands out as secrets, lets the SDK see what it wraps.
	for _, anon := range []aws.CredentialsProvider{aws.AnonymousCredentials{}, aws.NewCredentialsCache(aws.AnonymousCredentials{})} {
		st, err := New(Config{Endpoint: srv.URL, Credentials: anon, PathStyle: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.PutObject(context.Background(), &store.PutObjectInput{Bucket: "b", Key: "k", Body: bytes.NewReader(nil)}); err != nil {
			t.Fatalf("%T: %v", anon, err)
		}
		if auth != "" {
			t.Errorf("%T: signed with %q; want an unsigned request", anon, auth)
		}
	}
}

// An UploadPart answered 200 with an error document is still an error: skip200CheckWhenEmpty
// passes any answer that may have a body (here one of unknown length) to the SDK's check.
func TestUploadPartEmbeddedError(t *testing.T) {
	_, srv := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"0123abcd"`)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `<Error><Code>InternalError</Code><Message>try again</Message></Error>`)
		w.(http.Flusher).Flush() // no Content-Length: the length is unknown until the end
	})
	st := newTestStore(t, srv.URL, false)
	out, err := st.UploadPart(context.Background(), &store.UploadPartInput{Bucket: "b", Key: "k", UploadID: "u", PartNumber: 1,
		Body: strings.NewReader("x"), ContentLength: 1, Checksum: store.Checksum{Algorithm: store.ChecksumCRC32, Value: "jHNlIQ=="}})
	var re *store.ResponseError
	if err == nil || out != nil || !errors.As(err, &re) || re.Code != "InternalError" || re.StatusCode != http.StatusInternalServerError {
		t.Fatalf("got %+v, %v; want the embedded InternalError as a 500", out, err)
	}
}

// Every call's stack runs the SDK's 200-error check through skip200CheckWhenEmpty.
func TestError200CheckWrapped(t *testing.T) {
	_, srv := newFake(t, okPut)
	st := newTestStore(t, srv.URL, false)
	var got middleware.DeserializeMiddleware
	record := func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			got, _ = stack.Deserialize.Get(s3Error200ID)
			return nil
		})
	}
	c := newCall("UploadPart")
	_, err := st.client.UploadPart(context.Background(), &s3.UploadPartInput{Bucket: aws.String("b"), Key: aws.String("k"),
		UploadId: aws.String("u"), PartNumber: aws.Int32(1), Body: strings.NewReader("x"), ContentLength: aws.Int64(1)},
		c.opts(payloadSHA256), record)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(skipWhenEmpty); !ok {
		t.Fatalf("%s is %T, want skipWhenEmpty", s3Error200ID, got)
	}
}

// checkCounter stands in for the SDK's 200-error check.
type checkCounter struct{ calls int }

func (*checkCounter) ID() string { return s3Error200ID }

func (c *checkCounter) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	c.calls++
	return next.HandleDeserialize(ctx, in)
}

// The check is skipped only for an answer known to be empty, and the request is sent once
// whichever way it goes.
func TestSkipWhenEmpty(t *testing.T) {
	for _, c := range []struct {
		name      string
		length    int64
		err       error
		wantCheck int
	}{
		{"empty", 0, nil, 0},
		{"unknown length", -1, nil, 1},
		{"with a body", 12, nil, 1},
		{"failed", 0, errors.New("reset"), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := &checkCounter{}
			sent := 0
			next := middleware.DeserializeHandlerFunc(func(context.Context, middleware.DeserializeInput) (middleware.DeserializeOutput, middleware.Metadata, error) {
				sent++
				resp := &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusOK, ContentLength: c.length}}
				return middleware.DeserializeOutput{RawResponse: resp}, middleware.Metadata{}, c.err
			})
			_, _, err := skipWhenEmpty{check: check}.HandleDeserialize(context.Background(), middleware.DeserializeInput{}, next)
			if !errors.Is(err, c.err) || sent != 1 || check.calls != c.wantCheck {
				t.Fatalf("err %v, sent %d, check ran %d times; want %v, 1, %d", err, sent, check.calls, c.err, c.wantCheck)
			}
		})
	}
}

// uploadPartBenchStore is the store the UploadPart benchmarks send through: an in-process
// server that reads each body and answers 200 with an ETag, closed when the benchmark ends.
func uploadPartBenchStore(b *testing.B) *s3Store {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		okPut(w, r)
	}))
	b.Cleanup(srv.Close)
	st, err := New(Config{Endpoint: srv.URL, AccessKey: "AKID", SecretKey: "SECRET", PathStyle: true})
	if err != nil {
		b.Fatal(err)
	}
	return st.(*s3Store)
}

// BenchmarkUploadPartSDKAlone is BenchmarkUploadPart's floor: the same part, server and client
// settings, sent by a bare aws-sdk-go-v2 UploadPart call (UNSIGNED-PAYLOAD set on the client,
// nothing of the adapter's). What BenchmarkUploadPart allocates beyond it is the adapter's.
func BenchmarkUploadPartSDKAlone(b *testing.B) {
	st := uploadPartBenchStore(b)
	o := st.client.Options()
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	client := s3.New(o)
	data := make([]byte, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		_, err := client.UploadPart(context.Background(), &s3.UploadPartInput{Bucket: aws.String("b"), Key: aws.String("k"),
			UploadId: aws.String("u"), PartNumber: aws.Int32(3), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
			ChecksumCRC64NVME: aws.String("AAAAAAAAAAA=")})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUploadPart reports what one UploadPart of a 64 KiB part allocates through the
// adapter, against an in-process server (whose own allocations are in the figure too: compare
// runs with benchstat rather than reading the figure as the adapter's alone).
func BenchmarkUploadPart(b *testing.B) {
	st := uploadPartBenchStore(b)
	data := make([]byte, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		_, err := st.UploadPart(context.Background(), &store.UploadPartInput{Bucket: "b", Key: "k", UploadID: "u", PartNumber: 3,
			Body: bytes.NewReader(data), ContentLength: int64(len(data)),
			Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: "AAAAAAAAAAA="}})
		if err != nil {
			b.Fatal(err)
		}
	}
}
