// Package storetest is the conformance suite for store.Store implementations: every contract
// store/store.go documents and the writer relies on, runnable by anyone who writes an adapter or
// a wrapper, in the manner of gocloud's drivertest.
//
// Give Run a Harness: it makes the store under test, a reference store for the same backend (an
// independent client, so an adapter is never checked only by itself; an in-memory store can be
// its own reference), a fresh bucket, and says what the backend supports (Capabilities). Each
// contract is a subtest with a bucket of its own: bytes in equal bytes out, ETags and checksums
// as sent, ranges, the answers for missing keys, buckets and uploads, create-only writes,
// multipart round trips, listings page by page, aborts, input rejected before anything is sent,
// failures with no answer, the request-written signal the writer paces parts by, and concurrent
// use. A Harness that also implements TransportHarness has the wire checked too (a closed port
// and its failure marked not sent, requests per page, a Retry-After read into RetryAfter).
//
// A third-party adapter's test (example_test.go has the same shape over the in-memory store):
//
//	type harness struct{}
//
//	func (harness) MakeStores(t *testing.T) (under, reference store.Store, bucket string) {
//		under = myadapter.New(myConfig)                       // the store under test
//		reference, err := awss3.New(awss3.Config{ /* the same server */ }) // an independent client
//		if err != nil {
//			t.Fatal(err)
//		}
//		return under, reference, newEmptyBucket(t)
//	}
//
//	func (harness) Capabilities() storetest.Capabilities { return storetest.Capabilities{Checksums: true} }
//
//	func TestConformance(t *testing.T) { storetest.Run(t, harness{}) }
//
// Facts about one server that no contract states (which error code it picks among those S3
// allows, which headers it ignores) belong in that server's own tests, layered on top.
//
// Test support: storetest and the packages under it (memstore, faulty, faultproxy, wirekit,
// testkit, testcerts, s3test, journaltest), a module of their own beside the library's, are not
// covered by safeput's compatibility promise; they change with the tests they serve, in any
// release.
package storetest

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s; not for security.
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // S3's SHA1 checksum; not for security.
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/crc64nvme"

	"github.com/safeput/safeput/store"
)

// Harness connects the suite to a backend.
type Harness interface {
	// MakeStores returns the store under test, a reference store for the same backend, and an
	// empty bucket that both can use. It is called once per subtest.
	MakeStores(t *testing.T) (under, reference store.Store, bucket string)
	// Capabilities says what the backend supports, so the suite asserts only what it should.
	Capabilities() Capabilities
}

// TransportHarness is a Harness whose store sends HTTP requests. The suite then also checks
// what needs the wire: a request that gets no answer fails with the transport's error (a
// *net.OpError), never a *store.ResponseError, and a PageSize really lists page by page.
type TransportHarness interface {
	Harness
	// MakeStoreWithTransport returns a store under test for the backend and credentials of
	// MakeStores, sending every request through rt.
	MakeStoreWithTransport(t *testing.T, rt http.RoundTripper) store.Store
}

// Capabilities of a backend. The zero value asserts the least: a capability left false is
// checked only to answer truthfully (refused, or done as asked), never to be there.
type Capabilities struct {
	// MinPartSize is the smallest non-final part the backend accepts (0: S3's 5 MiB).
	MinPartSize int64
	// ConditionalPut: PutObject with IfNoneMatch answers 412 when the key exists (false: 412 or
	// 501 NotImplemented).
	ConditionalPut bool
	// ConditionalComplete: so does CompleteMultipartUpload (false: it may also ignore the header
	// and replace the object, as Ceph RGW 16.2 does).
	ConditionalComplete bool
	// Checksums: x-amz-checksum-* values are checked (a wrong one is refused), stored and
	// reported by HEAD with ChecksumMode, for single and multipart objects (false: a checksum
	// may be refused or ignored, never reported other than as sent).
	Checksums bool
	// MD5ETags: ETags are the MD5 of the object (of the part), a multipart object's the MD5 of
	// its parts' MD5s with "-N" (false: ETags are opaque, as on AWS with SSE-KMS).
	MD5ETags bool
	// PagedUploadListing: ListMultipartUploads with a PageSize follows every page (false: it may
	// instead fail with the store's answer, never return part of the listing, as on Versity S3
	// Gateway v1.8.0, which cannot continue an upload listing).
	PagedUploadListing bool
}

func (c Capabilities) minPart() int64 {
	if c.MinPartSize > 0 {
		return c.MinPartSize
	}
	return 5 << 20
}

// Run runs every contract as a subtest, each with stores and a bucket from h.MakeStores.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, env)
	}{
		{"PutObjectRoundTrip", testPutRoundTrip},
		{"PutObjectReadsOnlyContentLength", testPutWindow},
		{"EmptyObject", testEmptyObject},
		{"ChecksumAlgorithms", testChecksumAlgorithms},
		{"BadDigest", testBadDigest},
		{"GetObjectRanges", testGetRanges},
		{"DeleteObject", testDeleteObject},
		{"NotFound", testNotFound},
		{"CreateOnlyPut", testCreateOnlyPut},
		{"CreateOnlyComplete", testCreateOnlyComplete},
		{"MultipartRoundTrip", testMultipart},
		{"MultipartFullObjectChecksum", testFullObjectChecksum},
		{"MultipartFullObjectBadDigest", testFullObjectBadDigest},
		{"ReSentPartListing", testReSentPart},
		{"EntityTooSmall", testEntityTooSmall},
		{"AbortAndListUploads", testAbortAndList},
		{"ListPaging", testListPaging},
		{"InvalidInput", testInvalidInput},
		{"NoResponse", testNoResponse},
		{"RequestWritten", testRequestWritten},
		{"NotSent", testNotSent},
		{"RetryAfter", testRetryAfter},
		{"Concurrent", testConcurrent},
	} {
		t.Run(c.name, func(t *testing.T) {
			under, ref, bucket := h.MakeStores(t)
			c.fn(t, env{under: under, ref: ref, bucket: bucket, caps: h.Capabilities(), h: h})
		})
	}
}

type env struct {
	under, ref store.Store
	bucket     string
	caps       Capabilities
	h          Harness
}

// --- helpers ---------------------------------------------------------------------------------

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func crc64NVME(data []byte) string {
	return b64(binary.BigEndian.AppendUint64(nil, crc64nvme.Checksum(data)))
}

// checksumOf is data's checksum under alg, as S3 sends it.
func checksumOf(alg store.ChecksumAlgorithm, data []byte) store.Checksum {
	var v []byte
	switch alg {
	case store.ChecksumCRC32:
		v = binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(data))
	case store.ChecksumCRC32C:
		v = binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	case store.ChecksumCRC64NVME:
		return store.Checksum{Algorithm: alg, Value: crc64NVME(data)}
	case store.ChecksumSHA1:
		s := sha1.Sum(data) //nolint:gosec // S3's SHA1 checksum.
		v = s[:]
	case store.ChecksumSHA256:
		s := sha256.Sum256(data)
		v = s[:]
	default:
		return store.Checksum{}
	}
	return store.Checksum{Algorithm: alg, Value: b64(v)}
}

// sum is data's CRC64NVME where the backend checks checksums, none elsewhere (a backend may
// refuse the header).
func (e env) sum(data []byte) store.Checksum {
	if !e.caps.Checksums {
		return store.Checksum{}
	}
	return checksumOf(store.ChecksumCRC64NVME, data)
}

func md5Of(data []byte) []byte {
	s := md5.Sum(data) //nolint:gosec // S3 ETags are MD5s.
	return s[:]
}

// multipartETag is S3's ETag of a multipart object: hex MD5 of the concatenated binary part
// MD5s, "-", part count.
func multipartETag(parts ...[]byte) string {
	var cat []byte
	for _, p := range parts {
		cat = append(cat, md5Of(p)...)
	}
	return hex.EncodeToString(md5Of(cat)) + fmt.Sprintf("-%d", len(parts))
}

// checkETag fails unless etag is a bare entity tag: want exactly where ETags are MD5s.
func (e env) checkETag(t *testing.T, what, etag, want string) {
	t.Helper()
	switch {
	case etag == "" || strings.Trim(etag, `" `) != etag:
		t.Errorf("%s: ETag %q, want a bare non-empty entity tag", what, etag)
	case e.caps.MD5ETags && etag != want:
		t.Errorf("%s: ETag %q, want %q (the MD5)", what, etag, want)
	}
}

// mustAnswer asserts that err carries the store's answer with this status (any, if 0) and code
// (any, if "").
func mustAnswer(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	_ = responseError(t, what, err, status, code)
}

// responseError asserts that err carries the store's answer with this status (any, if 0) and
// code (any, if "") and returns it.
func responseError(t *testing.T, what string, err error, status int, code string) *store.ResponseError {
	t.Helper()
	var re *store.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("%s: err %v (%T), want a *store.ResponseError with HTTP %d %s", what, err, err, status, code)
	}
	if (status != 0 && re.StatusCode != status) || (code != "" && re.Code != code) {
		t.Fatalf("%s: HTTP %d code %q (message %q), want HTTP %d %s", what, re.StatusCode, re.Code, re.Message, status, code)
	}
	if re.Op == "" {
		t.Errorf("%s: ResponseError has no Op", what)
	}
	if errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("%s: a store answer must not be ErrInvalidInput", what)
	}
	return re
}

// refusedAgainIfBodyLost sends a request again, up to twice, while its refusal arrives without the
// error document (the status, no code), and returns the last answer: Ceph RGW has been seen
// answering a wrong Content-MD5 with a 400, a PUT into a missing bucket and a part of a missing
// upload with a 404, whose body the client never read (it answers before reading the request
// body), and a CI run lost it twice in a row. The same request is refused the same way, so a
// store that accepts it or answers otherwise still fails.
func refusedAgainIfBodyLost(t *testing.T, status int, send func() error) error {
	t.Helper()
	err := send()
	for range 2 {
		var re *store.ResponseError
		if !errors.As(err, &re) || re.StatusCode != status || re.Code != "" {
			break
		}
		t.Logf("HTTP %d without an error document (%v); sending it again", status, err)
		err = send()
	}
	return err
}

func isStatus(err error, status int) bool {
	var re *store.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

func (e env) put(t *testing.T, key string, data []byte) *store.PutObjectOutput {
	t.Helper()
	out, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: key, Body: bytes.NewReader(data),
		ContentLength: int64(len(data)), Checksum: e.sum(data)})
	if err != nil {
		t.Fatalf("PutObject %s: %v", key, err)
	}
	return out
}

// readAll reads bucket/key through st and fails the test on any error.
func readAll(t *testing.T, st store.Store, bucket, key string) []byte {
	t.Helper()
	out, err := st.GetObject(ctxFor(t), &store.GetObjectInput{Bucket: bucket, Key: key})
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return b
}

// readBack checks through the reference store that key holds want.
func (e env) readBack(t *testing.T, key string, want []byte) {
	t.Helper()
	if got := readAll(t, e.ref, e.bucket, key); !bytes.Equal(got, want) {
		t.Fatalf("the reference store reads %s as %d bytes, not the %d bytes written", key, len(got), len(want))
	}
}

// refHead is the reference store's HEAD of key, with the stored checksums.
func (e env) refHead(t *testing.T, key string) *store.HeadObjectOutput {
	t.Helper()
	h, err := e.ref.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: key, ChecksumMode: true})
	if err != nil {
		t.Fatalf("reference HEAD %s: %v", key, err)
	}
	return h
}

// exists asks the reference store whether key holds an object.
func (e env) exists(t *testing.T, key string) bool {
	t.Helper()
	_, err := e.ref.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: key})
	switch {
	case err == nil:
		return true
	case isStatus(err, http.StatusNotFound):
		return false
	}
	t.Fatalf("reference HEAD %s: %v", key, err)
	return false
}

// reported checks a checksum the store answered with: the value sent where the backend keeps
// checksums; elsewhere nothing, or the value sent.
func (e env) reported(t *testing.T, what, got, sent string) {
	t.Helper()
	if got != sent && (e.caps.Checksums || got != "") {
		t.Errorf("%s: checksum %q, want %q", what, got, sent)
	}
}

// uploadParts creates an upload of key and sends parts, each with its Content-MD5 and, with alg
// set, its checksum; it returns the upload id and the completed parts. The reference store
// aborts the upload when the test ends, in case the test did not.
func (e env) uploadParts(t *testing.T, key string, alg store.ChecksumAlgorithm, typ store.ChecksumType, parts ...[]byte) (string, []store.CompletedPart) {
	t.Helper()
	ctx := ctxFor(t)
	cr, err := e.under.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: e.bucket, Key: key, ChecksumAlgorithm: alg, ChecksumType: typ})
	if err != nil {
		t.Fatalf("CreateMultipartUpload %s: %v", key, err)
	}
	if cr.UploadID == "" {
		t.Fatalf("CreateMultipartUpload %s: empty UploadID", key)
	}
	t.Cleanup(func() {
		_ = e.ref.AbortMultipartUpload(context.Background(), &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: key, UploadID: cr.UploadID})
	})
	var done []store.CompletedPart
	for i, p := range parts {
		n := int32(i + 1) //nolint:gosec // a test's handful of parts
		in := &store.UploadPartInput{Bucket: e.bucket, Key: key, UploadID: cr.UploadID, PartNumber: n,
			Body: bytes.NewReader(p), ContentLength: int64(len(p)), ContentMD5: b64(md5Of(p)), Checksum: checksumOf(alg, p)}
		out, err := e.under.UploadPart(ctx, in)
		if err != nil {
			t.Fatalf("UploadPart %s #%d: %v", key, n, err)
		}
		e.checkETag(t, fmt.Sprintf("UploadPart %s #%d", key, n), out.ETag, hex.EncodeToString(md5Of(p)))
		if alg != store.ChecksumNone {
			e.reported(t, fmt.Sprintf("UploadPart %s #%d echo", key, n), out.Checksums.Get(alg), in.Checksum.Value)
		}
		done = append(done, store.CompletedPart{PartNumber: n, ETag: out.ETag, Checksum: in.Checksum})
	}
	return cr.UploadID, done
}

// uploadsUnder lists the bucket's uploads through st and keeps those under prefix, as
// "key@uploadID", checking each has an Initiated time. It lists without a prefix: the writer
// only ever lists by a whole key, and MinIO matches a prefix only as a whole key.
func (e env) uploadsUnder(t *testing.T, st store.Store, prefix string) []string {
	t.Helper()
	lu, err := st.ListMultipartUploads(ctxFor(t), &store.ListMultipartUploadsInput{Bucket: e.bucket})
	if err != nil {
		t.Fatalf("ListMultipartUploads of the bucket: %v", err)
	}
	var out []string
	for _, u := range lu.Uploads {
		if !strings.HasPrefix(u.Key, prefix) {
			continue
		}
		out = append(out, u.Key+"@"+u.UploadID)
		if u.Initiated.IsZero() {
			t.Errorf("upload %s of %s has no Initiated time", u.UploadID, u.Key)
		}
	}
	return out
}

// exactlyOnce fails unless got holds every element of want once and nothing else.
func exactlyOnce(t *testing.T, what string, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Errorf("%s: %s listed %d times, want once", what, w, seen[w])
		}
		delete(seen, w)
	}
	for g, n := range seen {
		t.Errorf("%s: listed %s (%d times), which is not one of the uploads", what, g, n)
	}
}

func keyedUploads(out *store.ListMultipartUploadsOutput) []string {
	var l []string
	for _, u := range out.Uploads {
		l = append(l, u.Key+"@"+u.UploadID)
	}
	return l
}
