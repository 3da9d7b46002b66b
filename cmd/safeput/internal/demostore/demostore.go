// Package demostore is the store `safeput demo` writes to: an in-memory store.Store with S3's
// semantics for one bucket (Content-MD5 and x-amz-checksum-* verification, conditional creates,
// multipart uploads with the checks S3 makes at Complete, ETags and the checksums HEAD reports),
// and scripted faults that replay what stores do in the field (Rule).
//
// It is the CLI's own, not the test support under storetest (memstore, faulty), which the
// release build must not link and which, outside the library's compatibility promise, may change
// in any release of it. Its tests hold it to the same conformance suite as the SDK adapters.
//
// Every error is a *store.ResponseError carrying Op, StatusCode, Code, Message and a generated
// RequestID, except invalid input (store.ErrInvalidInput), a context that was already done and a
// failing body reader, which are returned wrapped as a real adapter would. Objects are kept
// whole in memory: it is meant for the demo's few megabytes.
package demostore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/safeput/safeput/store"
)

// defaultMinPartSize is S3's minimum size of a non-final part, 5 MiB.
const defaultMinPartSize = 5 << 20

// Store is the in-memory store of one bucket, with its scripted faults. It is safe for concurrent
// use; make one with New.
type Store struct {
	bucket  string
	minPart int64

	reqSeq atomic.Uint64 // request ids: only ever increases, needs no lock

	mu        sync.Mutex
	objects   map[string]*object
	uploads   map[string]*upload // by upload id
	uploadSeq uint64
	counts    map[string]int // requests that reached the store, by operation
	rules     []*ruleState
	injected  []Injection
}

var _ store.Store = (*Store)(nil)

// object is a committed object. Its data is never modified after commit (a write replaces the
// whole object), so readers share it.
type object struct {
	data        []byte
	etag        string
	contentType string
	metadata    map[string]string
	modified    time.Time
	checksums   store.Checksums
}

type upload struct {
	key, id     string
	initiated   time.Time
	contentType string
	metadata    map[string]string
	alg         store.ChecksumAlgorithm
	typ         store.ChecksumType
	parts       map[int32]*part
}

type part struct {
	data     []byte
	etag     string
	md5      []byte
	checksum string // base64, under alg
	alg      store.ChecksumAlgorithm
	modified time.Time
}

// New returns an empty store of bucket whose Complete refuses a non-final part under minPartSize
// (0: S3's 5 MiB), faulting the calls rules pick.
func New(bucket string, minPartSize int64, rules ...Rule) *Store {
	s := &Store{bucket: bucket, minPart: cmp.Or(minPartSize, defaultMinPartSize),
		objects: map[string]*object{}, uploads: map[string]*upload{}, counts: map[string]int{}}
	for _, r := range rules {
		s.rules = append(s.rules, &ruleState{Rule: r})
	}
	return s
}

// Object returns a copy of key's bytes and whether it exists.
func (s *Store) Object(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	if !ok {
		return nil, false
	}
	return bytes.Clone(o.data), true
}

// Uploads returns the incomplete multipart uploads, sorted by key, then initiation time.
func (s *Store) Uploads() []store.Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listUploads("")
}

// Requests returns how many requests of operation op ("PutObject", "UploadPart", ...) the store
// acted on: not those a fault answered in its place, nor those refused as invalid input or
// with a context already done.
func (s *Store) Requests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// start is what every operation does after validating its input: refuse a done context (nothing
// would have been sent), give the request an id, and decide whether a rule faults it (part is
// the part number of an UploadPart, 0 otherwise). A fault that answers in the store's place is
// returned as the error; Truncate is returned for the operation to apply. A request without a
// body is written out once sent (store.ReportRequestWritten); PutObject and UploadPart report
// theirs once the body is read.
func (s *Store) start(ctx context.Context, op, key string, part int32) (string, Fault, error) {
	if ctx != nil && ctx.Err() != nil {
		return "", 0, fmt.Errorf("%s %s/%s: %w", op, s.bucket, key, ctx.Err())
	}
	rid := fmt.Sprintf("DEMO%012X", s.reqSeq.Add(1))
	s.mu.Lock()
	f := s.faultLocked(op, key, part)
	err := f.answer(op, rid)
	if err == nil {
		s.counts[op]++
	}
	s.mu.Unlock()
	if err != nil {
		return "", f, err
	}
	if op != "PutObject" && op != "UploadPart" {
		store.ReportRequestWritten(ctx)
	}
	return rid, f, nil
}

func respErr(op, rid string, status int, code, msg string) *store.ResponseError {
	return &store.ResponseError{Op: op, StatusCode: status, Code: code, Message: msg, RequestID: rid}
}

// Messages as S3 words them, so the demo's errors read like the real thing.
const (
	msgNoSuchBucket = "The specified bucket does not exist"
	msgNoSuchKey    = "The specified key does not exist."
	msgNoSuchUpload = "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."
	msgPrecondition = "At least one of the pre-conditions you specified did not hold"
	msgInvalidPart  = "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not have matched the part's entity tag."
)

func (s *Store) checkBucket(op, rid, bucket string) error {
	if bucket != s.bucket {
		return respErr(op, rid, 404, "NoSuchBucket", msgNoSuchBucket)
	}
	return nil
}

// uploadLocked finds an incomplete upload of bucket/key. An id of another key is NoSuchUpload,
// as on S3. s.mu is held.
func (s *Store) uploadLocked(op, rid, bucket, key, id string) (*upload, error) {
	if err := s.checkBucket(op, rid, bucket); err != nil {
		return nil, err
	}
	u, ok := s.uploads[id]
	if !ok || u.key != key {
		return nil, respErr(op, rid, 404, "NoSuchUpload", msgNoSuchUpload)
	}
	return u, nil
}

// conditionLocked applies If-None-Match: * to key. s.mu is held.
func (s *Store) conditionLocked(op, rid, key string, ifNoneMatch bool) error {
	if _, exists := s.objects[key]; ifNoneMatch && exists {
		return respErr(op, rid, 412, "PreconditionFailed", msgPrecondition)
	}
	return nil
}

// readBody reads exactly n bytes from r. Fewer is IncompleteBody, as when a client sends less
// than its Content-Length; a reader error is the client's failure, returned wrapped like a
// transport error because no answer would have come back.
func readBody(op, rid, what string, r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	// Grow by at most 64 MiB up front: ContentLength is the caller's claim, not a promise.
	buf.Grow(int(min(n, 64<<20)))
	if _, err := buf.ReadFrom(io.LimitReader(r, n)); err != nil {
		return nil, fmt.Errorf("%s %s: reading body: %w", op, what, err)
	}
	if int64(buf.Len()) < n {
		return nil, respErr(op, rid, 400, "IncompleteBody",
			"You did not provide the number of bytes specified by the Content-Length HTTP header")
	}
	return buf.Bytes(), nil
}

// checkIntegrity verifies Content-MD5 and the x-amz-checksum header against data, whose MD5 is sum.
func checkIntegrity(op, rid, contentMD5 string, c store.Checksum, data, sum []byte) error {
	if contentMD5 != "" {
		if want, ok := decode(contentMD5, len(sum)); !ok {
			return respErr(op, rid, 400, "InvalidDigest", "The Content-MD5 you specified is not valid.")
		} else if !bytes.Equal(want, sum) {
			return respErr(op, rid, 400, "BadDigest", "The Content-MD5 you specified did not match what we received.")
		}
	}
	if c.IsZero() {
		return nil
	}
	want, ok := decode(c.Value, digestLen(c.Algorithm))
	if !ok {
		return respErr(op, rid, 400, "InvalidRequest",
			fmt.Sprintf("Value for x-amz-checksum-%s header is invalid.", strings.ToLower(string(c.Algorithm))))
	}
	if !bytes.Equal(want, digest(c.Algorithm, data)) {
		return badDigest(op, rid, c.Algorithm)
	}
	return nil
}

func badDigest(op, rid string, alg store.ChecksumAlgorithm) error {
	return respErr(op, rid, 400, "BadDigest", fmt.Sprintf("The %s you specified did not match the calculated checksum.", alg))
}

func checksumsOf(alg store.ChecksumAlgorithm, value string, typ store.ChecksumType) store.Checksums {
	c := store.Checksums{Type: typ}
	c.Set(alg, value)
	return c
}

// crc64Of is the checksum the store keeps for data sent without one, as AWS does.
func crc64Of(data []byte) store.Checksums {
	return checksumsOf(store.ChecksumCRC64NVME, b64(digest(store.ChecksumCRC64NVME, data)), store.ChecksumTypeFullObject)
}

// PutObject implements store.Store. Without a checksum the store computes and keeps a
// CRC64NVME, as AWS does for uploads that carry none, and echoes it.
func (s *Store) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	const op = "PutObject"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, fault, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return nil, err
	}
	if err := s.checkBucket(op, rid, in.Bucket); err != nil {
		return nil, err
	}
	data, err := readBody(op, rid, in.Bucket+"/"+in.Key, in.Body, in.ContentLength)
	if err != nil {
		return nil, err
	}
	store.ReportRequestWritten(ctx)
	checksum, contentMD5 := in.Checksum, in.ContentMD5
	if fault == Truncate {
		// What a store that lost the end of the body and answers 200 keeps: the half that came,
		// with the ETag of what it kept; its answer echoes the checksum it was sent.
		data, checksum, contentMD5 = data[:len(data)/2], recomputed(checksum, data[:len(data)/2]), ""
	}
	sum := md5Of(data)
	if err := checkIntegrity(op, rid, contentMD5, checksum, data, sum); err != nil {
		return nil, err
	}
	sums := crc64Of(data)
	if !checksum.IsZero() {
		sums = checksumsOf(checksum.Algorithm, checksum.Value, store.ChecksumTypeFullObject)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.conditionLocked(op, rid, in.Key, in.IfNoneMatch); err != nil {
		return nil, err
	}
	etag := hexOf(sum)
	s.objects[in.Key] = &object{data: data, etag: etag, contentType: in.ContentType,
		metadata: maps.Clone(in.Metadata), modified: time.Now().UTC(), checksums: sums}
	echo := sums
	if fault == Truncate && !in.Checksum.IsZero() {
		echo = checksumsOf(in.Checksum.Algorithm, in.Checksum.Value, store.ChecksumTypeFullObject)
	}
	return &store.PutObjectOutput{ETag: etag, Checksums: echo, RequestID: rid}, nil
}

// CreateMultipartUpload implements store.Store. An algorithm without a type gets S3's default
// type (FULL_OBJECT for CRC64NVME, COMPOSITE otherwise); combinations S3 refuses are 400
// InvalidRequest.
func (s *Store) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	const op = "CreateMultipartUpload"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, _, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return nil, err
	}
	if err := s.checkBucket(op, rid, in.Bucket); err != nil {
		return nil, err
	}
	alg, typ := in.ChecksumAlgorithm, in.ChecksumType
	if alg != store.ChecksumNone && typ == store.ChecksumTypeNone {
		typ = store.ChecksumTypeComposite
		if alg == store.ChecksumCRC64NVME {
			typ = store.ChecksumTypeFullObject
		}
	}
	switch {
	case alg == store.ChecksumCRC64NVME && typ == store.ChecksumTypeComposite:
		return nil, respErr(op, rid, 400, "InvalidRequest", "The COMPOSITE checksum type cannot be used with the CRC64NVME checksum algorithm.")
	case typ == store.ChecksumTypeFullObject && !isCRC(alg):
		return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf("The FULL_OBJECT checksum type cannot be used with the %s checksum algorithm.", alg))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploadSeq++
	id := fmt.Sprintf("demo-upload-%08d", s.uploadSeq)
	s.uploads[id] = &upload{key: in.Key, id: id, initiated: time.Now().UTC(), contentType: in.ContentType,
		metadata: maps.Clone(in.Metadata), alg: alg, typ: typ, parts: map[int32]*part{}}
	return &store.CreateMultipartUploadOutput{UploadID: id, RequestID: rid}, nil
}

// UploadPart implements store.Store. When the upload was created with a checksum algorithm,
// every part must carry that algorithm's checksum (400 InvalidRequest otherwise), as on AWS.
func (s *Store) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	const op = "UploadPart"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, fault, err := s.start(ctx, op, in.Key, in.PartNumber)
	if err != nil {
		return nil, err
	}
	// Look the upload up before reading the body, as S3 answers NoSuchUpload without it.
	s.mu.Lock()
	_, err = s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	data, err := readBody(op, rid, fmt.Sprintf("%s/%s part %d", in.Bucket, in.Key, in.PartNumber), in.Body, in.ContentLength)
	if err != nil {
		return nil, err
	}
	store.ReportRequestWritten(ctx)
	checksum, contentMD5 := in.Checksum, in.ContentMD5
	if fault == Truncate {
		data, checksum, contentMD5 = data[:len(data)/2], recomputed(checksum, data[:len(data)/2]), ""
	}
	sum := md5Of(data)
	if err := checkIntegrity(op, rid, contentMD5, checksum, data, sum); err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// Again under the lock: the upload may have been aborted or completed while the body was read.
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return nil, err
	}
	if u.alg != store.ChecksumNone && checksum.Algorithm != u.alg {
		got := "null"
		if checksum.Algorithm != store.ChecksumNone {
			got = strings.ToLower(string(checksum.Algorithm))
		}
		return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
			"Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s", strings.ToLower(string(u.alg)), got))
	}
	etag := hexOf(sum)
	u.parts[in.PartNumber] = &part{data: data, etag: etag, md5: sum, checksum: checksum.Value,
		alg: checksum.Algorithm, modified: time.Now().UTC()}
	// The echo is of the checksum sent, whatever was kept (Truncate).
	return &store.UploadPartOutput{ETag: etag, Checksums: checksumsOf(in.Checksum.Algorithm, in.Checksum.Value, ""), RequestID: rid}, nil
}

// ListParts implements store.Store: every part, in part-number order. PageSize is accepted and
// ignored, since there is no wire to page over.
func (s *Store) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	const op = "ListParts"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, _, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return nil, err
	}
	out := &store.ListPartsOutput{Parts: make([]store.Part, 0, len(u.parts)), RequestID: rid}
	for _, n := range slices.Sorted(maps.Keys(u.parts)) {
		p := u.parts[n]
		out.Parts = append(out.Parts, store.Part{PartNumber: n, Size: int64(len(p.data)), ETag: p.etag,
			Checksums: checksumsOf(p.alg, p.checksum, ""), LastModified: p.modified})
	}
	return out, nil
}

// CompleteMultipartUpload implements store.Store, with S3's checks in S3's order: the upload,
// the precondition, the part list, part sizes, the object size, then the checksum. A failed
// Complete leaves the upload as it was, so it can be retried or aborted; a completed upload is
// gone, so completing it again is 404 NoSuchUpload, as on MinIO.
func (s *Store) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	const op = "CompleteMultipartUpload"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, _, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return nil, err
	}
	if err := s.conditionLocked(op, rid, in.Key, in.IfNoneMatch); err != nil {
		return nil, err
	}
	if in.ChecksumType != store.ChecksumTypeNone && u.typ != store.ChecksumTypeNone && in.ChecksumType != u.typ {
		return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
			"The upload was created using the %s checksum mode. The complete request must use the same checksum mode.", u.typ))
	}
	parts := make([]*part, len(in.Parts))
	for i, cp := range in.Parts {
		p, ok := u.parts[cp.PartNumber]
		if !ok || strings.Trim(cp.ETag, `"`) != p.etag {
			return nil, respErr(op, rid, 400, "InvalidPart", msgInvalidPart)
		}
		if u.typ == store.ChecksumTypeComposite && cp.Checksum.IsZero() {
			return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
				"The upload was created using a %s checksum. The complete request must include the checksum for each part. It was missing for part %d in the request.",
				strings.ToLower(string(u.alg)), cp.PartNumber))
		}
		if !cp.Checksum.IsZero() && (cp.Checksum.Algorithm != p.alg || cp.Checksum.Value != p.checksum) {
			return nil, respErr(op, rid, 400, "InvalidPart", msgInvalidPart)
		}
		parts[i] = p
	}
	var total int64
	for i, p := range parts {
		total += int64(len(p.data))
		if i < len(parts)-1 && int64(len(p.data)) < s.minPart {
			return nil, respErr(op, rid, 400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
		}
	}
	if in.ObjectSize > 0 && in.ObjectSize != total {
		return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
			"The provided 'x-amz-mp-object-size' header value %d does not match the size of the uploaded parts, %d.", in.ObjectSize, total))
	}
	data := make([]byte, 0, total)
	var md5s []byte
	for _, p := range parts {
		data = append(data, p.data...)
		md5s = append(md5s, p.md5...)
	}
	sums, err := completeChecksum(op, rid, u, in.FullObjectChecksum, parts, data)
	if err != nil {
		return nil, err
	}
	etag := hexOf(md5Of(md5s)) + "-" + strconv.Itoa(len(parts))
	s.objects[in.Key] = &object{data: data, etag: etag, contentType: u.contentType, metadata: u.metadata,
		modified: time.Now().UTC(), checksums: sums}
	delete(s.uploads, u.id)
	return &store.CompleteMultipartUploadOutput{ETag: etag, Checksums: sums, RequestID: rid}, nil
}

// completeChecksum returns the object's stored checksum after verifying the one Complete sent.
func completeChecksum(op, rid string, u *upload, sent store.Checksum, parts []*part, data []byte) (store.Checksums, error) {
	switch u.typ {
	case store.ChecksumTypeComposite:
		var raw []byte
		for _, p := range parts {
			d, ok := decode(p.checksum, digestLen(u.alg))
			if !ok {
				return store.Checksums{}, respErr(op, rid, 400, "InvalidPart", msgInvalidPart)
			}
			raw = append(raw, d...)
		}
		bare := b64(digest(u.alg, raw))
		value := bare + "-" + strconv.Itoa(len(parts))
		if !sent.IsZero() && (sent.Algorithm != u.alg || (sent.Value != bare && sent.Value != value)) {
			return store.Checksums{}, badDigest(op, rid, u.alg)
		}
		return checksumsOf(u.alg, value, store.ChecksumTypeComposite), nil
	case store.ChecksumTypeFullObject:
		if !sent.IsZero() && sent.Algorithm != u.alg {
			return store.Checksums{}, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
				"The upload was created using a %s checksum; the complete request sent a %s checksum.", u.alg, sent.Algorithm))
		}
		return fullObject(op, rid, u.alg, sent, data)
	}
	// An upload created without an algorithm: verify a CRC if one was sent, else keep a
	// CRC64NVME, as AWS does for objects uploaded without a checksum.
	if sent.IsZero() {
		return crc64Of(data), nil
	}
	if !isCRC(sent.Algorithm) {
		return store.Checksums{}, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
			"The FULL_OBJECT checksum type cannot be used with the %s checksum algorithm.", sent.Algorithm))
	}
	return fullObject(op, rid, sent.Algorithm, sent, data)
}

func fullObject(op, rid string, alg store.ChecksumAlgorithm, sent store.Checksum, data []byte) (store.Checksums, error) {
	got := b64(digest(alg, data))
	if !sent.IsZero() {
		want, ok := decode(sent.Value, digestLen(alg))
		if !ok {
			return store.Checksums{}, respErr(op, rid, 400, "InvalidRequest",
				fmt.Sprintf("Value for x-amz-checksum-%s header is invalid.", strings.ToLower(string(alg))))
		}
		if b64(want) != got {
			return store.Checksums{}, badDigest(op, rid, alg)
		}
	}
	return checksumsOf(alg, got, store.ChecksumTypeFullObject), nil
}

// AbortMultipartUpload implements store.Store. An unknown, aborted or completed upload is 404
// NoSuchUpload.
func (s *Store) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	const op = "AbortMultipartUpload"
	if err := store.Validate(in); err != nil {
		return err
	}
	rid, _, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return err
	}
	delete(s.uploads, u.id)
	return nil
}

// objectLocked finds bucket/key or returns NoSuchBucket / NoSuchKey. s.mu is held.
func (s *Store) objectLocked(op, rid, bucket, key string) (*object, error) {
	if err := s.checkBucket(op, rid, bucket); err != nil {
		return nil, err
	}
	o, ok := s.objects[key]
	if !ok {
		return nil, respErr(op, rid, 404, "NoSuchKey", msgNoSuchKey)
	}
	return o, nil
}

// HeadObject implements store.Store. Checksums (with their Type) are returned only with
// ChecksumMode, as on S3.
func (s *Store) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	const op = "HeadObject"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, _, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.objectLocked(op, rid, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	out := &store.HeadObjectOutput{Size: int64(len(o.data)), ETag: o.etag, ContentType: o.contentType,
		Metadata: maps.Clone(o.metadata), LastModified: o.modified, RequestID: rid}
	if in.ChecksumMode {
		out.Checksums = o.checksums
	}
	return out, nil
}

// GetObject implements store.Store. A range starting at or past the end of a non-empty object
// is 416 InvalidRange; a range running past the end is cut at the end, as on S3.
func (s *Store) GetObject(ctx context.Context, in *store.GetObjectInput) (*store.GetObjectOutput, error) {
	const op = "GetObject"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, _, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.objectLocked(op, rid, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	size := int64(len(o.data))
	if in.Offset > 0 && in.Offset >= size {
		return nil, respErr(op, rid, 416, "InvalidRange", "The requested range is not satisfiable")
	}
	end := size
	if in.Length > 0 && in.Length < size-in.Offset {
		end = in.Offset + in.Length
	}
	body := o.data[in.Offset:end]
	return &store.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body)), Size: int64(len(body)), ETag: o.etag, RequestID: rid}, nil
}

// DeleteObject implements store.Store. A missing key is not an error; a missing bucket is.
func (s *Store) DeleteObject(ctx context.Context, in *store.DeleteObjectInput) error {
	const op = "DeleteObject"
	if err := store.Validate(in); err != nil {
		return err
	}
	rid, _, err := s.start(ctx, op, in.Key, 0)
	if err != nil {
		return err
	}
	if err := s.checkBucket(op, rid, in.Bucket); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, in.Key)
	return nil
}

// ListMultipartUploads implements store.Store: every incomplete upload whose key starts with
// Prefix, sorted by key, then initiation time. PageSize is accepted and ignored.
func (s *Store) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	const op = "ListMultipartUploads"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, _, err := s.start(ctx, op, in.Prefix, 0)
	if err != nil {
		return nil, err
	}
	if err := s.checkBucket(op, rid, in.Bucket); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &store.ListMultipartUploadsOutput{Uploads: s.listUploads(in.Prefix), RequestID: rid}, nil
}

// listUploads returns the uploads under prefix, sorted. s.mu is held.
func (s *Store) listUploads(prefix string) []store.Upload {
	var out []store.Upload
	for _, u := range s.uploads {
		if strings.HasPrefix(u.key, prefix) {
			out = append(out, store.Upload{Key: u.key, UploadID: u.id, Initiated: u.initiated})
		}
	}
	slices.SortFunc(out, func(a, b store.Upload) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), a.Initiated.Compare(b.Initiated), strings.Compare(a.UploadID, b.UploadID))
	})
	return out
}
