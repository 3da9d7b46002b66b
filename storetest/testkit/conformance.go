package testkit

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s; not for security.
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/crc64nvme"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest"
	"github.com/safeput/safeput/storetest/s3test"
)

// Conformance runs the public conformance suite (storetest) through the adapter named
// under on every test server, with the other adapter as the reference client, so an adapter is
// never checked only by itself; then the facts of each server no contract states (which answer
// it picks among those S3 allows, which headers it ignores), checked with the raw client.
// Subtests: "versitygw/PutObjectRoundTrip", ..., "versitygw/Server/WrongSecretKey", ...
func Conformance(t *testing.T, under string) {
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		h := serverHarness{srv: srv, under: under}
		storetest.Run(t, h)
		t.Run("Server", func(t *testing.T) { serverFacts(t, h) })
	})
}

// ConformanceTLS runs the conformance suite as Conformance does, with every server reached over
// TLS (s3test.TLSServer) and both adapters trusting the run's CA through their CABundle. The wire
// checks (a harness routing through a caller's transport) and the server facts are left to
// Conformance: they are about the server's answers, which TLS does not change.
func ConformanceTLS(t *testing.T, under string) {
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		storetest.Run(t, tlsHarness{h: serverHarness{srv: s3test.TLSServer(t, srv), under: under}})
	})
}

// tlsHarness is a serverHarness without MakeStoreWithTransport.
type tlsHarness struct{ h serverHarness }

func (h tlsHarness) MakeStores(t *testing.T) (under, reference store.Store, bucket string) {
	t.Helper()
	return h.h.MakeStores(t)
}

func (h tlsHarness) Capabilities() storetest.Capabilities { return h.h.Capabilities() }

type serverHarness struct {
	srv   s3test.Server
	under string
}

func (h serverHarness) MakeStores(t *testing.T) (under, reference store.Store, bucket string) {
	t.Helper()
	for _, a := range Adapters {
		st, err := a.New(h.srv)
		if err != nil {
			t.Fatalf("%s adapter: %v", a.Name, err)
		}
		if a.Name == h.under {
			under = st
		} else {
			reference = st
		}
	}
	if under == nil || reference == nil {
		t.Fatalf("no adapter %q, or no other adapter to check it with", h.under)
	}
	return under, reference, s3test.NewBucket(t, h.srv)
}

// MakeStoreWithTransport makes the adapter under test for the server, sending through rt.
func (h serverHarness) MakeStoreWithTransport(t *testing.T, rt http.RoundTripper) store.Store {
	t.Helper()
	return h.adapter(t, h.srv, rt)
}

// adapter builds the adapter under test for srv, through rt when it is not nil.
func (h serverHarness) adapter(t *testing.T, srv s3test.Server, rt http.RoundTripper) store.Store {
	t.Helper()
	var st store.Store
	var err error
	switch h.under {
	case "aws":
		var c *http.Client
		if rt != nil {
			c = &http.Client{Transport: rt}
		}
		st, err = awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, HTTPClient: c})
	case "minio":
		st, err = miniogo.New(miniogo.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, Transport: rt})
	default:
		err = fmt.Errorf("no adapter %q", h.under)
	}
	if err != nil {
		t.Fatalf("%s adapter: %v", h.under, err)
	}
	return st
}

// Capabilities of the test servers, as measured (multipart/profiles.go has the same facts as
// writer profiles). An external endpoint is assumed to behave like AWS.
func (h serverHarness) Capabilities() storetest.Capabilities {
	all := storetest.Capabilities{ConditionalPut: true, ConditionalComplete: true, Checksums: !h.srv.IgnoresChecksums(), MD5ETags: true, PagedUploadListing: true}
	switch h.srv.Name {
	case s3test.Ceph:
		// Ceph RGW 16.2 ignores If-None-Match on Complete (it honours it on PUT).
		all.ConditionalComplete = false
	case s3test.VersityGW:
		// Versity S3 Gateway v1.8.0 refuses the continuation markers of its own upload listing.
		all.PagedUploadListing = false
	}
	return all
}

// --- the facts of each server ----------------------------------------------------------------

// facts is what a server fact check gets: the server, the adapter under test and a fresh bucket.
type facts struct {
	h      serverHarness
	srv    s3test.Server
	st     store.Store
	bucket string
}

func serverFacts(t *testing.T, h serverHarness) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, facts)
	}{
		{"WrongSecretKey", factWrongSecret},
		{"MissingUploadAnswers", factMissingUpload},
		{"ChecksumAnswers", factChecksums},
		{"CompleteAnswers", factCompleteAnswers},
		{"CreateOnlyComplete", factCreateOnlyComplete},
		{"UploadListing", factUploadListing},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, facts{h: h, srv: h.srv, st: h.adapter(t, h.srv, nil), bucket: s3test.NewBucket(t, h.srv)})
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func crc64NVME(data []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, crc64nvme.Checksum(data)))
}

func md5Of(data []byte) []byte {
	s := md5.Sum(data) //nolint:gosec // S3 ETags are MD5s.
	return s[:]
}

// mustAnswer asserts that err is the store's answer with this status and code (any, if "").
func mustAnswer(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var re *store.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("%s: err %v (%T), want a *store.ResponseError with HTTP %d %s", what, err, err, status, code)
	}
	if re.StatusCode != status || (code != "" && re.Code != code) {
		t.Fatalf("%s: HTTP %d code %q (message %q), want HTTP %d %s", what, re.StatusCode, re.Code, re.Message, status, code)
	}
}

// uploadParts creates an upload of key and sends parts (with CRC64NVME checksums for a
// FULL_OBJECT upload when full is set), aborting it when the test ends.
func (f facts) uploadParts(t *testing.T, key string, full bool, parts ...[]byte) (string, []store.CompletedPart) {
	t.Helper()
	in := &store.CreateMultipartUploadInput{Bucket: f.bucket, Key: key}
	if full {
		in.ChecksumAlgorithm, in.ChecksumType = store.ChecksumCRC64NVME, store.ChecksumTypeFullObject
	}
	cr, err := f.st.CreateMultipartUpload(ctxFor(t), in)
	if err != nil {
		t.Fatalf("CreateMultipartUpload %s: %v", key, err)
	}
	t.Cleanup(func() {
		_ = f.st.AbortMultipartUpload(context.Background(), &store.AbortMultipartUploadInput{Bucket: f.bucket, Key: key, UploadID: cr.UploadID})
	})
	var done []store.CompletedPart
	for i, p := range parts {
		up := &store.UploadPartInput{Bucket: f.bucket, Key: key, UploadID: cr.UploadID, PartNumber: int32(i + 1), Body: bytes.NewReader(p), ContentLength: int64(len(p))} //nolint:gosec // a handful of parts
		if full {
			up.Checksum = store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crc64NVME(p)}
		}
		out, err := f.st.UploadPart(ctxFor(t), up)
		if err != nil {
			t.Fatalf("UploadPart %s #%d: %v", key, i+1, err)
		}
		done = append(done, store.CompletedPart{PartNumber: up.PartNumber, ETag: out.ETag, Checksum: up.Checksum})
	}
	return cr.UploadID, done
}

func (f facts) readBack(t *testing.T, key string, want []byte) {
	t.Helper()
	if got := s3test.ReadAll(t, f.srv, f.bucket, key); !bytes.Equal(got, want) {
		t.Fatalf("read back %s: %d bytes, want the %d bytes written", key, len(got), len(want))
	}
}

// A wrong secret key is the server's 403 SignatureDoesNotMatch (the writer's Credentials kind),
// and nothing is written.
func factWrongSecret(t *testing.T, f facts) {
	srv := f.srv
	srv.SecretKey += "-wrong"
	bad := f.h.adapter(t, srv, nil)
	put := func() error {
		_, err := bad.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: f.bucket, Key: "wrong-secret", Body: bytes.NewReader([]byte("x")), ContentLength: 1})
		return err
	}
	err := put()
	// Ceph RGW answers before reading the body, and its error document has been seen lost on
	// the way (a 403 without a code): the same request is refused the same way, so ask again.
	var re *store.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusForbidden && re.DocumentLost != nil {
		t.Logf("HTTP 403 without its error document (%v); sending it again", err)
		err = put()
	}
	mustAnswer(t, "PutObject with a wrong secret key", err, http.StatusForbidden, "SignatureDoesNotMatch")
	_, err = bad.ListMultipartUploads(ctxFor(t), &store.ListMultipartUploadsInput{Bucket: f.bucket})
	mustAnswer(t, "ListMultipartUploads with a wrong secret key", err, http.StatusForbidden, "SignatureDoesNotMatch")
	_, err = bad.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: f.bucket, Key: "wrong-secret"})
	mustAnswer(t, "HeadObject with a wrong secret key", err, http.StatusForbidden, "")
	if s3test.Exists(t, f.srv, f.bucket, "wrong-secret") {
		t.Error("an object was written with a wrong secret key")
	}
}

// Which of the answers S3 allows each server gives for an upload that is not there.
func factMissingUpload(t *testing.T, f facts) {
	ctx := ctxFor(t)
	_, err := f.st.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: f.bucket, Key: "k", UploadID: "no-such-upload",
		Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e"}}})
	switch f.srv.Name {
	case s3test.VersityGW:
		mustAnswer(t, "Complete of a missing upload", err, http.StatusBadRequest, "InvalidPart")
	case s3test.MinIO:
		mustAnswer(t, "Complete of a missing upload", err, http.StatusNotFound, "NoSuchUpload")
	case s3test.Ceph:
		// Ceph RGW 16.2 answers 500 InternalError "This multipart completion is already in
		// progress". The library classifies it as any 500: Transient, retried within the
		// budget, since it cannot tell it from a real server error; the writer only sends
		// Complete for an upload it holds, so on RGW this answer means a Complete still running.
		mustAnswer(t, "Complete of a missing upload", err, http.StatusInternalServerError, "InternalError")
	}
	err = f.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: f.bucket, Key: "k", UploadID: "no-such-upload"})
	if f.srv.Name == s3test.MinIO {
		// MinIO answers 204 to an Abort of any upload id: there an Abort's success proves
		// nothing, only a listing or ListParts does.
		if err != nil {
			t.Errorf("Abort of a missing upload on MinIO: %v, want its 204", err)
		}
	} else {
		mustAnswer(t, "Abort of a missing upload", err, http.StatusNotFound, "NoSuchUpload")
	}
	id, _ := f.uploadParts(t, "aborted", false, []byte("part"))
	if err := f.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: f.bucket, Key: "aborted", UploadID: id}); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	_, err = f.st.ListParts(ctx, &store.ListPartsInput{Bucket: f.bucket, Key: "aborted", UploadID: id})
	code := "NoSuchUpload"
	if f.srv.Name == s3test.Ceph {
		code = "NoSuchKey" // RGW 16.2 (UploadPart and Abort do say NoSuchUpload)
	}
	mustAnswer(t, "ListParts of an aborted upload", err, http.StatusNotFound, code)
}

// The code for a checksum that does not match (MinIO's own XAmzContentChecksumMismatch, S3's
// BadDigest elsewhere), and Ceph RGW 16.2 ignoring checksums altogether: a wrong value is
// accepted, nothing is echoed, stored or reported.
func factChecksums(t *testing.T, f facts) {
	data := s3test.RandomBytes(1000)
	wrong := crc64NVME([]byte("something else"))
	_, err := f.st.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: f.bucket, Key: "bad-crc", Body: bytes.NewReader(data), ContentLength: int64(len(data)),
		Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: wrong}})
	switch {
	case f.srv.IgnoresChecksums():
		if err != nil {
			t.Fatalf("PutObject with a wrong CRC64NVME on Ceph RGW: %v, want the header ignored", err)
		}
		f.readBack(t, "bad-crc", data)
		out, err := f.st.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: f.bucket, Key: "crc", Body: bytes.NewReader(data), ContentLength: int64(len(data)),
			Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crc64NVME(data)}})
		if err != nil {
			t.Fatalf("PutObject: %v", err)
		}
		raw, err := f.srv.RawClient().HeadObject(ctxFor(t), &s3.HeadObjectInput{Bucket: aws.String(f.bucket), Key: aws.String("crc"), ChecksumMode: "ENABLED"})
		if err != nil {
			t.Fatalf("raw HEAD: %v", err)
		}
		if out.Checksums.CRC64NVME != "" || aws.ToString(raw.ChecksumCRC64NVME) != "" {
			t.Errorf("Ceph RGW echoed %q and stored %q: it keeps checksums now; update the ceph profile, Capabilities and this check",
				out.Checksums.CRC64NVME, aws.ToString(raw.ChecksumCRC64NVME))
		}
		parts := [][]byte{s3test.RandomBytes(5 << 20), s3test.RandomBytes(10)}
		id, done := f.uploadParts(t, "mpu-bad", true, parts...)
		if _, err := f.st.CompleteMultipartUpload(ctxFor(t), &store.CompleteMultipartUploadInput{Bucket: f.bucket, Key: "mpu-bad", UploadID: id, Parts: done,
			FullObjectChecksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: wrong}, ChecksumType: store.ChecksumTypeFullObject}); err != nil {
			t.Fatalf("Complete with a wrong full-object CRC64NVME on Ceph RGW: %v, want the checksum ignored", err)
		}
		f.readBack(t, "mpu-bad", bytes.Join(parts, nil))
	case f.srv.Name == s3test.MinIO:
		mustAnswer(t, "PutObject with a wrong CRC64NVME", err, http.StatusBadRequest, "XAmzContentChecksumMismatch")
	default:
		mustAnswer(t, "PutObject with a wrong CRC64NVME", err, http.StatusBadRequest, "BadDigest")
	}
}

// What a successful Complete answers: the multipart ETag (Ceph RGW 16.2: an empty <ETag></ETag>,
// the object committed all the same), and a FULL_OBJECT checksum with its type (MinIO: without
// it; Ceph RGW: none).
func factCompleteAnswers(t *testing.T, f facts) {
	parts := [][]byte{s3test.RandomBytes(5 << 20), s3test.RandomBytes(1)}
	id, done := f.uploadParts(t, "mpu", true, parts...)
	sum := crc64NVME(bytes.Join(parts, nil))
	out, err := f.st.CompleteMultipartUpload(ctxFor(t), &store.CompleteMultipartUploadInput{Bucket: f.bucket, Key: "mpu", UploadID: id, Parts: done,
		FullObjectChecksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum}, ChecksumType: store.ChecksumTypeFullObject})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	wantETag := hex.EncodeToString(md5Of(append(md5Of(parts[0]), md5Of(parts[1])...))) + "-2"
	wantSum, wantType := sum, store.ChecksumTypeFullObject
	if f.srv.EmptyCompleteETag() {
		wantETag = ""
	}
	if f.srv.IgnoresChecksums() {
		wantSum, wantType = "", ""
	}
	if f.srv.Name == s3test.MinIO {
		wantType = ""
	}
	if out.ETag != wantETag || out.Checksums.CRC64NVME != wantSum || out.Checksums.Type != wantType {
		t.Errorf("Complete answered ETag %q checksums %+v; want ETag %q, CRC64NVME %q type %q", out.ETag, out.Checksums, wantETag, wantSum, wantType)
	}
}

// If-None-Match on Complete: Ceph RGW 16.2 ignores it (the second upload replaces the first; the
// ceph profile says so and the writer checks by HEAD). A create-only Complete sent again after
// it succeeded: Versity S3 Gateway replays the success, MinIO checks the precondition first
// (412).
func factCreateOnlyComplete(t *testing.T, f facts) {
	start := func(data []byte) *store.CompleteMultipartUploadInput {
		id, done := f.uploadParts(t, "once", false, data)
		return &store.CompleteMultipartUploadInput{Bucket: f.bucket, Key: "once", UploadID: id, Parts: done, IfNoneMatch: true}
	}
	first, second := s3test.RandomBytes(1000), s3test.RandomBytes(2000)
	firstIn := start(first)
	if _, err := f.st.CompleteMultipartUpload(ctxFor(t), firstIn); err != nil {
		t.Fatalf("first create-only Complete: %v", err)
	}
	_, err := f.st.CompleteMultipartUpload(ctxFor(t), start(second))
	if f.srv.Name == s3test.Ceph {
		if err != nil {
			t.Fatalf("second create-only Complete on Ceph RGW: %v, want the header ignored", err)
		}
		f.readBack(t, "once", second)
		return
	}
	mustAnswer(t, "second create-only Complete", err, http.StatusPreconditionFailed, "PreconditionFailed")
	_, err = f.st.CompleteMultipartUpload(ctxFor(t), firstIn)
	switch f.srv.Name {
	case s3test.VersityGW:
		if err != nil {
			t.Errorf("replayed Complete on Versity S3 Gateway: %v, want the success replayed", err)
		}
	case s3test.MinIO:
		mustAnswer(t, "replayed create-only Complete on MinIO", err, http.StatusPreconditionFailed, "PreconditionFailed")
	}
	f.readBack(t, "once", first)
}

// Upload listings: Versity S3 Gateway v1.8.0 cannot continue one (a request with the key-marker
// and upload-id-marker it returned itself is refused: 400 InvalidArgument "Invalid uploadId
// marker"), and the adapter passes that 400 on rather than a partial listing; MinIO matches a
// prefix only as a whole key (a prefix that is no key lists nothing); the others continue.
func factUploadListing(t *testing.T, f facts) {
	ctx := ctxFor(t)
	for range 3 {
		f.uploadParts(t, "list/key", false, []byte("part"))
	}
	raw := f.srv.RawClient()
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(f.bucket), Prefix: aws.String("list/key"), MaxUploads: aws.Int32(1)}
	first, err := raw.ListMultipartUploads(ctx, in)
	if err != nil {
		t.Fatalf("raw ListMultipartUploads: %v", err)
	}
	if !aws.ToBool(first.IsTruncated) || len(first.Uploads) != 1 {
		t.Fatalf("raw ListMultipartUploads with max-uploads 1 over 3 uploads: %d uploads, truncated %v; want a truncated page of 1", len(first.Uploads), aws.ToBool(first.IsTruncated))
	}
	in.KeyMarker, in.UploadIdMarker = first.NextKeyMarker, first.NextUploadIdMarker
	_, err = raw.ListMultipartUploads(ctx, in)
	pages := err == nil
	if pages != (f.srv.Name != s3test.VersityGW) {
		t.Fatalf("raw ListMultipartUploads page 2: %v; the server's known ability to continue an upload listing changed: update this check, Capabilities and the profile notes", err)
	}
	if !pages {
		_, err := f.st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: f.bucket, Prefix: "list/key", PageSize: 1})
		mustAnswer(t, "ListMultipartUploads page by page on Versity S3 Gateway", err, http.StatusBadRequest, "")
	}
	lu, err := f.st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: f.bucket, Prefix: "list/"})
	if err != nil {
		t.Fatalf("ListMultipartUploads list/: %v", err)
	}
	if want := 3; f.srv.Name == s3test.MinIO {
		if len(lu.Uploads) != 0 {
			t.Errorf("MinIO listed %d uploads under the prefix %q, which is no key; want none (whole-key matching)", len(lu.Uploads), "list/")
		}
	} else if len(lu.Uploads) != want || !strings.HasPrefix(lu.Uploads[0].Key, "list/") {
		t.Errorf("ListMultipartUploads list/: %+v, want the %d uploads of list/key", lu.Uploads, want)
	}
}
