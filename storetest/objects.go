package storetest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
)

// Bytes, ETag, checksum, content type and metadata as put; HEAD reports checksums only when
// asked (ChecksumMode).
func testPutRoundTrip(t *testing.T, e env) {
	ctx := ctxFor(t)
	data := randomBytes(t, 300<<10+7)
	key := "put/round-trip/ключ"
	sum := e.sum(data)
	out, err := e.under.PutObject(ctx, &store.PutObjectInput{
		Bucket: e.bucket, Key: key, Body: bytes.NewReader(data), ContentLength: int64(len(data)),
		ContentMD5: b64(md5Of(data)), Checksum: sum,
		ContentType: "application/x-safeput-test", Metadata: map[string]string{"origin": "storetest"},
	})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	e.checkETag(t, "PutObject", out.ETag, hex.EncodeToString(md5Of(data)))
	if sum.Value != "" && out.Checksums.CRC64NVME != sum.Value {
		t.Errorf("PutObject echoed CRC64NVME %q, want %q", out.Checksums.CRC64NVME, sum.Value)
	}
	e.readBack(t, key, data)
	if got := readAll(t, e.under, e.bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("the store under test reads back %d bytes, wrote %d, not identical", len(got), len(data))
	}

	head, err := e.under.HeadObject(ctx, &store.HeadObjectInput{Bucket: e.bucket, Key: key, ChecksumMode: true})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if head.Size != int64(len(data)) || head.ETag != out.ETag || head.ContentType != "application/x-safeput-test" || head.Metadata["origin"] != "storetest" {
		t.Errorf("HeadObject %+v, want size %d, ETag %s, content type and metadata as put", head, len(data), out.ETag)
	}
	if sum.Value != "" && (head.Checksums.CRC64NVME != sum.Value || head.Checksums.Type != store.ChecksumTypeFullObject) {
		t.Errorf("HeadObject checksums %+v, want CRC64NVME %q type %s", head.Checksums, sum.Value, store.ChecksumTypeFullObject)
	}
	if time.Since(head.LastModified) > time.Hour || head.LastModified.After(time.Now().Add(time.Hour)) {
		t.Errorf("HeadObject LastModified %v, want about now", head.LastModified)
	}
	if got := e.refHead(t, key).Checksums.CRC64NVME; got != sum.Value {
		t.Errorf("the reference HEAD reports CRC64NVME %q, want %q: the checksum did not reach the store", got, sum.Value)
	}
	// Without ChecksumMode no checksum is asked for, so none is reported.
	head, err = e.under.HeadObject(ctx, &store.HeadObjectInput{Bucket: e.bucket, Key: key})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if head.Checksums.CRC64NVME != "" {
		t.Errorf("HeadObject without ChecksumMode returned CRC64NVME %q", head.Checksums.CRC64NVME)
	}
}

// The body is read from its current position for exactly ContentLength bytes.
func testPutWindow(t *testing.T, e env) {
	data := randomBytes(t, 4096)
	r := bytes.NewReader(data)
	if _, err := r.Seek(100, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	want := data[100:1100]
	_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "put/window", Body: r,
		ContentLength: int64(len(want)), Checksum: e.sum(want)})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	e.readBack(t, "put/window", want)
}

func testEmptyObject(t *testing.T, e env) {
	out, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "put/empty", Body: bytes.NewReader(nil), Checksum: e.sum(nil)})
	if err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	e.checkETag(t, "PutObject of nothing", out.ETag, hex.EncodeToString(md5Of(nil)))
	e.readBack(t, "put/empty", nil)
	if h := e.refHead(t, "put/empty"); h.Size != 0 {
		t.Errorf("stored %d bytes, want 0", h.Size)
	}
}

// Each algorithm's value lands in its own header and comes back in its own field.
func testChecksumAlgorithms(t *testing.T, e env) {
	data := randomBytes(t, 10_000)
	for _, alg := range []store.ChecksumAlgorithm{store.ChecksumCRC32, store.ChecksumCRC32C, store.ChecksumCRC64NVME, store.ChecksumSHA1, store.ChecksumSHA256} {
		key := "put/alg/" + string(alg)
		c := checksumOf(alg, data)
		_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: key, Body: bytes.NewReader(data), ContentLength: int64(len(data)), Checksum: c})
		if err != nil && !e.caps.Checksums {
			// A backend without checksums may refuse the header; then nothing is stored.
			mustAnswer(t, "PutObject with "+string(alg), err, 0, "")
			if e.exists(t, key) {
				t.Errorf("%s: the refused PutObject stored an object", alg)
			}
			continue
		}
		if err != nil {
			t.Fatalf("PutObject %s: %v", alg, err)
		}
		head, err := e.under.HeadObject(ctxFor(t), &store.HeadObjectInput{Bucket: e.bucket, Key: key, ChecksumMode: true})
		if err != nil {
			t.Fatalf("HeadObject %s: %v", alg, err)
		}
		e.reported(t, string(alg)+": HeadObject", head.Checksums.Get(alg), c.Value)
		e.reported(t, string(alg)+": the reference HEAD (the header did not reach the store as "+string(alg)+")",
			e.refHead(t, key).Checksums.Get(alg), c.Value)
		e.readBack(t, key, data)
	}
}

// A checksum or Content-MD5 that does not match the body is refused and nothing is stored: proof
// that the header is really sent. A backend without checksums may instead store the body as sent.
func testBadDigest(t *testing.T, e env) {
	data, other := randomBytes(t, 1000), randomBytes(t, 1000)
	err := refusedAgainIfBodyLost(t, http.StatusBadRequest, func() error {
		_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "put/bad-crc", Body: bytes.NewReader(data),
			ContentLength: int64(len(data)), Checksum: checksumOf(store.ChecksumCRC64NVME, other)})
		return err
	})
	switch {
	case err != nil || e.caps.Checksums:
		// S3 says BadDigest; MinIO its own XAmzContentChecksumMismatch (both read as Integrity).
		if re := responseError(t, "PutObject with a wrong CRC64NVME", err, http.StatusBadRequest, ""); re.Code != "BadDigest" && re.Code != "XAmzContentChecksumMismatch" {
			t.Errorf("PutObject with a wrong CRC64NVME: code %q, want BadDigest or XAmzContentChecksumMismatch", re.Code)
		}
		if e.exists(t, "put/bad-crc") {
			t.Error("an object with a wrong CRC64NVME was stored")
		}
	default:
		e.readBack(t, "put/bad-crc", data) // the header was ignored: the body landed as sent
	}
	err = refusedAgainIfBodyLost(t, http.StatusBadRequest, func() error {
		_, err := e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: "put/bad-md5", Body: bytes.NewReader(data),
			ContentLength: int64(len(data)), ContentMD5: b64(md5Of(other))})
		return err
	})
	mustAnswer(t, "PutObject with a wrong Content-MD5", err, http.StatusBadRequest, "BadDigest")
	if e.exists(t, "put/bad-md5") {
		t.Error("an object with a wrong Content-MD5 was stored")
	}
}

func testGetRanges(t *testing.T, e env) {
	data := randomBytes(t, 10_000)
	put := e.put(t, "get/ranges", data)
	for _, c := range []struct {
		off, n int64
		want   []byte
	}{
		{0, 0, data},
		{1234, 100, data[1234:1334]},
		{9000, 0, data[9000:]},
		{0, 1, data[:1]},
		{9990, 100, data[9990:]}, // past the end: the store answers what exists
	} {
		out, err := e.under.GetObject(ctxFor(t), &store.GetObjectInput{Bucket: e.bucket, Key: "get/ranges", Offset: c.off, Length: c.n})
		if err != nil {
			t.Fatalf("GetObject offset %d length %d: %v", c.off, c.n, err)
		}
		got, err := io.ReadAll(out.Body)
		_ = out.Body.Close()
		if err != nil {
			t.Fatalf("read GetObject body: %v", err)
		}
		if !bytes.Equal(got, c.want) || out.Size != int64(len(c.want)) || out.ETag != put.ETag {
			t.Errorf("GetObject offset %d length %d: %d bytes (Size %d, ETag %q), want %d bytes, ETag %q", c.off, c.n, len(got), out.Size, out.ETag, len(c.want), put.ETag)
		}
	}
	_, err := e.under.GetObject(ctxFor(t), &store.GetObjectInput{Bucket: e.bucket, Key: "get/ranges", Offset: 20_000})
	mustAnswer(t, "GetObject past the end", err, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
}

func testDeleteObject(t *testing.T, e env) {
	e.put(t, "delete/me", []byte("bye"))
	if err := e.under.DeleteObject(ctxFor(t), &store.DeleteObjectInput{Bucket: e.bucket, Key: "delete/me"}); err != nil {
		t.Fatalf("DeleteObject: %v", err)
	}
	if e.exists(t, "delete/me") {
		t.Fatal("the object still exists after DeleteObject")
	}
	if err := e.under.DeleteObject(ctxFor(t), &store.DeleteObjectInput{Bucket: e.bucket, Key: "delete/never-existed"}); err != nil {
		t.Fatalf("DeleteObject of a missing key: %v, want nil", err)
	}
}

// Missing keys, buckets and uploads answer as the writer reads them: a 404 is "nothing there".
func testNotFound(t *testing.T, e env) {
	ctx := ctxFor(t)
	_, err := e.under.HeadObject(ctx, &store.HeadObjectInput{Bucket: e.bucket, Key: "missing"})
	// HEAD answers carry no body, so only the status is a fact.
	mustAnswer(t, "HeadObject of a missing key", err, http.StatusNotFound, "")
	_, err = e.under.GetObject(ctx, &store.GetObjectInput{Bucket: e.bucket, Key: "missing"})
	mustAnswer(t, "GetObject of a missing key", err, http.StatusNotFound, "NoSuchKey")

	missing := fmt.Sprintf("storetest-missing-%x", randomBytes(t, 6))
	err = refusedAgainIfBodyLost(t, http.StatusNotFound, func() error {
		_, err := e.under.PutObject(ctx, &store.PutObjectInput{Bucket: missing, Key: "k", Body: bytes.NewReader([]byte("x")), ContentLength: 1})
		return err
	})
	mustAnswer(t, "PutObject into a missing bucket", err, http.StatusNotFound, "NoSuchBucket")
	_, err = e.under.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: missing, Key: "k"})
	mustAnswer(t, "CreateMultipartUpload in a missing bucket", err, http.StatusNotFound, "NoSuchBucket")
	_, err = e.under.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: missing})
	mustAnswer(t, "ListMultipartUploads of a missing bucket", err, http.StatusNotFound, "NoSuchBucket")

	const bogus = "no-such-upload-0123456789"
	err = refusedAgainIfBodyLost(t, http.StatusNotFound, func() error {
		_, err := e.under.UploadPart(ctx, &store.UploadPartInput{Bucket: e.bucket, Key: "k", UploadID: bogus, PartNumber: 1, Body: bytes.NewReader([]byte("x")), ContentLength: 1})
		return err
	})
	mustAnswer(t, "UploadPart to a missing upload", err, http.StatusNotFound, "NoSuchUpload")
	_, err = e.under.ListParts(ctx, &store.ListPartsInput{Bucket: e.bucket, Key: "k", UploadID: bogus})
	mustAnswer(t, "ListParts of a missing upload", err, 0, "")
	// Stores disagree on the answer (404 NoSuchUpload, 400 InvalidPart, RGW's 500); the writer
	// settles it with a HEAD, so the contract is an answer and nothing stored.
	_, err = e.under.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: e.bucket, Key: "k", UploadID: bogus,
		Parts: []store.CompletedPart{{PartNumber: 1, ETag: "0123456789abcdef0123456789abcdef"}}})
	mustAnswer(t, "Complete of a missing upload", err, 0, "")
	if e.exists(t, "k") {
		t.Error("Complete of a missing upload stored an object")
	}
	// nil (MinIO answers 204 to any upload id) or NoSuchUpload: both mean gone.
	err = e.under.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: "k", UploadID: bogus})
	if err != nil {
		mustAnswer(t, "Abort of a missing upload", err, http.StatusNotFound, "NoSuchUpload")
	}
}

func testCreateOnlyPut(t *testing.T, e env) {
	key := "create-only/put"
	first, second := randomBytes(t, 100), randomBytes(t, 200)
	in := func(data []byte) *store.PutObjectInput {
		return &store.PutObjectInput{Bucket: e.bucket, Key: key, Body: bytes.NewReader(data), ContentLength: int64(len(data)), IfNoneMatch: true}
	}
	if _, err := e.under.PutObject(ctxFor(t), in(first)); err != nil {
		if !e.caps.ConditionalPut && isStatus(err, http.StatusNotImplemented) {
			t.Skip("the backend has no conditional PUT: it answers 501 (Capabilities.ConditionalPut)")
		}
		t.Fatalf("first create-only PutObject: %v", err)
	}
	_, err := e.under.PutObject(ctxFor(t), in(second))
	if !e.caps.ConditionalPut && isStatus(err, http.StatusNotImplemented) {
		mustAnswer(t, "second create-only PutObject", err, http.StatusNotImplemented, "")
	} else {
		mustAnswer(t, "second create-only PutObject", err, http.StatusPreconditionFailed, "PreconditionFailed")
	}
	e.readBack(t, key, first)
}

// The adapter is shared by concurrent writers; -race checks it.
func testConcurrent(t *testing.T, e env) {
	const n = 8
	data := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		data[i] = randomBytes(t, 64<<10)
		wg.Go(func() {
			_, errs[i] = e.under.PutObject(ctxFor(t), &store.PutObjectInput{Bucket: e.bucket, Key: fmt.Sprintf("concurrent/%d", i),
				Body: bytes.NewReader(data[i]), ContentLength: int64(len(data[i])), Checksum: e.sum(data[i])})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent PutObject %d: %v", i, errs[i])
		}
		e.readBack(t, fmt.Sprintf("concurrent/%d", i), data[i])
	}
}
