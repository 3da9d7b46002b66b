package miniogo_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/crc64nvme"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/s3test"
)

// request is what the fake server saw.
type request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// fake is an httptest S3 endpoint that records every request and answers with handle.
type fake struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []request
	handle func(w http.ResponseWriter, r *request)
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *request)) *fake {
	t.Helper()
	f := &fake{t: t, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("fake server: read body: %v", err)
		}
		rec := request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: b}
		f.mu.Lock()
		f.reqs = append(f.reqs, rec)
		f.mu.Unlock()
		f.handle(w, &rec)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

func (f *fake) store(t *testing.T) store.Store {
	t.Helper()
	s, err := miniogo.New(miniogo.Config{Endpoint: f.srv.URL, AccessKey: "AKIDTEST", SecretKey: "secretsecret", PathStyle: true})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func ok200(w http.ResponseWriter, _ *request) {
	w.Header().Set("ETag", `"0123abcd"`)
	w.Header().Set("x-amz-request-id", "REQ1")
	w.WriteHeader(http.StatusOK)
}

func crc64b64(b []byte) string {
	var sum [8]byte
	binary.BigEndian.PutUint64(sum[:], crc64nvme.Checksum(b))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func writeXML(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", "REQXML")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func checksumHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum") || strings.HasPrefix(strings.ToLower(k), "x-amz-sdk-checksum") {
			out = append(out, k)
		}
	}
	return out
}

// assertPlainBody checks a request carried the body as is: no aws-chunked, no trailer.
func assertPlainBody(t *testing.T, r request, want []byte) {
	t.Helper()
	if ce := r.Header.Get("Content-Encoding"); strings.Contains(ce, "aws-chunked") {
		t.Errorf("Content-Encoding = %q, want no aws-chunked", ce)
	}
	for _, h := range []string{"X-Amz-Trailer", "X-Amz-Decoded-Content-Length"} {
		if v := r.Header.Get(h); v != "" {
			t.Errorf("%s = %q, want absent", h, v)
		}
	}
	if strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		t.Errorf("X-Amz-Content-Sha256 = %q, want no streaming signature", r.Header.Get("X-Amz-Content-Sha256"))
	}
	if !bytes.Equal(r.Body, want) {
		t.Errorf("body = %q, want %q", r.Body, want)
	}
}

func TestPutObjectHeaders(t *testing.T) {
	f := newFake(t, ok200)
	s := f.store(t)
	ctx := context.Background()
	data := []byte("hello, checksummed world")

	// The body starts at offset 3: only the bytes from there must be sent.
	src := bytes.NewReader(append([]byte("xyz"), data...))
	_, _ = src.Seek(3, io.SeekStart)
	sum := crc64b64(data)
	out, err := s.PutObject(ctx, &store.PutObjectInput{
		Bucket: "bkt", Key: "dir/k", Body: src, ContentLength: int64(len(data)),
		Checksum:    store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum},
		ContentType: "text/plain", Metadata: map[string]string{"origin": "test"}, IfNoneMatch: true,
	})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	if out.ETag != "0123abcd" || out.RequestID != "REQ1" {
		t.Errorf("output = %+v, want unquoted ETag 0123abcd and request id REQ1", out)
	}

	// Without a checksum or MD5 the payload is signed with its real SHA-256.
	plain := []byte("no checksum here")
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: "bkt", Key: "k2", Body: bytes.NewReader(plain), ContentLength: int64(len(plain))}); err != nil {
		t.Fatalf("PutObject without checksum: %v", err)
	}
	// With only Content-MD5 the payload is unsigned.
	md := md5.Sum(plain)
	md5b64 := base64.StdEncoding.EncodeToString(md[:])
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: "bkt", Key: "k3", Body: bytes.NewReader(plain), ContentLength: int64(len(plain)), ContentMD5: md5b64}); err != nil {
		t.Fatalf("PutObject with MD5: %v", err)
	}

	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPut || r.Path != "/bkt/dir/k" {
		t.Errorf("request = %s %s, want PUT /bkt/dir/k", r.Method, r.Path)
	}
	assertPlainBody(t, r, data)
	if got := r.Header.Get("x-amz-checksum-crc64nvme"); got != sum {
		t.Errorf("x-amz-checksum-crc64nvme = %q, want %q", got, sum)
	}
	if got := checksumHeaders(r.Header); len(got) != 1 {
		t.Errorf("checksum headers = %v, want only x-amz-checksum-crc64nvme", got)
	}
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != "UNSIGNED-PAYLOAD" {
		t.Errorf("X-Amz-Content-Sha256 = %q, want UNSIGNED-PAYLOAD when a checksum protects the body", got)
	}
	if got := r.Header.Get("Content-Type"); got != "text/plain" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := r.Header.Get("x-amz-meta-origin"); got != "test" {
		t.Errorf("x-amz-meta-origin = %q", got)
	}
	if got := r.Header.Get("If-None-Match"); got != "*" {
		t.Errorf("If-None-Match = %q, want *", got)
	}
	if got := r.Header.Get("Content-Md5"); got != "" {
		t.Errorf("Content-MD5 = %q, want none (not asked for)", got)
	}

	r = reqs[1]
	assertPlainBody(t, r, plain)
	if got := checksumHeaders(r.Header); len(got) != 0 {
		t.Errorf("checksum headers without a checksum: %v, want none", got)
	}
	h := sha256.Sum256(plain)
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(h[:]) {
		t.Errorf("X-Amz-Content-Sha256 = %q, want the body's SHA-256", got)
	}
	if r.Header.Get("If-None-Match") != "" {
		t.Errorf("If-None-Match sent without IfNoneMatch")
	}

	r = reqs[2]
	assertPlainBody(t, r, plain)
	if got := r.Header.Get("Content-Md5"); got != md5b64 {
		t.Errorf("Content-MD5 = %q, want %q", got, md5b64)
	}
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != "UNSIGNED-PAYLOAD" {
		t.Errorf("X-Amz-Content-Sha256 = %q, want UNSIGNED-PAYLOAD with Content-MD5", got)
	}
	if got := checksumHeaders(r.Header); len(got) != 0 {
		t.Errorf("checksum headers = %v, want none", got)
	}
}

func TestUploadPartHeaders(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *request) {
		w.Header().Set("x-amz-checksum-crc64nvme", r.Header.Get("x-amz-checksum-crc64nvme"))
		ok200(w, r)
	})
	s := f.store(t)
	data := bytes.Repeat([]byte("part"), 1000)
	sum := crc64b64(data)
	out, err := s.UploadPart(context.Background(), &store.UploadPartInput{
		Bucket: "bkt", Key: "k", UploadID: "up1", PartNumber: 7, Body: bytes.NewReader(data), ContentLength: int64(len(data)),
		Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum},
	})
	if err != nil {
		t.Fatalf("UploadPart: %v", err)
	}
	if out.ETag != "0123abcd" || out.Checksums.CRC64NVME != sum {
		t.Errorf("output = %+v, want ETag 0123abcd and the echoed checksum", out)
	}
	plain := []byte("no checksum")
	if _, err := s.UploadPart(context.Background(), &store.UploadPartInput{
		Bucket: "bkt", Key: "k", UploadID: "up1", PartNumber: 8, Body: bytes.NewReader(plain), ContentLength: int64(len(plain)),
	}); err != nil {
		t.Fatalf("UploadPart without checksum: %v", err)
	}

	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPut || r.Query.Get("partNumber") != "7" || r.Query.Get("uploadId") != "up1" {
		t.Errorf("request = %s %s %v", r.Method, r.Path, r.Query)
	}
	assertPlainBody(t, r, data)
	if got := r.Header.Get("x-amz-checksum-crc64nvme"); got != sum {
		t.Errorf("x-amz-checksum-crc64nvme = %q, want %q", got, sum)
	}
	if got := checksumHeaders(r.Header); len(got) != 1 {
		t.Errorf("checksum headers = %v, want only x-amz-checksum-crc64nvme", got)
	}
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != "UNSIGNED-PAYLOAD" {
		t.Errorf("X-Amz-Content-Sha256 = %q, want UNSIGNED-PAYLOAD", got)
	}
	r = reqs[1]
	assertPlainBody(t, r, plain)
	if got := checksumHeaders(r.Header); len(got) != 0 {
		t.Errorf("checksum headers without a checksum: %v, want none", got)
	}
	h := sha256.Sum256(plain)
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(h[:]) {
		t.Errorf("X-Amz-Content-Sha256 = %q, want the body's SHA-256", got)
	}
}

// TestOneAttempt proves minio-go's retryer is off: every operation answered 503 SlowDown
// reaches the server exactly once and comes back as a ResponseError with the raw facts.
func TestOneAttempt(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *request) {
		w.Header().Set("Retry-After", "3")
		if r.Method == http.MethodHead {
			w.Header().Set("x-amz-request-id", "REQ503")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		writeXML(w, http.StatusServiceUnavailable, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>REQ503</RequestId></Error>`)
	})
	s := f.store(t)
	ctx := context.Background()
	data := []byte("data")
	part := []store.CompletedPart{{PartNumber: 1, ETag: "e1"}}
	ops := map[string]func() error{
		"PutObject": func() error {
			_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader(data), ContentLength: 4})
			return err
		},
		"CreateMultipartUpload": func() error {
			_, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "bkt", Key: "k"})
			return err
		},
		"UploadPart": func() error {
			_, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: "bkt", Key: "k", UploadID: "u", PartNumber: 1, Body: bytes.NewReader(data), ContentLength: 4})
			return err
		},
		"ListParts": func() error {
			_, err := s.ListParts(ctx, &store.ListPartsInput{Bucket: "bkt", Key: "k", UploadID: "u"})
			return err
		},
		"CompleteMultipartUpload": func() error {
			_, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: "bkt", Key: "k", UploadID: "u", Parts: part})
			return err
		},
		"AbortMultipartUpload": func() error {
			return s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: "bkt", Key: "k", UploadID: "u"})
		},
		"HeadObject": func() error {
			_, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: "bkt", Key: "k"})
			return err
		},
		"GetObject": func() error {
			_, err := s.GetObject(ctx, &store.GetObjectInput{Bucket: "bkt", Key: "k"})
			return err
		},
		"DeleteObject": func() error {
			return s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: "bkt", Key: "k"})
		},
		"ListMultipartUploads": func() error {
			_, err := s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: "bkt"})
			return err
		},
	}
	for name, call := range ops {
		before := len(f.requests())
		err := call()
		if n := len(f.requests()) - before; n != 1 {
			t.Errorf("%s: server saw %d requests, want exactly 1", name, n)
		}
		var re *store.ResponseError
		if !errors.As(err, &re) {
			t.Errorf("%s: error %v (%T) is not a *store.ResponseError", name, err, err)
			continue
		}
		wantCode := "SlowDown"
		if name == "HeadObject" {
			wantCode = "" // a HEAD answer has no body, so no code
		}
		if re.Op != name || re.StatusCode != 503 || re.Code != wantCode || re.RequestID != "REQ503" || re.RetryAfter != 3*time.Second {
			t.Errorf("%s: ResponseError = %+v, want Op %s, 503 %q, request id REQ503, RetryAfter 3s", name, re, name, wantCode)
		}
		var me minio.ErrorResponse
		if !errors.As(err, &me) {
			t.Errorf("%s: minio.ErrorResponse not reachable through errors.As", name)
		}
	}
}

func TestInvalidInputSendsNothing(t *testing.T) {
	f := newFake(t, ok200)
	s := f.store(t)
	ctx := context.Background()
	errs := []error{
		func() error { _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: "bkt", Key: ""}); return err }(),
		func() error { _, err := s.PutObject(ctx, nil); return err }(),
		func() error {
			_, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: "bkt", Key: "k", UploadID: "u", PartNumber: 0, Body: bytes.NewReader(nil)})
			return err
		}(),
		func() error {
			_, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: "bkt", Key: "k", UploadID: "u"})
			return err
		}(),
		func() error {
			return s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: "bkt", Key: "k"})
		}(),
		func() error {
			_, err := s.GetObject(ctx, &store.GetObjectInput{Bucket: "bkt", Key: "k", Offset: -1})
			return err
		}(),
		// Body shorter than ContentLength: caught while hashing, before sending.
		func() error {
			_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader([]byte("ab")), ContentLength: 5})
			return err
		}(),
		// minio-go's stricter bucket-name rule: rejected locally.
		func() error { return s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: "ab", Key: "k"}) }(),
	}
	for i, err := range errs {
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("case %d: error %v does not wrap ErrInvalidInput", i, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("server saw %d requests for invalid inputs, want 0", n)
	}
}

func TestCreateMultipartUpload(t *testing.T) {
	var answer string
	f := newFake(t, func(w http.ResponseWriter, r *request) { writeXML(w, http.StatusOK, answer) })
	s := f.store(t)
	in := &store.CreateMultipartUploadInput{Bucket: "bkt", Key: "k", ChecksumAlgorithm: store.ChecksumCRC64NVME, ChecksumType: store.ChecksumTypeFullObject, ContentType: "application/x-parquet"}

	answer = `<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>UP-1</UploadId></InitiateMultipartUploadResult>`
	out, err := s.CreateMultipartUpload(context.Background(), in)
	if err != nil || out.UploadID != "UP-1" || out.RequestID != "REQXML" {
		t.Fatalf("CreateMultipartUpload = %+v, %v; want UP-1", out, err)
	}
	r := f.requests()[0]
	if r.Method != http.MethodPost || !hasKey(r.Query, "uploads") {
		t.Errorf("request = %s %v, want POST ?uploads", r.Method, r.Query)
	}
	for h, want := range map[string]string{"x-amz-checksum-algorithm": "CRC64NVME", "x-amz-checksum-type": "FULL_OBJECT", "Content-Type": "application/x-parquet"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}

	for name, body := range map[string]string{
		"no upload id": `<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key></InitiateMultipartUploadResult>`,
		"malformed":    `<InitiateMultipartUploadResult><UploadId>UP`,
		"empty":        ``,
	} {
		answer = body
		out, err := s.CreateMultipartUpload(context.Background(), in)
		if out != nil || !errors.Is(err, store.ErrNonCompliant) {
			t.Errorf("%s: got %+v, %v; want an ErrNonCompliant error", name, out, err)
		}
		var re *store.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 200 {
			t.Errorf("%s: error %v is not a ResponseError with status 200", name, err)
		}
	}
}

func hasKey(q url.Values, k string) bool { _, ok := q[k]; return ok }

func TestUploadPartWithoutETag(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *request) { w.WriteHeader(http.StatusOK) })
	s := f.store(t)
	out, err := s.UploadPart(context.Background(), &store.UploadPartInput{Bucket: "bkt", Key: "k", UploadID: "u", PartNumber: 1, Body: bytes.NewReader([]byte("x")), ContentLength: 1, ContentMD5: "x"})
	if out != nil || !errors.Is(err, store.ErrNonCompliant) {
		t.Fatalf("UploadPart without ETag = %+v, %v; want ErrNonCompliant", out, err)
	}
	// A PutObject answer without an ETag is passed on: the writer's HEAD decides what landed.
	out2, err := s.PutObject(context.Background(), &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader([]byte("x")), ContentLength: 1, ContentMD5: "x"})
	if err != nil || out2 == nil || out2.ETag != "" {
		t.Fatalf("PutObject without ETag = %+v, %v; want an empty ETag and no error", out2, err)
	}
}

type completeBody struct {
	Parts []struct {
		PartNumber        int
		ETag              string
		ChecksumCRC64NVME string
	} `xml:"Part"`
}

func TestCompleteMultipartUpload(t *testing.T) {
	var answer string
	f := newFake(t, func(w http.ResponseWriter, r *request) { writeXML(w, http.StatusOK, answer) })
	s := f.store(t)
	full := crc64b64([]byte("whole"))
	in := &store.CompleteMultipartUploadInput{
		Bucket: "bkt", Key: "k", UploadID: "UP-1",
		Parts: []store.CompletedPart{
			{PartNumber: 1, ETag: "e1", Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: "AAAAAAAAAAE="}},
			{PartNumber: 2, ETag: `"e2"`, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: "AAAAAAAAAAI="}},
		},
		FullObjectChecksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: full},
		ChecksumType:       store.ChecksumTypeFullObject,
		IfNoneMatch:        true,
		ObjectSize:         12345,
	}
	answer = `<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag>"abc-2"</ETag><ChecksumCRC64NVME>` + full + `</ChecksumCRC64NVME><ChecksumType>FULL_OBJECT</ChecksumType></CompleteMultipartUploadResult>`
	out, err := s.CompleteMultipartUpload(context.Background(), in)
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	if out.ETag != "abc-2" || out.Checksums.CRC64NVME != full || out.Checksums.Type != store.ChecksumTypeFullObject {
		t.Errorf("output = %+v", out)
	}
	r := f.requests()[0]
	if r.Method != http.MethodPost || r.Query.Get("uploadId") != "UP-1" {
		t.Errorf("request = %s %v", r.Method, r.Query)
	}
	for h, want := range map[string]string{
		"x-amz-checksum-crc64nvme": full, "x-amz-checksum-type": "FULL_OBJECT", "If-None-Match": "*", "x-amz-mp-object-size": "12345",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "x-amz-mp-object-size") {
		t.Errorf("x-amz-mp-object-size is not among the signed headers: %q", auth)
	}
	for k := range r.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-meta-") {
			t.Errorf("Complete sent metadata header %s", k)
		}
	}
	var body completeBody
	if err := xml.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("request body %q: %v", r.Body, err)
	}
	if len(body.Parts) != 2 || body.Parts[0].ETag != `"e1"` || body.Parts[1].ETag != `"e2"` || body.Parts[1].PartNumber != 2 || body.Parts[1].ChecksumCRC64NVME != "AAAAAAAAAAI=" {
		t.Errorf("request body parts = %+v", body.Parts)
	}

	// 200 with an embedded <Error>: an error with that code. InternalError is one minio-go
	// would retry; it must still be one request.
	before := len(f.requests())
	answer = `<?xml version="1.0" encoding="UTF-8"?>` + "\n\n" + `<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message><RequestId>R200</RequestId></Error>`
	_, err = s.CompleteMultipartUpload(context.Background(), in)
	var re *store.ResponseError
	// Reported as a 500, as the aws adapter's SDK does (store contract).
	if !errors.As(err, &re) || re.StatusCode != 500 || re.Code != "InternalError" || re.RequestID != "R200" {
		t.Errorf("200 with <Error>: err = %v, want ResponseError 500 InternalError R200", err)
	}
	if errors.Is(err, store.ErrNonCompliant) {
		t.Errorf("200 with <Error> reported as non-compliant: %v", err)
	}
	if n := len(f.requests()) - before; n != 1 {
		t.Errorf("200 with <Error>: %d requests, want 1", n)
	}

	for name, body := range map[string]string{
		"malformed": `<CompleteMultipartUploadResult><Bucket>b</Bu`,
		"no bucket": `<CompleteMultipartUploadResult><ETag>"x"</ETag></CompleteMultipartUploadResult>`,
	} {
		answer = body
		out, err := s.CompleteMultipartUpload(context.Background(), in)
		if out != nil || !errors.Is(err, store.ErrNonCompliant) {
			t.Errorf("%s: got %+v, %v; want ErrNonCompliant", name, out, err)
		}
		var re *store.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 200 {
			t.Errorf("%s: %v is not a ResponseError with status 200", name, err)
		}
	}
	// No body at all is a result without an ETag, as through the aws adapter.
	answer = ``
	if out, err := s.CompleteMultipartUpload(context.Background(), in); err != nil || out == nil || out.ETag != "" {
		t.Errorf("empty: got %+v, %v; want an empty ETag and no error", out, err)
	}
	// No ETag (Ceph RGW's <ETag></ETag>) is passed on: the writer's HEAD decides what landed.
	answer = `<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag></ETag></CompleteMultipartUploadResult>`
	if out, err := s.CompleteMultipartUpload(context.Background(), in); err != nil || out == nil || out.ETag != "" {
		t.Errorf("no etag: got %+v, %v; want an empty ETag and no error", out, err)
	}
}

func TestListPartsPages(t *testing.T) {
	const total = 7
	f := newFake(t, func(w http.ResponseWriter, r *request) {
		marker, _ := strconv.Atoi(r.Query.Get("part-number-marker"))
		maxParts, _ := strconv.Atoi(r.Query.Get("max-parts"))
		var b strings.Builder
		b.WriteString(`<ListPartsResult><Bucket>b</Bucket><Key>k</Key><UploadId>u</UploadId>`)
		n := marker
		for n < total && n-marker < maxParts {
			n++
			fmt.Fprintf(&b, `<Part><PartNumber>%d</PartNumber><ETag>"etag%d"</ETag><Size>%d</Size><ChecksumCRC64NVME>c%d</ChecksumCRC64NVME><LastModified>2026-01-02T03:04:05.000Z</LastModified></Part>`, n, n, n*10, n)
		}
		fmt.Fprintf(&b, `<IsTruncated>%v</IsTruncated><NextPartNumberMarker>%d</NextPartNumberMarker></ListPartsResult>`, n < total, n)
		writeXML(w, http.StatusOK, b.String())
	})
	s := f.store(t)
	out, err := s.ListParts(context.Background(), &store.ListPartsInput{Bucket: "bkt", Key: "k", UploadID: "u", PageSize: 3})
	if err != nil {
		t.Fatalf("ListParts: %v", err)
	}
	if len(out.Parts) != total {
		t.Fatalf("got %d parts, want %d", len(out.Parts), total)
	}
	for i, p := range out.Parts {
		n := int32(i + 1)
		if p.PartNumber != n || p.ETag != fmt.Sprintf("etag%d", n) || p.Size != int64(n)*10 || p.Checksums.CRC64NVME != fmt.Sprintf("c%d", n) || p.LastModified.IsZero() {
			t.Errorf("part %d = %+v", i, p)
		}
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Errorf("%d requests, want 3 pages", len(reqs))
	}
	for _, r := range reqs {
		if r.Query.Get("max-parts") != "3" {
			t.Errorf("max-parts = %q, want 3", r.Query.Get("max-parts"))
		}
	}
}

func TestListPartsStuckMarker(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *request) {
		writeXML(w, http.StatusOK, `<ListPartsResult><IsTruncated>true</IsTruncated><NextPartNumberMarker>0</NextPartNumberMarker></ListPartsResult>`)
	})
	_, err := f.store(t).ListParts(context.Background(), &store.ListPartsInput{Bucket: "bkt", Key: "k", UploadID: "u"})
	if !errors.Is(err, store.ErrNonCompliant) {
		t.Fatalf("ListParts with a stuck marker: %v, want ErrNonCompliant", err)
	}
}

func TestListMultipartUploadsPages(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *request) {
		if r.Query.Get("prefix") != "pre/" {
			t.Errorf("prefix = %q", r.Query.Get("prefix"))
		}
		switch r.Query.Get("key-marker") {
		case "":
			writeXML(w, http.StatusOK, `<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>true</IsTruncated><NextKeyMarker>pre/a</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>`+
				`<Upload><Key>pre/a</Key><UploadId>u1</UploadId><Initiated>2026-01-02T03:04:05.000Z</Initiated></Upload><Upload><Key>pre/a</Key><UploadId>u2</UploadId></Upload></ListMultipartUploadsResult>`)
		case "pre/a":
			if r.Query.Get("upload-id-marker") != "u2" {
				t.Errorf("upload-id-marker = %q", r.Query.Get("upload-id-marker"))
			}
			writeXML(w, http.StatusOK, `<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated><Upload><Key>pre/b%20c</Key><UploadId>u3</UploadId></Upload><EncodingType>url</EncodingType></ListMultipartUploadsResult>`)
		default:
			t.Errorf("unexpected key-marker %q", r.Query.Get("key-marker"))
		}
	})
	out, err := f.store(t).ListMultipartUploads(context.Background(), &store.ListMultipartUploadsInput{Bucket: "bkt", Prefix: "pre/", PageSize: 2})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	var got []string
	for _, u := range out.Uploads {
		got = append(got, u.Key+"@"+u.UploadID)
	}
	if want := "pre/a@u1 pre/a@u2 pre/b c@u3"; strings.Join(got, " ") != want {
		t.Errorf("uploads = %q, want %q", strings.Join(got, " "), want)
	}
	if out.Uploads[0].Initiated.IsZero() {
		t.Errorf("Initiated not parsed")
	}
	if reqs := f.requests(); len(reqs) != 2 || reqs[0].Query.Get("max-uploads") != "2" {
		t.Errorf("requests = %d, max-uploads = %q", len(reqs), reqs[0].Query.Get("max-uploads"))
	}
}

func TestHeadObject(t *testing.T) {
	sum := crc64b64([]byte("x"))
	f := newFake(t, func(w http.ResponseWriter, r *request) {
		if r.Path == "/bkt/missing" {
			w.Header().Set("x-amz-request-id", "R404")
			w.WriteHeader(http.StatusNotFound)
			return
		}
		h := w.Header()
		h.Set("Content-Length", "11")
		h.Set("ETag", `"e-3"`)
		h.Set("Last-Modified", "Mon, 02 Jan 2026 03:04:05 GMT")
		h.Set("Content-Type", "text/plain")
		h.Set("x-amz-meta-origin", "test")
		h.Set("x-amz-request-id", "RH")
		if r.Header.Get("x-amz-checksum-mode") == "ENABLED" {
			h.Set("x-amz-checksum-crc64nvme", sum)
			h.Set("x-amz-checksum-type", "FULL_OBJECT")
		}
		w.WriteHeader(http.StatusOK)
	})
	s := f.store(t)
	out, err := s.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "bkt", Key: "k", ChecksumMode: true})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if out.Size != 11 || out.ETag != "e-3" || out.ContentType != "text/plain" || out.Metadata["origin"] != "test" ||
		out.Checksums.CRC64NVME != sum || out.Checksums.Type != store.ChecksumTypeFullObject || out.RequestID != "RH" || out.LastModified.IsZero() {
		t.Errorf("HeadObject = %+v", out)
	}
	out, err = s.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "bkt", Key: "k"})
	if err != nil || out.Checksums.CRC64NVME != "" {
		t.Errorf("HeadObject without ChecksumMode = %+v, %v; want no checksum", out, err)
	}
	if r := f.requests()[1]; r.Header.Get("x-amz-checksum-mode") != "" {
		t.Errorf("x-amz-checksum-mode sent without ChecksumMode")
	}

	_, err = s.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "bkt", Key: "missing"})
	var re *store.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 404 || re.Code != "" || re.RequestID != "R404" {
		t.Errorf("HeadObject missing: %v, want ResponseError 404 with no code (a HEAD has no body)", err)
	}
}

func TestGetObjectRange(t *testing.T) {
	content := []byte("0123456789abcdef")
	f := newFake(t, func(w http.ResponseWriter, r *request) {
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2026 03:04:05 GMT")
		w.Header().Set("ETag", `"g"`)
		http.ServeContent(w, &http.Request{Method: r.Method, Header: r.Header}, "", time.Time{}, bytes.NewReader(content))
	})
	s := f.store(t)
	for _, c := range []struct {
		off, n    int64
		wantRange string
		want      string
	}{
		{0, 0, "", string(content)},
		{5, 4, "bytes=5-8", "5678"},
		{10, 0, "bytes=10-", "abcdef"},
		{0, 3, "bytes=0-2", "012"},
	} {
		before := len(f.requests())
		out, err := s.GetObject(context.Background(), &store.GetObjectInput{Bucket: "bkt", Key: "k", Offset: c.off, Length: c.n})
		if err != nil {
			t.Fatalf("GetObject(%d,%d): %v", c.off, c.n, err)
		}
		got, err := io.ReadAll(out.Body)
		_ = out.Body.Close()
		if err != nil || string(got) != c.want || out.Size != int64(len(c.want)) || out.ETag != "g" {
			t.Errorf("GetObject(%d,%d) = %q size %d etag %q, %v; want %q", c.off, c.n, got, out.Size, out.ETag, err, c.want)
		}
		if r := f.requests()[before]; r.Header.Get("Range") != c.wantRange {
			t.Errorf("Range = %q, want %q", r.Header.Get("Range"), c.wantRange)
		}
	}
}

func TestDeleteObjectMissingKey(t *testing.T) {
	status := http.StatusNoContent
	f := newFake(t, func(w http.ResponseWriter, _ *request) {
		if status == http.StatusNotFound {
			writeXML(w, status, `<Error><Code>NoSuchKey</Code><Message>no</Message></Error>`)
			return
		}
		if status == http.StatusForbidden {
			writeXML(w, status, `<Error><Code>AccessDenied</Code><Message>no</Message></Error>`)
			return
		}
		w.WriteHeader(status)
	})
	s := f.store(t)
	in := &store.DeleteObjectInput{Bucket: "bkt", Key: "k"}
	for _, st := range []int{http.StatusNoContent, http.StatusOK, http.StatusNotFound} {
		status = st
		if err := s.DeleteObject(context.Background(), in); err != nil {
			t.Errorf("DeleteObject answered %d: %v, want nil", st, err)
		}
	}
	status = http.StatusForbidden
	var re *store.ResponseError
	if err := s.DeleteObject(context.Background(), in); !errors.As(err, &re) || re.Code != "AccessDenied" {
		t.Errorf("DeleteObject 403: %v, want AccessDenied", err)
	}
}

func TestAbortErrors(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *request) {
		writeXML(w, http.StatusNotFound, `<Error><Code>NoSuchBucket</Code><Message>gone</Message></Error>`)
	})
	err := f.store(t).AbortMultipartUpload(context.Background(), &store.AbortMultipartUploadInput{Bucket: "bkt", Key: "k", UploadID: "u"})
	var re *store.ResponseError
	// minio-go reports every 404 abort as NoSuchUpload; the body says otherwise.
	if !errors.As(err, &re) || re.StatusCode != 404 || re.Code != "NoSuchBucket" {
		t.Errorf("Abort 404 NoSuchBucket: %v, want the code from the body", err)
	}
}

// TestTransportErrors: no answer means the transport's error, wrapped, reachable by errors.Is/As.
func TestTransportErrors(t *testing.T) {
	ctx := context.Background()
	put := func(s store.Store, ctx context.Context) error {
		_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader([]byte("abc")), ContentLength: 3, ContentMD5: "x"})
		return err
	}

	t.Run("dial refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		s, err := miniogo.New(miniogo.Config{Endpoint: "http://" + addr, AccessKey: "a", SecretKey: "b"})
		if err != nil {
			t.Fatal(err)
		}
		err = put(s, ctx)
		var oe *net.OpError
		var re *store.ResponseError
		if !errors.As(err, &oe) || errors.As(err, &re) || !strings.HasPrefix(err.Error(), "PutObject: ") {
			t.Errorf("dial refused: %v (%T), want a wrapped *net.OpError and no ResponseError", err, err)
		}
	})

	t.Run("connection closed", func(t *testing.T) {
		var n int
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			mu.Unlock()
			_, _ = io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}))
		defer srv.Close()
		s, err := miniogo.New(miniogo.Config{Endpoint: srv.URL, AccessKey: "a", SecretKey: "b"})
		if err != nil {
			t.Fatal(err)
		}
		err = put(s, ctx)
		var re *store.ResponseError
		// minio-go would replace this with "Connection closed by foreign host"; we keep io.EOF.
		if !errors.Is(err, io.EOF) || errors.As(err, &re) {
			t.Errorf("closed connection: %v, want a wrapped io.EOF", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if n != 1 {
			t.Errorf("server saw %d requests, want 1", n)
		}
	})

	t.Run("canceled", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		defer srv.Close()
		defer close(release)
		s, err := miniogo.New(miniogo.Config{Endpoint: srv.URL, AccessKey: "a", SecretKey: "b"})
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(100*time.Millisecond, cancel)
		err = put(s, cctx)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("canceled: %v, want context.Canceled", err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer dcancel()
		err = put(s, dctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("deadline: %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestErrorBodyWithoutCode(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *request) {
		w.Header().Set("x-amz-retry-after", "1500")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	})
	_, err := f.store(t).PutObject(context.Background(), &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader(nil), ContentMD5: "x"})
	var re *store.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 502 || re.Code != "" || !strings.Contains(re.Message, "bad gateway") || re.RetryAfter != 1500*time.Millisecond {
		t.Errorf("502 HTML: %+v, want 502, no code, the body as message, RetryAfter 1.5s", re)
	}
}

func TestNewFromCore(t *testing.T) {
	if _, err := miniogo.NewFromCore(nil); err == nil {
		t.Error("NewFromCore(nil) succeeded")
	}
	if _, err := miniogo.NewFromCore(&minio.Core{}); err == nil {
		t.Error("NewFromCore(empty Core) succeeded")
	}
	f := newFake(t, func(w http.ResponseWriter, r *request) {
		if r.Query.Get("uploadId") != "" {
			writeXML(w, http.StatusOK, `<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>`)
			return
		}
		writeXML(w, http.StatusServiceUnavailable, `<Error><Code>SlowDown</Code><Message>slow</Message><RequestId>R1</RequestId></Error>`)
	})
	core, err := minio.NewCore(strings.TrimPrefix(f.srv.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4("a", "b", ""), Region: "us-east-1", MaxRetries: 1, BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := miniogo.NewFromCore(core)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.PutObject(context.Background(), &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader(nil), ContentMD5: "x"})
	var re *store.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 503 || re.Code != "SlowDown" || re.RequestID != "R1" {
		t.Errorf("via NewFromCore: %v, want ResponseError 503 SlowDown", err)
	}
	_, err = s.CompleteMultipartUpload(context.Background(), &store.CompleteMultipartUploadInput{Bucket: "bkt", Key: "k", UploadID: "u", Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}}})
	if !errors.Is(err, store.ErrNonCompliant) || !errors.As(err, &re) || re.StatusCode != 200 {
		t.Errorf("via NewFromCore, truncated Complete answer: %v, want ErrNonCompliant with status 200", err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestNewConfig(t *testing.T) {
	bad := []miniogo.Config{
		{Endpoint: "ftp://host"},
		{Endpoint: "host:9000"},
		{Endpoint: "http://"},
		{Endpoint: "http://host/prefix"},
		{Endpoint: "http://host", AccessKey: "a"},
		{Endpoint: "https://host", InsecureSkipVerify: true, Transport: http.DefaultTransport},
		{Endpoint: "http://host", AccessKey: "a", SecretKey: "b", Credentials: credentials.NewStaticV4("c", "d", "")},
		{Endpoint: "http://host", SessionToken: "t", Credentials: credentials.NewStaticV4("c", "d", "")},
	}
	for _, c := range bad {
		if _, err := miniogo.New(c); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", c)
		}
	}
	for _, c := range []miniogo.Config{
		{Endpoint: "http://127.0.0.1:9000", AccessKey: "a", SecretKey: "b"},
		{Endpoint: "https://s3.example.com/", Region: "eu-west-1", AccessKey: "a", SecretKey: "b", SessionToken: "t", InsecureSkipVerify: true},
	} {
		if _, err := miniogo.New(c); err != nil {
			t.Errorf("New(%+v): %v", c, err)
		}
	}
}

func TestSessionTokenSent(t *testing.T) {
	f := newFake(t, ok200)
	s, err := miniogo.New(miniogo.Config{Endpoint: f.srv.URL, AccessKey: "a", SecretKey: "b", SessionToken: "TOKEN", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject(context.Background(), &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader(nil), ContentMD5: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Header.Get("X-Amz-Security-Token"); got != "TOKEN" {
		t.Errorf("X-Amz-Security-Token = %q", got)
	}
}

// Config.Credentials signs instead of static keys (keys that are renewed, say).
func TestCredentialsSign(t *testing.T) {
	f := newFake(t, ok200)
	s, err := miniogo.New(miniogo.Config{Endpoint: f.srv.URL, Credentials: credentials.NewStaticV4("given", "secret", "TOKEN2"), PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutObject(context.Background(), &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: bytes.NewReader(nil), ContentMD5: "x"}); err != nil {
		t.Fatal(err)
	}
	h := f.requests()[0].Header
	if h.Get("X-Amz-Security-Token") != "TOKEN2" || !strings.Contains(h.Get("Authorization"), "Credential=given/") {
		t.Errorf("signed with %q, token %q; want the Credentials' keys", h.Get("Authorization"), h.Get("X-Amz-Security-Token"))
	}
}

func TestGetObjectRangeIgnored(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *request) {
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2026 03:04:05 GMT")
		w.Header().Set("Content-Length", "16")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "0123456789abcdef")
	})
	out, err := f.store(t).GetObject(context.Background(), &store.GetObjectInput{Bucket: "bkt", Key: "k", Offset: 5, Length: 4})
	if out != nil || !errors.Is(err, store.ErrNonCompliant) {
		t.Fatalf("GetObject on a server ignoring Range = %+v, %v; want ErrNonCompliant", out, err)
	}
}

// An error status whose document the connection dropped says so, with no code (whatever
// minio-go made of the cut-off document is not the store's), and is retried as Transient.
func TestErrorDocumentLost(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, _ *request) {
		s3test.CutErrorDocument(w, http.StatusBadRequest, "<Error><Code>BadDig")
	})
	_, err := f.store(t).PutObject(context.Background(), &store.PutObjectInput{Bucket: "bucket", Key: "k", Body: strings.NewReader("x"), ContentLength: 1})
	var re *store.ResponseError
	if !errors.As(err, &re) || re.StatusCode != 400 || re.Code != "" || !strings.Contains(re.Message, "error document lost") || re.DocumentLost == nil {
		t.Fatalf("PutObject: %#v, want a 400 ResponseError saying its document was lost", err)
	}
	if k := sperrors.Classify(err).Kind; k != sperrors.Transient {
		t.Errorf("classified %s, want Transient: another attempt gets the store's whole answer", k)
	}
}
