package storetest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
)

// Two parts of the minimum size and a 1-byte part: parts listed in order with the sizes and ETags
// UploadPart answered (one per page too), the upload listed while open and gone once completed,
// and the object the parts make.
func testMultipart(t *testing.T, e env) {
	ctx := ctxFor(t)
	key := "mpu/three-parts"
	parts := [][]byte{randomBytes(t, int(e.caps.minPart())), randomBytes(t, int(e.caps.minPart())), randomBytes(t, 1)}
	size := int64(len(parts[0]) + len(parts[1]) + 1)
	id, done := e.uploadParts(t, key, store.ChecksumNone, store.ChecksumTypeNone, parts...)

	for _, pageSize := range []int32{1, 0} {
		lp, err := e.under.ListParts(ctx, &store.ListPartsInput{Bucket: e.bucket, Key: key, UploadID: id, PageSize: pageSize})
		if err != nil {
			t.Fatalf("ListParts page size %d: %v", pageSize, err)
		}
		if len(lp.Parts) != len(parts) {
			t.Fatalf("ListParts page size %d: %d parts, want %d", pageSize, len(lp.Parts), len(parts))
		}
		for i, p := range lp.Parts {
			if p.PartNumber != int32(i+1) || p.Size != int64(len(parts[i])) || p.ETag != done[i].ETag { //nolint:gosec // 3 parts
				t.Errorf("ListParts page size %d: entry %d = {%d, %d bytes, %q}, want {%d, %d bytes, %q}", pageSize, i, p.PartNumber, p.Size, p.ETag, i+1, len(parts[i]), done[i].ETag)
			}
			if p.LastModified.IsZero() {
				t.Errorf("ListParts: part %d has no LastModified", p.PartNumber)
			}
		}
	}
	lu, err := e.under.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: e.bucket, Prefix: key})
	if err != nil {
		t.Fatalf("ListMultipartUploads %s: %v", key, err)
	}
	exactlyOnce(t, "ListMultipartUploads of the open upload", keyedUploads(lu), []string{key + "@" + id})

	out, err := e.under.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: e.bucket, Key: key, UploadID: id, Parts: done, ObjectSize: size})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	e.readBack(t, key, bytes.Join(parts, nil))
	head, err := e.under.HeadObject(ctx, &store.HeadObjectInput{Bucket: e.bucket, Key: key})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	if head.Size != size {
		t.Errorf("HeadObject size %d, want %d", head.Size, size)
	}
	e.checkETag(t, "HeadObject of the completed object", head.ETag, multipartETag(parts...))
	// A Complete answer may carry no ETag (Ceph RGW sends <ETag></ETag>); one it carries is the
	// object's.
	if out.ETag != "" && out.ETag != head.ETag {
		t.Errorf("Complete ETag %q, HEAD says %q", out.ETag, head.ETag)
	}
	if left := e.uploadsUnder(t, e.ref, key); len(left) != 0 {
		t.Errorf("uploads left after Complete: %v", left)
	}
}

// A FULL_OBJECT CRC64NVME upload: the store combines the part CRCs and must end up with the CRC
// of the whole object, equal to one computed locally. A backend without checksums may refuse the
// upload; if it takes it, the object is the parts and any checksum it reports is the one sent.
func testFullObjectChecksum(t *testing.T, e env) {
	ctx := ctxFor(t)
	key := "mpu/full-object-crc64nvme"
	parts := [][]byte{randomBytes(t, int(e.caps.minPart())), randomBytes(t, 12345)}
	whole := bytes.Join(parts, nil)
	sum := crc64NVME(whole)
	if !e.caps.Checksums {
		_, err := e.under.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: e.bucket, Key: key + "-probe",
			ChecksumAlgorithm: store.ChecksumCRC64NVME, ChecksumType: store.ChecksumTypeFullObject})
		if err != nil {
			mustAnswer(t, "CreateMultipartUpload with CRC64NVME FULL_OBJECT on a backend without checksums", err, 0, "")
			return
		}
	}
	id, done := e.uploadParts(t, key, store.ChecksumCRC64NVME, store.ChecksumTypeFullObject, parts...)

	lp, err := e.under.ListParts(ctx, &store.ListPartsInput{Bucket: e.bucket, Key: key, UploadID: id})
	if err != nil {
		t.Fatalf("ListParts: %v", err)
	}
	for i, p := range lp.Parts {
		e.reported(t, fmt.Sprintf("ListParts part %d CRC64NVME", p.PartNumber), p.Checksums.CRC64NVME, done[i].Checksum.Value)
	}
	out, err := e.under.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{
		Bucket: e.bucket, Key: key, UploadID: id, Parts: done,
		FullObjectChecksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum},
		ChecksumType:       store.ChecksumTypeFullObject,
		ObjectSize:         int64(len(whole)),
	})
	if err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	// MinIO's Complete answer carries the checksum without its type; HEAD reports the type.
	e.reported(t, "Complete", out.Checksums.CRC64NVME, sum)
	if out.Checksums.Type != store.ChecksumTypeFullObject && out.Checksums.Type != "" {
		t.Errorf("Complete checksum type %q, want %s (or none)", out.Checksums.Type, store.ChecksumTypeFullObject)
	}
	e.readBack(t, key, whole)
	for name, st := range map[string]store.Store{"the store under test": e.under, "the reference store": e.ref} {
		head, err := st.HeadObject(ctx, &store.HeadObjectInput{Bucket: e.bucket, Key: key, ChecksumMode: true})
		if err != nil {
			t.Fatalf("HeadObject through %s: %v", name, err)
		}
		e.reported(t, "HeadObject through "+name, head.Checksums.CRC64NVME, sum)
		if head.Size != int64(len(whole)) || (head.Checksums.CRC64NVME != "" && head.Checksums.Type != store.ChecksumTypeFullObject) {
			t.Errorf("HeadObject through %s: size %d checksums %+v, want %d bytes, type %s", name, head.Size, head.Checksums, len(whole), store.ChecksumTypeFullObject)
		}
	}
}

// A full-object checksum that does not match what the parts add up to fails the Complete (a
// backend without checksums may instead commit the parts as sent).
func testFullObjectBadDigest(t *testing.T, e env) {
	key := "mpu/full-object-bad"
	parts := [][]byte{randomBytes(t, int(e.caps.minPart())), randomBytes(t, 10)}
	alg, typ := store.ChecksumCRC64NVME, store.ChecksumTypeFullObject
	id, done := e.uploadParts(t, key, alg, typ, parts...)
	_, err := e.under.CompleteMultipartUpload(ctxFor(t), &store.CompleteMultipartUploadInput{
		Bucket: e.bucket, Key: key, UploadID: id, Parts: done,
		FullObjectChecksum: checksumOf(alg, []byte("something else")), ChecksumType: typ,
	})
	if err == nil && !e.caps.Checksums {
		e.readBack(t, key, bytes.Join(parts, nil))
		return
	}
	if re := responseError(t, "Complete with a wrong full-object CRC64NVME", err, http.StatusBadRequest, ""); re.Code != "BadDigest" && re.Code != "XAmzContentChecksumMismatch" {
		t.Errorf("Complete with a wrong full-object CRC64NVME: code %q, want BadDigest or XAmzContentChecksumMismatch", re.Code)
	}
	if e.exists(t, key) {
		t.Error("an object was completed despite a wrong full-object checksum")
	}
}

// Create-only Complete: a second upload of the key is refused and the first object stays; a
// Complete sent again (its answer lost, say) does not report a different object.
func testCreateOnlyComplete(t *testing.T, e env) {
	key := "create-only/complete"
	start := func(data []byte) *store.CompleteMultipartUploadInput {
		id, done := e.uploadParts(t, key, store.ChecksumNone, store.ChecksumTypeNone, data)
		return &store.CompleteMultipartUploadInput{Bucket: e.bucket, Key: key, UploadID: id, Parts: done, IfNoneMatch: true}
	}
	first, second := randomBytes(t, 1000), randomBytes(t, 2000)
	firstIn := start(first)
	out, err := e.under.CompleteMultipartUpload(ctxFor(t), firstIn)
	if err != nil {
		if !e.caps.ConditionalComplete && isStatus(err, http.StatusNotImplemented) {
			t.Skip("the backend has no conditional Complete: it answers 501 (Capabilities.ConditionalComplete)")
		}
		t.Fatalf("first create-only Complete: %v", err)
	}
	_, err = e.under.CompleteMultipartUpload(ctxFor(t), start(second))
	if err == nil && !e.caps.ConditionalComplete {
		// The header was ignored (Ceph RGW 16.2): the second upload replaced the first, and
		// the answer says so; the writer checks by HEAD.
		e.readBack(t, key, second)
		return
	}
	mustAnswer(t, "second create-only Complete", err, http.StatusPreconditionFailed, "PreconditionFailed")
	e.readBack(t, key, first)

	// AWS and Versity S3 Gateway replay the success; MinIO checks the precondition first (412),
	// others say the upload is gone (404).
	again, err := e.under.CompleteMultipartUpload(ctxFor(t), firstIn)
	if err == nil {
		if again.ETag != out.ETag && again.ETag != "" && out.ETag != "" {
			t.Errorf("replayed Complete: ETag %q, want the first answer's %q", again.ETag, out.ETag)
		}
	} else if re := responseError(t, "replayed Complete", err, 0, ""); re.StatusCode != http.StatusNotFound && re.StatusCode != http.StatusPreconditionFailed {
		t.Errorf("replayed Complete: HTTP %d %s, want success, 404 or 412", re.StatusCode, re.Code)
	}
	e.readBack(t, key, first)
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
	e.readBack(t, "resent", append(again, last...))
}

// The minimum part size is checked at Complete; the upload stays open and can be aborted.
func testEntityTooSmall(t *testing.T, e env) {
	key := "mpu/too-small"
	id, done := e.uploadParts(t, key, store.ChecksumNone, store.ChecksumTypeNone, randomBytes(t, 1024), randomBytes(t, 1024))
	_, err := e.under.CompleteMultipartUpload(ctxFor(t), &store.CompleteMultipartUploadInput{Bucket: e.bucket, Key: key, UploadID: id, Parts: done})
	mustAnswer(t, "Complete with a 1 KiB first part", err, http.StatusBadRequest, "EntityTooSmall")
	if e.exists(t, key) {
		t.Error("an object was completed from a too-small part")
	}
	if err := e.under.AbortMultipartUpload(ctxFor(t), &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: key, UploadID: id}); err != nil {
		t.Fatalf("Abort after EntityTooSmall: %v", err)
	}
}

// Uploads are listed (all of a bucket, those of one key, page by page where the store pages),
// and after Abort the upload is gone: unlisted (through both stores), ListParts fails, a second
// Abort says gone, and no object was made.
func testAbortAndList(t *testing.T, e env) {
	ctx := ctxFor(t)
	var ids []string
	for _, k := range []string{"abort/a", "abort/b", "abort/b"} {
		id, _ := e.uploadParts(t, k, store.ChecksumNone, store.ChecksumTypeNone, []byte("part"))
		ids = append(ids, k+"@"+id)
	}
	exactlyOnce(t, "ListMultipartUploads of the bucket", e.uploadsUnder(t, e.under, "abort/"), ids)

	lu, err := e.under.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: e.bucket, Prefix: "abort/b", PageSize: 1})
	switch {
	case err != nil && !e.caps.PagedUploadListing:
		mustAnswer(t, "ListMultipartUploads abort/b page size 1 on a store that cannot page", err, 0, "")
		if lu, err = e.under.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: e.bucket, Prefix: "abort/b"}); err != nil {
			t.Fatalf("ListMultipartUploads abort/b: %v", err)
		}
	case err != nil:
		t.Fatalf("ListMultipartUploads abort/b page size 1: %v", err)
	}
	exactlyOnce(t, "ListMultipartUploads abort/b", keyedUploads(lu), ids[1:])

	for _, ku := range ids {
		k, id, _ := strings.Cut(ku, "@")
		if err := e.under.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: k, UploadID: id}); err != nil {
			t.Fatalf("AbortMultipartUpload %s: %v", id, err)
		}
	}
	for name, st := range map[string]store.Store{"the store under test": e.under, "the reference store": e.ref} {
		if left := e.uploadsUnder(t, st, "abort/"); len(left) != 0 {
			t.Errorf("%s lists %v after Abort, want none", name, left)
		}
	}
	k, id, _ := strings.Cut(ids[0], "@")
	_, err = e.under.ListParts(ctx, &store.ListPartsInput{Bucket: e.bucket, Key: k, UploadID: id})
	// NoSuchUpload on S3; Ceph RGW 16.2 says NoSuchKey. The writer reads either as gone.
	if re := responseError(t, "ListParts of an aborted upload", err, http.StatusNotFound, ""); re.Code != "NoSuchUpload" && re.Code != "NoSuchKey" {
		t.Errorf("ListParts of an aborted upload: code %q, want NoSuchUpload (or NoSuchKey)", re.Code)
	}
	err = e.under.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: e.bucket, Key: k, UploadID: id})
	if err != nil {
		mustAnswer(t, "a second Abort", err, http.StatusNotFound, "NoSuchUpload")
	}
	if e.exists(t, k) {
		t.Error("an aborted upload left an object")
	}
}

// Listings longer than a page: five uploads of one key and five parts of one upload, listed two
// per page: every upload and part exactly once, in order. Over HTTP (TransportHarness) the
// request count shows the pages were really asked for one by one. A store that cannot continue
// an upload listing must fail the paged listing, not return part of it, and list everything in
// one page without a page size.
func testListPaging(t *testing.T, e env) {
	ctx := ctxFor(t)
	// One key: MinIO lists by prefix only for a whole key.
	key := "paging/key"
	const uploads, parts, pageSize = 5, 5, 2
	const pages = (uploads + pageSize - 1) / pageSize
	var ids, partETags []string
	var partsUpload string
	for i := range uploads {
		var bodies [][]byte
		if i == 0 {
			for p := range parts {
				bodies = append(bodies, fmt.Appendf(nil, "part %d", p+1))
			}
		}
		id, done := e.uploadParts(t, key, store.ChecksumNone, store.ChecksumTypeNone, bodies...)
		if i == 0 {
			partsUpload = id
			for _, d := range done {
				partETags = append(partETags, d.ETag)
			}
		}
		ids = append(ids, key+"@"+id)
	}

	st, counts := e.under, (*listRequests)(nil)
	if th, ok := e.h.(TransportHarness); ok {
		counts = &listRequests{next: http.DefaultTransport}
		st = th.MakeStoreWithTransport(t, counts)
	}
	lu, err := st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: e.bucket, Prefix: key, PageSize: pageSize})
	switch {
	case err != nil && !e.caps.PagedUploadListing:
		mustAnswer(t, "ListMultipartUploads page by page on a store that cannot page", err, 0, "")
		counts.reset()
		if lu, err = st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: e.bucket, Prefix: key}); err != nil {
			t.Fatalf("ListMultipartUploads in one page: %v", err)
		}
		exactlyOnce(t, "ListMultipartUploads (one page)", keyedUploads(lu), ids)
		counts.check(t, "ListMultipartUploads without a page size", true, 1)
	case err != nil:
		t.Fatalf("ListMultipartUploads page size %d: %v", pageSize, err)
	default:
		exactlyOnce(t, "ListMultipartUploads", keyedUploads(lu), ids)
		counts.check(t, fmt.Sprintf("ListMultipartUploads page size %d over %d uploads", pageSize, uploads), true, pages)
	}

	lp, err := st.ListParts(ctx, &store.ListPartsInput{Bucket: e.bucket, Key: key, UploadID: partsUpload, PageSize: pageSize})
	if err != nil {
		t.Fatalf("ListParts page size %d: %v", pageSize, err)
	}
	var got []string
	for _, p := range lp.Parts {
		got = append(got, fmt.Sprintf("%d %s", p.PartNumber, p.ETag))
	}
	var want []string
	for i, etag := range partETags {
		want = append(want, fmt.Sprintf("%d %s", i+1, etag))
	}
	if !slices.Equal(got, want) {
		t.Errorf("ListParts page size %d: %v, want %v", pageSize, got, want)
	}
	counts.check(t, fmt.Sprintf("ListParts page size %d over %d parts", pageSize, parts), false, pages)
}
