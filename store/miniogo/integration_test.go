package miniogo_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/s3test"
)

func newRealStore(t *testing.T, srv s3test.Server, wrongSecret bool) store.Store {
	t.Helper()
	secret := srv.SecretKey
	if wrongSecret {
		secret += "-wrong"
	}
	s, err := miniogo.New(miniogo.Config{
		Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: secret, PathStyle: true,
	})
	if err != nil {
		t.Fatalf("miniogo.New: %v", err)
	}
	return s
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func asResponseError(t *testing.T, err error) *store.ResponseError {
	t.Helper()
	var re *store.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) is not a *store.ResponseError", err, err)
	}
	return re
}

func TestRealPutObject(t *testing.T) { s3test.ForEach(t, testRealPutObject) }

func testRealPutObject(t *testing.T, srv s3test.Server) {
	bucket := s3test.NewBucket(t, srv)
	s := newRealStore(t, srv, false)
	ctx := testCtx(t)

	for name, in := range map[string]func(data []byte) *store.PutObjectInput{
		"crc64nvme": func(data []byte) *store.PutObjectInput {
			return &store.PutObjectInput{Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crc64b64(data)}}
		},
		"signed payload": func([]byte) *store.PutObjectInput { return &store.PutObjectInput{} },
	} {
		t.Run(name, func(t *testing.T) {
			data := s3test.RandomBytes(256<<10 + 3)
			put := in(data)
			put.Bucket, put.Key, put.Body, put.ContentLength = bucket, "put/"+name, bytes.NewReader(data), int64(len(data))
			put.ContentType, put.Metadata = "application/x-test", map[string]string{"origin": "miniogo"}
			out, err := s.PutObject(ctx, put)
			if err != nil {
				t.Fatalf("PutObject: %v", err)
			}
			if out.ETag == "" || out.ETag[0] == '"' {
				t.Errorf("ETag = %q, want a non-empty unquoted ETag", out.ETag)
			}
			wantEcho := put.Checksum.Value
			if srv.IgnoresChecksums() {
				wantEcho = ""
			}
			if !put.Checksum.IsZero() && out.Checksums.CRC64NVME != wantEcho {
				t.Errorf("echoed CRC64NVME = %q, want %q", out.Checksums.CRC64NVME, wantEcho)
			}
			if got := s3test.ReadAll(t, srv, bucket, put.Key); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes, differ from the %d written", len(got), len(data))
			}
			head, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bucket, Key: put.Key, ChecksumMode: true})
			if err != nil {
				t.Fatalf("HeadObject: %v", err)
			}
			if head.Size != int64(len(data)) || head.ETag != out.ETag || head.ContentType != "application/x-test" || head.Metadata["origin"] != "miniogo" {
				t.Errorf("HeadObject = %+v", head)
			}
			// Ranged read through the adapter.
			g, err := s.GetObject(ctx, &store.GetObjectInput{Bucket: bucket, Key: put.Key, Offset: 1000, Length: 10})
			if err != nil {
				t.Fatalf("GetObject range: %v", err)
			}
			part, err := io.ReadAll(g.Body)
			_ = g.Body.Close()
			if err != nil || !bytes.Equal(part, data[1000:1010]) || g.Size != 10 {
				t.Errorf("GetObject range = %d bytes (size %d), %v; want data[1000:1010]", len(part), g.Size, err)
			}
		})
	}
}

func TestRealBadChecksumRejected(t *testing.T) { s3test.ForEach(t, testRealBadChecksumRejected) }

func testRealBadChecksumRejected(t *testing.T, srv s3test.Server) {
	bucket := s3test.NewBucket(t, srv)
	s := newRealStore(t, srv, false)
	data := []byte("the bytes the server receives")
	_, err := s.PutObject(testCtx(t), &store.PutObjectInput{
		Bucket: bucket, Key: "bad", Body: bytes.NewReader(data), ContentLength: int64(len(data)),
		Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crc64b64([]byte("other bytes"))},
	})
	if srv.IgnoresChecksums() {
		// The header is ignored: the bytes land as sent, and only a later check can tell.
		if err != nil {
			t.Fatalf("wrong CRC64NVME on a server that ignores checksums: %v, want accepted", err)
		}
		if got := s3test.ReadAll(t, srv, bucket, "bad"); !bytes.Equal(got, data) {
			t.Errorf("read back %q, want %q", got, data)
		}
		return
	}
	re := asResponseError(t, err)
	t.Logf("wrong CRC64NVME: HTTP %d %s: %s", re.StatusCode, re.Code, re.Message)
	want := "BadDigest"
	if srv.Name == s3test.MinIO {
		want = "XAmzContentChecksumMismatch" // MinIO's own code; classified Integrity like BadDigest
	}
	if re.StatusCode != 400 || re.Code != want {
		t.Errorf("wrong checksum: %d %q, want 400 %s", re.StatusCode, re.Code, want)
	}
	if s3test.Exists(t, srv, bucket, "bad") {
		t.Error("object with a wrong checksum was stored")
	}
}

func TestRealMultipartFullObjectCRC64(t *testing.T) {
	s3test.ForEach(t, testRealMultipartFullObjectCRC64)
}

func testRealMultipartFullObjectCRC64(t *testing.T, srv s3test.Server) {
	bucket := s3test.NewBucket(t, srv)
	s := newRealStore(t, srv, false)
	ctx := testCtx(t)
	const key = "mp/object"
	sizes := []int{5 << 20, 5 << 20, 1}
	data := s3test.RandomBytes(sizes[0] + sizes[1] + sizes[2])

	up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{
		Bucket: bucket, Key: key, ChecksumAlgorithm: store.ChecksumCRC64NVME, ChecksumType: store.ChecksumTypeFullObject,
	})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	var parts []store.CompletedPart
	off := 0
	for i, n := range sizes {
		chunk := data[off : off+n]
		off += n
		sum := crc64b64(chunk)
		out, err := s.UploadPart(ctx, &store.UploadPartInput{
			Bucket: bucket, Key: key, UploadID: up.UploadID, PartNumber: int32(i + 1),
			Body: bytes.NewReader(chunk), ContentLength: int64(n),
			Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum},
		})
		if err != nil {
			t.Fatalf("UploadPart %d: %v", i+1, err)
		}
		if out.Checksums.CRC64NVME != "" && out.Checksums.CRC64NVME != sum {
			t.Errorf("part %d echoed CRC64NVME %q, want %q", i+1, out.Checksums.CRC64NVME, sum)
		}
		parts = append(parts, store.CompletedPart{PartNumber: int32(i + 1), ETag: out.ETag, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum}})
	}

	listed, err := s.ListParts(ctx, &store.ListPartsInput{Bucket: bucket, Key: key, UploadID: up.UploadID, PageSize: 1})
	if err != nil {
		t.Fatalf("ListParts: %v", err)
	}
	if len(listed.Parts) != len(sizes) {
		t.Fatalf("ListParts (1 per page) = %d parts, want %d", len(listed.Parts), len(sizes))
	}
	for i, p := range listed.Parts {
		if p.PartNumber != int32(i+1) || p.Size != int64(sizes[i]) || p.ETag != parts[i].ETag {
			t.Errorf("listed part %d = %+v, want number %d size %d ETag %q", i, p, i+1, sizes[i], parts[i].ETag)
		}
	}

	full := crc64b64(data)
	done, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{
		Bucket: bucket, Key: key, UploadID: up.UploadID, Parts: parts,
		FullObjectChecksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: full},
		ChecksumType:       store.ChecksumTypeFullObject, IfNoneMatch: true, ObjectSize: int64(len(data)),
	})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	if (done.ETag == "") != srv.EmptyCompleteETag() {
		t.Errorf("Complete returned ETag %q; server answers without one: %v", done.ETag, srv.EmptyCompleteETag())
	}
	t.Logf("Complete: ETag %s, checksums %+v", done.ETag, done.Checksums)

	if got := s3test.ReadAll(t, srv, bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, differ from the %d written", len(got), len(data))
	}
	head, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bucket, Key: key, ChecksumMode: true})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	t.Logf("HeadObject checksums: %+v", head.Checksums)
	if head.Size != int64(len(data)) {
		t.Errorf("HeadObject size %d, want %d", head.Size, len(data))
	}
	wantFull, wantType := full, store.ChecksumTypeFullObject
	if srv.IgnoresChecksums() {
		wantFull, wantType = "", ""
	}
	if head.Checksums.CRC64NVME != wantFull {
		t.Errorf("stored CRC64NVME = %q, want %q (locally computed %q)", head.Checksums.CRC64NVME, wantFull, full)
	}
	if head.Checksums.Type != wantType {
		t.Errorf("stored checksum type = %q, want %q", head.Checksums.Type, wantType)
	}
	if ups := s3test.IncompleteUploads(t, srv, bucket, "mp/"); len(ups) != 0 {
		t.Errorf("uploads left after Complete: %v", ups)
	}
}

// sizeHeaderSpy records the x-amz-mp-object-size header of every request that reaches the wire.
type sizeHeaderSpy struct {
	mu   sync.Mutex
	seen []string
}

func (s *sizeHeaderSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := r.Header.Get("X-Amz-Mp-Object-Size"); v != "" {
		s.seen = append(s.seen, v)
	}
	return resp, err
}

// A Complete that states the wrong object size: the header must reach the server (else the test
// exercises nothing), signed (a forged header would be a 403), and the answer must be the one
// that server is known to give.
func TestRealWrongObjectSizeRejected(t *testing.T) {
	s3test.ForEach(t, testRealWrongObjectSizeRejected)
}

func testRealWrongObjectSizeRejected(t *testing.T, srv s3test.Server) {
	bucket := s3test.NewBucket(t, srv)
	spy := &sizeHeaderSpy{}
	s, err := miniogo.New(miniogo.Config{
		Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, Transport: spy,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	data := []byte("single small part")
	up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bucket, Key: "sz"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bucket, Key: "sz", UploadID: up.UploadID, PartNumber: 1, Body: bytes.NewReader(data), ContentLength: int64(len(data))})
	if err != nil {
		t.Fatal(err)
	}
	wrong := int64(len(data)) + 1
	_, err = s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{
		Bucket: bucket, Key: "sz", UploadID: up.UploadID, Parts: []store.CompletedPart{{PartNumber: 1, ETag: p.ETag}}, ObjectSize: wrong,
	})
	spy.mu.Lock()
	seen := slices.Clone(spy.seen)
	spy.mu.Unlock()
	if want := []string{strconv.FormatInt(wrong, 10)}; !slices.Equal(seen, want) {
		t.Fatalf("x-amz-mp-object-size on the wire: %q, want %q: the test would not exercise the header", seen, want)
	}
	// The header is re-signed by our transport: a signature problem would show as 403 here.
	switch srv.Name {
	case s3test.VersityGW:
		// The gateway checks it: 400 InvalidRequest, nothing committed.
		re := asResponseError(t, err)
		if re.StatusCode != 400 || re.Code != "InvalidRequest" {
			t.Errorf("wrong x-amz-mp-object-size on Versity S3 Gateway: HTTP %d %s (%s), want 400 InvalidRequest", re.StatusCode, re.Code, re.Message)
		}
		if s3test.Exists(t, srv, bucket, "sz") {
			t.Error("the gateway committed an upload whose declared size was wrong")
		}
	case s3test.MinIO:
		// MinIO ignores the header and commits what the parts hold: the size check is safeput's
		// HEAD after Complete there.
		if err != nil {
			t.Fatalf("MinIO refused a wrong x-amz-mp-object-size (it used to ignore it): %v", err)
		}
		if got := s3test.ReadAll(t, srv, bucket, "sz"); !bytes.Equal(got, data) {
			t.Errorf("object after the ignored size header: %d bytes, want the %d uploaded", len(got), len(data))
		}
	default:
		if err == nil {
			t.Logf("%s ignores a wrong x-amz-mp-object-size", srv.Name)
			return
		}
		re := asResponseError(t, err)
		t.Logf("wrong x-amz-mp-object-size: HTTP %d %s: %s", re.StatusCode, re.Code, re.Message)
		if re.StatusCode == 403 {
			t.Errorf("request with x-amz-mp-object-size was refused as unsigned/forged: %v", err)
		}
	}
}

func TestRealCreateOnlyTwice(t *testing.T) { s3test.ForEach(t, testRealCreateOnlyTwice) }

func testRealCreateOnlyTwice(t *testing.T, srv s3test.Server) {
	bucket := s3test.NewBucket(t, srv)
	s := newRealStore(t, srv, false)
	ctx := testCtx(t)
	put := func(data []byte) error {
		_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bucket, Key: "once", Body: bytes.NewReader(data), ContentLength: int64(len(data)), IfNoneMatch: true,
			Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crc64b64(data)}})
		return err
	}
	if err := put([]byte("first")); err != nil {
		t.Fatalf("first create-only put: %v", err)
	}
	re := asResponseError(t, put([]byte("second")))
	t.Logf("second create-only put: HTTP %d %q", re.StatusCode, re.Code)
	if re.StatusCode != 412 {
		t.Errorf("second create-only put: HTTP %d %q, want 412", re.StatusCode, re.Code)
	}
	if got := s3test.ReadAll(t, srv, bucket, "once"); string(got) != "first" {
		t.Errorf("object = %q after the refused put, want the first content", got)
	}
}

func TestRealErrorFacts(t *testing.T) { s3test.ForEach(t, testRealErrorFacts) }

func testRealErrorFacts(t *testing.T, srv s3test.Server) {
	bucket := s3test.NewBucket(t, srv)
	ctx := testCtx(t)
	s := newRealStore(t, srv, false)
	data := []byte("x")

	t.Run("NoSuchBucket", func(t *testing.T) {
		_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bucket + "-missing", Key: "k", Body: bytes.NewReader(data), ContentLength: 1})
		re := asResponseError(t, err)
		t.Logf("HTTP %d %q %q request id %q", re.StatusCode, re.Code, re.Message, re.RequestID)
		if re.StatusCode != 404 || re.Code != "NoSuchBucket" || re.Op != "PutObject" {
			t.Errorf("got %d %q, want 404 NoSuchBucket", re.StatusCode, re.Code)
		}
	})

	t.Run("wrong secret", func(t *testing.T) {
		bad := newRealStore(t, srv, true)
		_, err := bad.PutObject(ctx, &store.PutObjectInput{Bucket: bucket, Key: "k", Body: bytes.NewReader(data), ContentLength: 1})
		re := asResponseError(t, err)
		t.Logf("HTTP %d %q %q", re.StatusCode, re.Code, re.Message)
		if re.StatusCode != 403 || re.Code != "SignatureDoesNotMatch" {
			t.Errorf("got %d %q, want 403 SignatureDoesNotMatch", re.StatusCode, re.Code)
		}
		if s3test.Exists(t, srv, bucket, "k") {
			t.Error("object written with a wrong secret")
		}
	})

	t.Run("NoSuchKey on HEAD", func(t *testing.T) {
		_, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bucket, Key: "missing"})
		re := asResponseError(t, err)
		t.Logf("HTTP %d %q", re.StatusCode, re.Code)
		if re.StatusCode != 404 {
			t.Errorf("got %d, want 404", re.StatusCode)
		}
	})

	t.Run("EntityTooSmall", func(t *testing.T) {
		const key = "small-parts"
		up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		var parts []store.CompletedPart
		for i := int32(1); i <= 2; i++ {
			chunk := s3test.RandomBytes(1024)
			out, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bucket, Key: key, UploadID: up.UploadID, PartNumber: i, Body: bytes.NewReader(chunk), ContentLength: int64(len(chunk))})
			if err != nil {
				t.Fatalf("UploadPart %d: %v", i, err)
			}
			parts = append(parts, store.CompletedPart{PartNumber: i, ETag: out.ETag})
		}
		_, err = s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bucket, Key: key, UploadID: up.UploadID, Parts: parts})
		re := asResponseError(t, err)
		t.Logf("HTTP %d %q %q", re.StatusCode, re.Code, re.Message)
		if re.StatusCode != 400 || re.Code != "EntityTooSmall" {
			t.Errorf("got %d %q, want 400 EntityTooSmall", re.StatusCode, re.Code)
		}
		if err := s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bucket, Key: key, UploadID: up.UploadID}); err != nil {
			t.Errorf("abort after EntityTooSmall: %v", err)
		}
	})

	t.Run("NoSuchUpload", func(t *testing.T) {
		_, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bucket, Key: "k", UploadID: "no-such-upload", PartNumber: 1, Body: bytes.NewReader(data), ContentLength: 1})
		re := asResponseError(t, err)
		t.Logf("HTTP %d %q", re.StatusCode, re.Code)
		if re.StatusCode != 404 || re.Code != "NoSuchUpload" {
			t.Errorf("got %d %q, want 404 NoSuchUpload", re.StatusCode, re.Code)
		}
	})
}

func TestRealAbortAndListUploads(t *testing.T) { s3test.ForEach(t, testRealAbortAndListUploads) }

func testRealAbortAndListUploads(t *testing.T, srv s3test.Server) {
	bucket := s3test.NewBucket(t, srv)
	s := newRealStore(t, srv, false)
	ctx := testCtx(t)

	var ids []string
	for _, key := range []string{"ab/one", "ab/two", "ab/three"} {
		up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bucket, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, up.UploadID)
		chunk := []byte("part data")
		if _, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bucket, Key: key, UploadID: up.UploadID, PartNumber: 1, Body: bytes.NewReader(chunk), ContentLength: int64(len(chunk))}); err != nil {
			t.Fatal(err)
		}
	}
	// MinIO lists by prefix only for an exact key: list its whole bucket (unpaged there).
	listPrefix := "ab/"
	if srv.Name == s3test.MinIO {
		listPrefix = ""
	}
	list, err := s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bucket, Prefix: listPrefix, PageSize: 1})
	if err != nil {
		// Versity S3 Gateway v1.8.0 refuses the markers it returned itself.
		if re := asResponseError(t, err); re.StatusCode != 400 || re.Code != "InvalidArgument" {
			t.Fatalf("ListMultipartUploads page 2: %v", err)
		}
		t.Logf("server gap: ListMultipartUploads cannot continue past page 1 (%v); listing in one page", err)
		if list, err = s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bucket, Prefix: listPrefix}); err != nil {
			t.Fatalf("ListMultipartUploads: %v", err)
		}
	}
	if len(list.Uploads) != 3 {
		t.Fatalf("ListMultipartUploads (1 per page) = %+v, want 3 uploads", list.Uploads)
	}
	if raw := s3test.IncompleteUploads(t, srv, bucket, "ab/"); len(raw) != 3 {
		t.Fatalf("raw client sees %v, want 3 uploads", raw)
	}
	for _, u := range list.Uploads {
		if err := s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bucket, Key: u.Key, UploadID: u.UploadID}); err != nil {
			t.Errorf("abort %s: %v", u.Key, err)
		}
	}
	if raw := s3test.IncompleteUploads(t, srv, bucket, "ab/"); len(raw) != 0 {
		t.Errorf("uploads left after abort: %v", raw)
	}
	list, err = s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bucket, Prefix: listPrefix})
	if err != nil || len(list.Uploads) != 0 {
		t.Errorf("ListMultipartUploads after abort = %+v, %v; want none", list, err)
	}
	// A second abort of the same upload: 404 NoSuchUpload on the gateway, 204 on MinIO (which
	// answers success to an Abort of any upload id).
	err = s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bucket, Key: "ab/one", UploadID: ids[0]})
	switch srv.Name {
	case s3test.MinIO:
		if err != nil {
			t.Errorf("abort twice on MinIO: %v, want its 204", err)
		}
	case s3test.VersityGW:
		if re := asResponseError(t, err); re.StatusCode != 404 || re.Code != "NoSuchUpload" {
			t.Errorf("abort twice: HTTP %d %q, want 404 NoSuchUpload", re.StatusCode, re.Code)
		}
	default:
		if err != nil {
			re := asResponseError(t, err)
			t.Logf("abort twice: HTTP %d %q", re.StatusCode, re.Code)
		}
	}
	// Delete of a missing key is not an error; delete of an existing key removes it.
	if err := s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: bucket, Key: "never-written"}); err != nil {
		t.Errorf("DeleteObject missing key: %v", err)
	}
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bucket, Key: "gone", Body: bytes.NewReader([]byte("x")), ContentLength: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: bucket, Key: "gone"}); err != nil {
		t.Errorf("DeleteObject: %v", err)
	}
	if s3test.Exists(t, srv, bucket, "gone") {
		t.Error("object still there after DeleteObject")
	}
}
