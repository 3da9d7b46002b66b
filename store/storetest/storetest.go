// Package storetest is the conformance suite for store.Store implementations: the contracts the
// writer relies on, runnable by anyone who writes an adapter or a wrapper, in the manner of
// gocloud's drivertest.
//
// Give Run a Harness: it makes the store under test, a reference store for the same backend (an
// independent client, so an adapter is never checked only by itself; an in-memory store can be
// its own reference), a fresh bucket, and what the backend supports. Every behaviour the writer
// depends on is checked: bytes in equal bytes out, the 404 of a missing key, create-only writes,
// multipart round trips and listings, aborts, what an unknown upload answers, and input rejected
// before anything is sent. Deeper facts about particular servers live in the project's own
// integration tests.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, myHarness{})
//	}
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// Harness connects the suite to a backend.
type Harness interface {
	// MakeStores returns the store under test, a reference store for the same backend, and an
	// empty bucket that both can use. It is called once per subtest.
	MakeStores(t *testing.T) (under, reference store.Store, bucket string)
	// Capabilities says what the backend supports, so the suite asserts only what it should.
	Capabilities() Capabilities
}

// Capabilities of a backend.
type Capabilities struct {
	// MinPartSize is the smallest non-final part the backend accepts (0: S3's 5 MiB).
	MinPartSize int64
	// ConditionalPut: PutObject with IfNoneMatch answers 412 when the key exists.
	ConditionalPut bool
	// Checksums: x-amz-checksum-crc64nvme on PutObject is checked (a wrong value is refused)
	// and HEAD with ChecksumMode reports it.
	Checksums bool
}

func (c Capabilities) minPart() int64 {
	if c.MinPartSize > 0 {
		return c.MinPartSize
	}
	return 5 << 20
}

// Run runs every contract as a subtest.
func Run(t *testing.T, h Harness) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, env)
	}{
		{"PutThenGetAndHead", testPutGetHead},
		{"EmptyObject", testEmptyObject},
		{"MissingKeyIs404", testMissingKey},
		{"DeleteMissingKeyIsNotAnError", testDeleteMissing},
		{"CreateOnlyPut", testCreateOnlyPut},
		{"ChecksumStoredAndChecked", testChecksum},
		{"MultipartRoundTrip", testMultipart},
		{"ReSentPartListing", testReSentPart},
		{"AbortedUploadIsGone", testAbort},
		{"UnknownUpload", testUnknownUpload},
		{"InvalidInputSendsNothing", testInvalidInput},
	} {
		t.Run(c.name, func(t *testing.T) {
			under, ref, bucket := h.MakeStores(t)
			c.fn(t, env{under: under, ref: ref, bucket: bucket, caps: h.Capabilities()})
		})
	}
}

type env struct {
	under, ref store.Store
	bucket     string
	caps       Capabilities
}

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

func put(t *testing.T, e env, key string, data []byte) *store.PutObjectOutput {
	t.Helper()
	out, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: key, Body: bytes.NewReader(data), ContentLength: int64(len(data))})
	if err != nil {
		t.Fatalf("PutObject %s: %v", key, err)
	}
	return out
}

// status returns the HTTP status of a *store.ResponseError in err, or 0.
func status(err error) int {
	var re *store.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func code(err error) string {
	var re *store.ResponseError
	if errors.As(err, &re) {
		return re.Code
	}
	return ""
}

func testPutGetHead(t *testing.T, e env) {
	data := randomBytes(t, 300<<10+7)
	put(t, e, "obj", data)
	if got := readAll(t, e.ref, e.bucket, "obj"); !bytes.Equal(got, data) {
		t.Fatalf("reference store read %d bytes, wrote %d, not identical", len(got), len(data))
	}
	if got := readAll(t, e.under, e.bucket, "obj"); !bytes.Equal(got, data) {
		t.Fatalf("store under test read back %d bytes, wrote %d, not identical", len(got), len(data))
	}
	h, err := e.under.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "obj"})
	if err != nil {
		t.Fatal(err)
	}
	if h.Size != int64(len(data)) || h.ETag == "" {
		t.Errorf("HEAD: size %d, ETag %q; want %d and an ETag", h.Size, h.ETag, len(data))
	}
	if len(h.ETag) > 1 && (h.ETag[0] == '"' || h.ETag[len(h.ETag)-1] == '"') {
		t.Errorf("HEAD ETag %s keeps its quotes; the contract strips them", h.ETag)
	}
	// A range read returns exactly the range.
	out, err := e.under.GetObject(ctxFor(t), &store.GetObjectInput{Bucket: e.bucket, Key: "obj", Offset: 10, Length: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	if got, _ := io.ReadAll(out.Body); !bytes.Equal(got, data[10:20]) {
		t.Errorf("range 10-19 read %d bytes, not the range", len(got))
	}
}

func testEmptyObject(t *testing.T, e env) {
	put(t, e, "empty", nil)
	if got := readAll(t, e.ref, e.bucket, "empty"); len(got) != 0 {
		t.Fatalf("empty object read back as %d bytes", len(got))
	}
}

func testMissingKey(t *testing.T, e env) {
	_, err := e.under.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "no-such-key"})
	if status(err) != 404 {
		t.Errorf("HEAD of a missing key: %v; want a *store.ResponseError with status 404", err)
	}
	_, err = e.under.GetObject(ctxFor(t), &store.GetObjectInput{Bucket: e.bucket, Key: "no-such-key"})
	if status(err) != 404 {
		t.Errorf("GET of a missing key: %v; want a *store.ResponseError with status 404", err)
	}
}

func testDeleteMissing(t *testing.T, e env) {
	if err := e.under.DeleteObject(ctxFor(t), &store.DeleteObjectInput{Bucket: e.bucket, Key: "never-written"}); err != nil {
		t.Errorf("deleting a missing key: %v; want nil", err)
	}
	data := randomBytes(t, 1000)
	put(t, e, "del", data)
	if err := e.under.DeleteObject(ctxFor(t), &store.DeleteObjectInput{Bucket: e.bucket, Key: "del"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ref.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "del"}); status(err) != 404 {
		t.Errorf("after DeleteObject the reference HEAD says %v; want 404", err)
	}
}

func testCreateOnlyPut(t *testing.T, e env) {
	if !e.caps.ConditionalPut {
		t.Skip("the backend has no conditional PUT (Capabilities.ConditionalPut)")
	}
	first, second := randomBytes(t, 1000), randomBytes(t, 1000)
	in := func(b []byte) *store.PutObjectInput {
		return &store.PutObjectInput{Bucket: e.bucket, Key: "once", Body: bytes.NewReader(b), ContentLength: int64(len(b)), IfNoneMatch: true}
	}
	if _, err := e.under.PutObject(ctxFor(t), in(first)); err != nil {
		t.Fatalf("create-only PUT of a new key: %v", err)
	}
	_, err := e.under.PutObject(ctxFor(t), in(second))
	if status(err) != 412 {
		t.Errorf("create-only PUT over an existing key: %v; want status 412", err)
	}
	if got := readAll(t, e.ref, e.bucket, "once"); !bytes.Equal(got, first) {
		t.Error("the refused create-only PUT changed the object")
	}
}

func crc64nvme(data []byte) string {
	return verify.EncodeCRCValue(store.ChecksumCRC64NVME, verify.ChecksumOf(store.ChecksumCRC64NVME, data))
}

func testChecksum(t *testing.T, e env) {
	if !e.caps.Checksums {
		t.Skip("the backend does not check or report checksums (Capabilities.Checksums)")
	}
	data := randomBytes(t, 64<<10)
	sum := crc64nvme(data)
	_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "sum", Body: bytes.NewReader(data),
		ContentLength: int64(len(data)), Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := e.under.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "sum", ChecksumMode: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Checksums.Get(store.ChecksumCRC64NVME); got != sum {
		t.Errorf("HEAD CRC64NVME %q, want %q", got, sum)
	}
	wrong := crc64nvme(append([]byte{1}, data...))
	_, err = e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "bad-sum", Body: bytes.NewReader(data),
		ContentLength: int64(len(data)), Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: wrong}})
	if status(err) != 400 {
		t.Errorf("PUT with a wrong CRC64NVME: %v; want a *store.ResponseError with status 400", err)
	}
	if _, err := e.ref.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "bad-sum"}); status(err) != 404 {
		t.Errorf("the refused PUT left an object: %v", err)
	}
}

// multipartUpload creates an upload of key and sends parts; it returns the upload id and the
// completed parts.
func multipartUpload(t *testing.T, e env, key string, parts ...[]byte) (string, []store.CompletedPart) {
	t.Helper()
	up, err := e.under.CreateMultipartUpload(ctxFor(t), &store.CreateMultipartUploadInput{Bucket: e.bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if up.UploadID == "" {
		t.Fatal("CreateMultipartUpload returned an empty upload id")
	}
	var done []store.CompletedPart
	for i, p := range parts {
		n := int32(i + 1)
		out, err := e.under.UploadPart(ctxFor(t), &store.UploadPartInput{Bucket: e.bucket, Key: key, UploadID: up.UploadID,
			PartNumber: n, Body: bytes.NewReader(p), ContentLength: int64(len(p))})
		if err != nil {
			t.Fatalf("UploadPart %d: %v", n, err)
		}
		if out.ETag == "" {
			t.Fatalf("UploadPart %d returned an empty ETag", n)
		}
		done = append(done, store.CompletedPart{PartNumber: n, ETag: out.ETag})
	}
	return up.UploadID, done
}

func testMultipart(t *testing.T, e env) {
	p1, p2 := randomBytes(t, int(e.caps.minPart())), randomBytes(t, 1)
	id, parts := multipartUpload(t, e, "mp", p1, p2)
	list, err := e.under.ListParts(ctxFor(t), &store.ListPartsInput{Bucket: e.bucket, Key: "mp", UploadID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Parts) != 2 || list.Parts[0].PartNumber != 1 || list.Parts[0].Size != int64(len(p1)) ||
		list.Parts[1].PartNumber != 2 || list.Parts[1].Size != 1 {
		t.Fatalf("ListParts: %+v; want parts 1 (%d bytes) and 2 (1 byte) in order", list.Parts, len(p1))
	}
	for i, p := range list.Parts {
		if p.ETag != parts[i].ETag {
			t.Errorf("ListParts part %d ETag %q, UploadPart said %q", p.PartNumber, p.ETag, parts[i].ETag)
		}
	}
	ups, err := e.under.ListMultipartUploads(ctxFor(t), &store.ListMultipartUploadsInput{Bucket: e.bucket, Prefix: "mp"})
	if err != nil {
		t.Fatal(err)
	}
	if !listed(ups, id) {
		t.Errorf("ListMultipartUploads does not list the open upload %s", id)
	}
	if _, err := e.under.CompleteMultipartUpload(ctxFor(t), &store.CompleteMultipartUploadInput{Bucket: e.bucket, Key: "mp", UploadID: id, Parts: parts}); err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	if got := readAll(t, e.ref, e.bucket, "mp"); !bytes.Equal(got, append(p1, p2...)) {
		t.Fatalf("the completed object read back as %d bytes, not the parts", len(got))
	}
}

// testReSentPart checks what ListParts returns after parts sent out of order and one part sent
// twice (store.Store's ListParts doc): entries in part-number order, bare non-empty ETags, the
// attempt kept listed (a store may list the earlier attempt too, as an entry of its own), the
// same answer page by page, and Complete taking the kept attempt's ETag.
func testReSentPart(t *testing.T, e env) {
	first, again, last := randomBytes(t, int(e.caps.minPart())), randomBytes(t, int(e.caps.minPart())), randomBytes(t, 3)
	up, err := e.under.CreateMultipartUpload(ctxFor(t), &store.CreateMultipartUploadInput{Bucket: e.bucket, Key: "resent"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = e.ref.AbortMultipartUpload(context.Background(), &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: "resent", UploadID: up.UploadID})
	}()
	send := func(n int32, data []byte) string {
		out, err := e.under.UploadPart(ctxFor(t), &store.UploadPartInput{Bucket: e.bucket, Key: "resent", UploadID: up.UploadID,
			PartNumber: n, Body: bytes.NewReader(data), ContentLength: int64(len(data))})
		if err != nil {
			t.Fatalf("UploadPart %d: %v", n, err)
		}
		return out.ETag
	}
	e2 := send(2, last)
	send(1, first)
	kept := send(1, again)
	var pages [][]store.Part
	for _, size := range []int32{0, 1} {
		list, err := e.under.ListParts(ctxFor(t), &store.ListPartsInput{Bucket: e.bucket, Key: "resent", UploadID: up.UploadID, PageSize: size})
		if err != nil {
			t.Fatalf("ListParts (page size %d): %v", size, err)
		}
		pages = append(pages, list.Parts)
		found, twos := false, 0
		for i, p := range list.Parts {
			if p.PartNumber < 1 || p.PartNumber > store.MaxPartNumber || (i > 0 && p.PartNumber < list.Parts[i-1].PartNumber) {
				t.Fatalf("ListParts (page size %d): entry %d has part number %d: not in part-number order: %+v", size, i, p.PartNumber, list.Parts)
			}
			if p.ETag == "" || p.ETag[0] == '"' || p.ETag[len(p.ETag)-1] == '"' {
				t.Errorf("ListParts (page size %d): part %d ETag %q, want a bare non-empty entity tag", size, p.PartNumber, p.ETag)
			}
			found = found || (p.PartNumber == 1 && p.ETag == kept && p.Size == int64(len(again)))
			if p.PartNumber == 2 {
				twos++
				if p.ETag != e2 || p.Size != int64(len(last)) {
					t.Errorf("ListParts (page size %d): part 2 listed as %+v, sent as %d bytes with ETag %q", size, p, len(last), e2)
				}
			}
		}
		if !found || twos != 1 {
			t.Fatalf("ListParts (page size %d): %+v; want part 1's kept attempt (ETag %q) listed and part 2 once", size, list.Parts, kept)
		}
	}
	if len(pages[0]) != len(pages[1]) {
		t.Fatalf("ListParts lists %d entries in one page, %d page by page", len(pages[0]), len(pages[1]))
	}
	for i := range pages[0] {
		a, b := pages[0][i], pages[1][i]
		if a.PartNumber != b.PartNumber || a.ETag != b.ETag || a.Size != b.Size {
			t.Fatalf("entry %d: %+v in one page, %+v page by page", i, a, b)
		}
	}
	parts := []store.CompletedPart{{PartNumber: 1, ETag: kept}, {PartNumber: 2, ETag: e2}}
	if _, err := e.under.CompleteMultipartUpload(ctxFor(t), &store.CompleteMultipartUploadInput{Bucket: e.bucket, Key: "resent", UploadID: up.UploadID, Parts: parts}); err != nil {
		t.Fatalf("CompleteMultipartUpload naming the kept attempt: %v", err)
	}
	if got := readAll(t, e.ref, e.bucket, "resent"); !bytes.Equal(got, append(again, last...)) {
		t.Fatalf("the completed object read back as %d bytes, not the kept attempts", len(got))
	}
}

func listed(out *store.ListMultipartUploadsOutput, id string) bool {
	for _, u := range out.Uploads {
		if u.UploadID == id {
			return true
		}
	}
	return false
}

func testAbort(t *testing.T, e env) {
	id, _ := multipartUpload(t, e, "ab", randomBytes(t, 1000))
	if err := e.under.AbortMultipartUpload(ctxFor(t), &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: "ab", UploadID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.under.ListParts(ctxFor(t), &store.ListPartsInput{Bucket: e.bucket, Key: "ab", UploadID: id}); err == nil {
		t.Error("ListParts of an aborted upload succeeded; want an error (the writer reads it as gone)")
	}
	ups, err := e.ref.ListMultipartUploads(ctxFor(t), &store.ListMultipartUploadsInput{Bucket: e.bucket})
	if err != nil {
		t.Fatal(err)
	}
	if listed(ups, id) {
		t.Errorf("the aborted upload %s is still listed", id)
	}
	// Aborting again: nil or NoSuchUpload, both "gone".
	err = e.under.AbortMultipartUpload(ctxFor(t), &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: "ab", UploadID: id})
	if err != nil && code(err) != "NoSuchUpload" {
		t.Errorf("a second abort: %v; want nil or NoSuchUpload", err)
	}
	if _, err := e.ref.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "ab"}); status(err) != 404 {
		t.Errorf("an aborted upload left an object: %v", err)
	}
}

func testUnknownUpload(t *testing.T, e env) {
	const bogus = "no-such-upload-0123456789"
	data := randomBytes(t, 100)
	_, err := e.under.UploadPart(ctxFor(t), &store.UploadPartInput{Bucket: e.bucket, Key: "u", UploadID: bogus, PartNumber: 1,
		Body: bytes.NewReader(data), ContentLength: int64(len(data))})
	if err == nil {
		t.Error("UploadPart to an unknown upload succeeded")
	}
	if _, err := e.under.ListParts(ctxFor(t), &store.ListPartsInput{Bucket: e.bucket, Key: "u", UploadID: bogus}); err == nil {
		t.Error("ListParts of an unknown upload succeeded")
	}
	_, err = e.under.CompleteMultipartUpload(ctxFor(t), &store.CompleteMultipartUploadInput{Bucket: e.bucket, Key: "u", UploadID: bogus,
		Parts: []store.CompletedPart{{PartNumber: 1, ETag: "0123456789abcdef0123456789abcdef"}}})
	if err == nil {
		t.Error("CompleteMultipartUpload of an unknown upload succeeded")
	}
	if _, err := e.ref.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "u"}); status(err) != 404 {
		t.Errorf("an unknown upload's Complete left an object: %v", err)
	}
}

// Input a store must reject before sending: the error wraps store.ErrInvalidInput and nothing is
// stored.
func testInvalidInput(t *testing.T, e env) {
	cases := map[string]func() error{
		"nil body with a length": func() error {
			_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "bad", ContentLength: 10})
			return err
		},
		"negative length": func() error {
			_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "bad", Body: bytes.NewReader(nil), ContentLength: -1})
			return err
		},
		"empty key": func() error {
			_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "", Body: bytes.NewReader(nil)})
			return err
		},
		"part number 0": func() error {
			_, err := e.under.UploadPart(ctxFor(t), &store.UploadPartInput{Bucket: e.bucket, Key: "bad", UploadID: "x", PartNumber: 0, Body: bytes.NewReader(nil)})
			return err
		},
		"empty upload id": func() error {
			return e.under.AbortMultipartUpload(ctxFor(t), &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: "bad"})
		},
	}
	for name, call := range cases {
		if err := call(); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v; want an error wrapping store.ErrInvalidInput", name, err)
		}
	}
	if _, err := e.ref.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: "bad"}); status(err) != 404 {
		t.Errorf("invalid input stored something: %v", fmt.Sprint(err))
	}
}
