package memstore

import (
	"bytes"
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
)

func quirky(r Rules) *Store { return New(WithBuckets(bkt), WithRules(r)) }

func head(t *testing.T, s *Store, key string) *store.HeadObjectOutput {
	t.Helper()
	h, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: key, ChecksumMode: true})
	if err != nil {
		t.Fatalf("HeadObject: %v", err)
	}
	return h
}

func TestRejectChecksumHeaders(t *testing.T) {
	s := quirky(Rules{RejectChecksumHeaders: true})
	data := []byte("hello")
	_, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: bytes.NewReader(data), ContentLength: 5, Checksum: sum(store.ChecksumCRC64NVME, data)})
	wantResp(t, err, 400, "InvalidArgument")
	_, err = s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k", ChecksumAlgorithm: store.ChecksumCRC64NVME})
	wantResp(t, err, 400, "InvalidArgument")
	m := newMP(t, s, "k", store.ChecksumNone, store.ChecksumTypeNone)
	_, err = s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: m.id, PartNumber: 1, Body: bytes.NewReader(data), ContentLength: 5, Checksum: sum(store.ChecksumCRC32C, data)})
	wantResp(t, err, 400, "InvalidArgument")
	m.upload(5)
	in := m.complete()
	in.FullObjectChecksum = sum(store.ChecksumCRC64NVME, m.all())
	_, err = s.CompleteMultipartUpload(ctx, in)
	wantResp(t, err, 400, "InvalidArgument")
	// Without headers everything works, and the store keeps its own CRC64NVME.
	in.FullObjectChecksum = store.Checksum{}
	if _, err := s.CompleteMultipartUpload(ctx, in); err != nil {
		t.Fatal(err)
	}
	if head(t, s, "k").Checksums.CRC64NVME == "" {
		t.Fatal("no default checksum kept")
	}
}

func TestIgnoreChecksumHeadersAndEmptyCommitETag(t *testing.T) {
	s := quirky(Rules{IgnoreChecksumHeaders: true, EmptyCommitETag: true})
	data := []byte("hello")
	wrong := sum(store.ChecksumCRC64NVME, []byte("other"))
	out, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "k", Body: bytes.NewReader(data), ContentLength: 5, Checksum: wrong})
	if err != nil {
		t.Fatalf("a wrong checksum header was not ignored: %v", err)
	}
	if out.ETag != "" || out.Checksums != (store.Checksums{}) {
		t.Fatalf("answer %+v, want no ETag and no checksum", out)
	}
	h := head(t, s, "k")
	if h.ETag != md5hex(data) || h.Checksums != (store.Checksums{}) {
		t.Fatalf("HEAD ETag %q checksums %+v, want the MD5 and none", h.ETag, h.Checksums)
	}
	m := newMP(t, s, "mp", store.ChecksumCRC64NVME, store.ChecksumTypeFullObject).upload(5<<20, 3)
	in := m.complete()
	for i := range in.Parts { // the answers echoed none: send what a client would
		in.Parts[i].Checksum = sum(store.ChecksumCRC64NVME, m.data[i])
	}
	in.FullObjectChecksum = wrong
	cout, err := s.CompleteMultipartUpload(ctx, in)
	if err != nil {
		t.Fatalf("Complete with ignored checksums: %v", err)
	}
	if cout.ETag != "" {
		t.Fatalf("Complete answered ETag %q, want none", cout.ETag)
	}
	if h := head(t, s, "mp"); h.ETag != etagOf(m.data) || h.Checksums != (store.Checksums{}) {
		t.Fatalf("HEAD ETag %q checksums %+v, want %s and none", h.ETag, h.Checksums, etagOf(m.data))
	}
}

func TestNoDefaultChecksumAndOpaqueETags(t *testing.T) {
	s := quirky(Rules{NoDefaultChecksum: true, OpaqueETags: true})
	data := []byte("hello")
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "none", Body: bytes.NewReader(data), ContentLength: 5}); err != nil {
		t.Fatal(err)
	}
	h := head(t, s, "none")
	if h.Checksums != (store.Checksums{}) || h.ETag == md5hex(data) || len(h.ETag) != 32 {
		t.Fatalf("HEAD %+v: want no checksum and an opaque 32-hex ETag", h)
	}
	// A checksum that was sent is kept.
	if _, err := s.PutObject(ctx, &store.PutObjectInput{Bucket: bkt, Key: "sent", Body: bytes.NewReader(data), ContentLength: 5, Checksum: sum(store.ChecksumCRC64NVME, data)}); err != nil {
		t.Fatal(err)
	}
	if head(t, s, "sent").Checksums.CRC64NVME == "" {
		t.Fatal("a sent checksum was not kept")
	}
	m := newMP(t, s, "mp", store.ChecksumNone, store.ChecksumTypeNone).upload(5<<20, 3)
	if _, err := s.CompleteMultipartUpload(ctx, m.complete()); err != nil {
		t.Fatal(err)
	}
	h = head(t, s, "mp")
	if h.Checksums != (store.Checksums{}) || h.ETag == etagOf(m.data) || !strings.HasSuffix(h.ETag, "-2") {
		t.Fatalf("HEAD %+v: want no checksum and an opaque ETag ending -2", h)
	}
}

// ListEveryAttempt lists each attempt of a re-sent part with its own size and ETag, the current
// one first; Complete takes the current one.
func TestListEveryAttempt(t *testing.T) {
	s := quirky(Rules{ListEveryAttempt: true, MinPartSize: -1})
	up, err := s.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: bkt, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	var etags []string
	for _, body := range []string{"first", "second!", "third"} {
		out, err := s.UploadPart(ctx, &store.UploadPartInput{Bucket: bkt, Key: "k", UploadID: up.UploadID, PartNumber: 1, Body: strings.NewReader(body), ContentLength: int64(len(body))})
		if err != nil {
			t.Fatal(err)
		}
		etags = append(etags, out.ETag)
	}
	list, err := s.ListParts(ctx, &store.ListPartsInput{Bucket: bkt, Key: "k", UploadID: up.UploadID})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.Parts {
		got = append(got, p.ETag+"/"+string(rune('0'+p.Size)))
	}
	want := []string{etags[2] + "/5", etags[0] + "/5", etags[1] + "/7"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if _, err := s.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: up.UploadID,
		Parts: []store.CompletedPart{{PartNumber: 1, ETag: etags[2]}}}); err != nil {
		t.Fatal(err)
	}
	if data, _ := s.Object(bkt, "k"); string(data) != "third" {
		t.Fatalf("object %q, want the current attempt", data)
	}
}

// A store lacking optional operations answers each with the status set, as s3rver does, and
// does nothing: the upload stays, and a HEAD without checksum mode still answers.
func TestLacksOptionalOperations(t *testing.T) {
	s := quirky(Rules{LacksListParts: 405, LacksListUploads: 501, LacksAbort: 405, LacksHeadChecksumMode: 501})
	m := newMP(t, s, "k", store.ChecksumNone, store.ChecksumTypeNone)
	m.upload(5)
	_, err := s.ListParts(ctx, &store.ListPartsInput{Bucket: bkt, Key: "k", UploadID: m.id})
	wantResp(t, err, 405, "MethodNotAllowed")
	_, err = s.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bkt})
	wantResp(t, err, 501, "NotImplemented")
	err = s.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bkt, Key: "k", UploadID: m.id})
	wantResp(t, err, 405, "MethodNotAllowed")
	if !store.Unsupported(err) {
		t.Fatalf("store.Unsupported(%v) is false", err)
	}
	if len(s.Uploads(bkt)) != 1 {
		t.Fatalf("uploads %v: the refused abort must leave the upload", s.Uploads(bkt))
	}
	if _, err := s.CompleteMultipartUpload(ctx, m.complete()); err != nil {
		t.Fatal(err)
	}
	_, err = s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k", ChecksumMode: true})
	wantResp(t, err, 501, "NotImplemented")
	if h, err := s.HeadObject(ctx, &store.HeadObjectInput{Bucket: bkt, Key: "k"}); err != nil || h.Size != 5 {
		t.Fatalf("plain HEAD: %+v, %v", h, err)
	}
}
