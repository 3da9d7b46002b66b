// Package memstore is an in-memory store.Store with S3's semantics: buckets, objects,
// Content-MD5 and x-amz-checksum-* verification, conditional creates and multipart uploads with
// the checks S3 makes at Complete (part order, ETags, minimum part size, full-object and
// composite checksums). Provider quirks that matter to a writer (R2's equal parts, COS's
// contiguous part numbers, stores without conditional writes, AWS's replayed Complete) are
// switched on with Rules.
//
// It backs unit tests; library users can use it in their own tests.
// Every error is a *store.ResponseError carrying Op, StatusCode, Code, Message and a generated
// RequestID, except invalid input (store.ErrInvalidInput), a context that was already done and a
// failing body reader, which are returned wrapped as a real adapter would.
//
// Objects and parts are kept whole in memory; it is meant for test-sized data.
//
// Test support: storetest and the packages under it (memstore, faulty, faultproxy, wirekit,
// testkit, testcerts, s3test, journaltest) are not covered by safeput's compatibility promise; they change with the
// tests they serve, in any release.
package memstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5; not for security.
	"encoding/base64"
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

// DefaultMinPartSize is S3's minimum size of a non-final part, 5 MiB.
const DefaultMinPartSize = 5 << 20

// Rules are the multipart rules the store enforces at CompleteMultipartUpload, and the provider
// quirks it emulates. The zero value behaves like MinIO: AWS's limits, NoSuchUpload for a
// re-sent Complete.
type Rules struct {
	// MinPartSize is the smallest non-final part Complete accepts (400 EntityTooSmall below it).
	// 0 means DefaultMinPartSize; a negative value disables the check (Garage).
	MinPartSize int64
	// EqualParts makes Complete require every non-final part to have the same size and the final
	// part to be no larger (Cloudflare R2): 400 InvalidPart otherwise.
	EqualParts bool
	// ContiguousParts makes Complete require part numbers 1..N without gaps (Tencent COS):
	// 400 InvalidPart otherwise.
	ContiguousParts bool
	// NoConditionalWrites answers If-None-Match with 501 NotImplemented (Backblaze B2, GCS XML
	// multipart), so a writer's fallback can be tested.
	NoConditionalWrites bool
	// ReplayComplete answers a re-sent Complete of an upload that already completed with the
	// first answer, as AWS does. Without it the answer is 404 NoSuchUpload, as on MinIO.
	ReplayComplete bool
	// The checksum and ETag quirks of self-hosted stores, so every verification path can be
	// tested (see quirks.go): MinIO keeps no checksum it was not sent (NoDefaultChecksum), Ceph
	// RGW ignores x-amz-checksum-* (IgnoreChecksumHeaders) and answers Complete with an empty
	// ETag (EmptyCommitETag); some stores refuse the headers (RejectChecksumHeaders) or give
	// ETags that are not MD5s (OpaqueETags, as AWS does with SSE-KMS).
	NoDefaultChecksum     bool
	IgnoreChecksumHeaders bool
	RejectChecksumHeaders bool
	EmptyCommitETag       bool
	OpaqueETags           bool
	// ListEveryAttempt makes ListParts list every attempt of a re-sent part, each with its own
	// size and ETag, as some stores do: the current attempt first, then the replaced ones, oldest
	// first. Complete still takes the current one.
	ListEveryAttempt bool
	// Optional operations the store lacks, as s3rver does (405 MethodNotAllowed to ListParts and
	// AbortMultipartUpload, 501 NotImplemented to ListMultipartUploads): a non-zero value is the
	// status answered, 405 (MethodNotAllowed) or 501 (NotImplemented), and the request does
	// nothing. LacksHeadChecksumMode refuses a HEAD with ChecksumMode only (a store that rejects
	// the x-amz-checksum-mode header); a plain HEAD still answers.
	LacksListParts, LacksListUploads, LacksAbort, LacksHeadChecksumMode int
	// IgnoreSSE stores every object unencrypted whatever server-side encryption was asked for
	// (SSE-C keys ignored too),
	// and still answers 200, as a store or gateway that drops the headers does. Without it the
	// store reports what was asked (see sse.go).
	IgnoreSSE bool
}

// lacks is the answer of an operation the store lacks (status from Rules), nil when it has it.
func lacks(op, rid string, status int) error {
	switch status {
	case 0:
		return nil
	case 405:
		return respErr(op, rid, 405, "MethodNotAllowed", "The specified method is not allowed against this resource.")
	}
	return respErr(op, rid, status, "NotImplemented", msgNotImpl)
}

func (r Rules) minPartSize() int64 {
	switch {
	case r.MinPartSize == 0:
		return DefaultMinPartSize
	case r.MinPartSize < 0:
		return 0
	}
	return r.MinPartSize
}

// Option configures a Store.
type Option func(*Store)

// WithRules sets the multipart rules and provider quirks.
func WithRules(r Rules) Option { return func(s *Store) { s.rules = r } }

// WithClock sets the clock for LastModified and Initiated times (time.Now by default), so tests
// can compare them exactly.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

// WithBuckets creates the named buckets, as CreateBucket does.
func WithBuckets(names ...string) Option {
	return func(s *Store) {
		for _, n := range names {
			s.createBucket(n)
		}
	}
}

// Store is an in-memory store.Store. It is safe for concurrent use. The zero value is not
// usable; call New.
type Store struct {
	rules Rules
	now   func() time.Time

	reqSeq atomic.Uint64 // request ids: only ever increases, needs no lock

	mu        sync.Mutex
	buckets   map[string]map[string]*object // bucket → key → object
	uploads   map[string]*upload            // upload id → upload
	completed map[string]*completion        // upload id → first answer (ReplayComplete only)
	uploadSeq uint64
	counts    map[string]int
}

var _ store.Store = (*Store)(nil)

// object is a committed object. Its data is never modified after commit (a write replaces the
// whole object), so it can be handed to readers without copying.
type object struct {
	data        []byte
	etag        string
	contentType string
	metadata    map[string]string
	modified    time.Time
	checksums   store.Checksums  // the stored checksum, with its Type
	enc         store.Encryption // as reported: no customer key, its MD5
}

type upload struct {
	bucket, key, id string
	initiated       time.Time
	contentType     string
	metadata        map[string]string
	alg             store.ChecksumAlgorithm
	typ             store.ChecksumType
	parts           map[int32]*part
	replaced        map[int32][]*part // earlier attempts, kept for ListEveryAttempt
	enc             store.Encryption  // as reported: no customer key, its MD5
}

type part struct {
	data     []byte
	etag     string
	md5      [md5.Size]byte
	checksum string // base64, under the upload's algorithm (or the part's own when it has none)
	alg      store.ChecksumAlgorithm
	modified time.Time
}

type completion struct {
	bucket, key string
	out         store.CompleteMultipartUploadOutput
}

// New returns an empty Store; create buckets with CreateBucket or WithBuckets.
func New(opts ...Option) *Store {
	s := &Store{
		now:       time.Now,
		buckets:   map[string]map[string]*object{},
		uploads:   map[string]*upload{},
		completed: map[string]*completion{},
		counts:    map[string]int{},
	}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// CreateBucket creates bucket name; creating an existing bucket keeps its objects. An empty
// name is ignored, since no operation can address it.
func (s *Store) CreateBucket(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.createBucket(name)
}

func (s *Store) createBucket(name string) {
	if name == "" {
		return
	}
	if _, ok := s.buckets[name]; !ok {
		s.buckets[name] = map[string]*object{}
	}
}

// Object returns a copy of the object's bytes and whether it exists.
func (s *Store) Object(bucket, key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.buckets[bucket][key]
	if !ok {
		return nil, false
	}
	return bytes.Clone(o.data), true
}

// Uploads returns the bucket's incomplete multipart uploads, sorted by key, then initiation time.
func (s *Store) Uploads(bucket string) []store.Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listUploads(bucket, "")
}

// Requests returns how many requests of operation op ("PutObject", "UploadPart", ...) reached
// the store, failed ones included. Calls rejected as invalid input or with a context already
// done are not counted: they would not have been sent.
func (s *Store) Requests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op]
}

// RequestCounts returns a copy of the per-operation request counts.
func (s *Store) RequestCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts)
}

// start is what every operation does after validating its input: refuse a done context (nothing
// would have been sent), count the request and give it an id. A request without a body is
// written out once sent (store.ReportRequestWritten); PutObject and UploadPart report theirs once
// the body is read.
func (s *Store) start(ctx context.Context, op, bucket, key string) (string, error) {
	if ctx != nil && ctx.Err() != nil {
		return "", fmt.Errorf("%s %s/%s: %w", op, bucket, key, ctx.Err())
	}
	s.mu.Lock()
	s.counts[op]++
	s.mu.Unlock()
	if op != "PutObject" && op != "UploadPart" {
		store.ReportRequestWritten(ctx)
	}
	return fmt.Sprintf("MEM%013X", s.reqSeq.Add(1)), nil
}

func respErr(op, rid string, status int, code, msg string) *store.ResponseError {
	return &store.ResponseError{Op: op, StatusCode: status, Code: code, Message: msg, RequestID: rid}
}

// Messages as S3 words them, so tests that print errors read like the real thing.
const (
	msgNoSuchBucket = "The specified bucket does not exist"
	msgNoSuchKey    = "The specified key does not exist."
	msgNoSuchUpload = "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."
	msgPrecondition = "At least one of the pre-conditions you specified did not hold"
	msgNotImpl      = "A header you provided implies functionality that is not implemented"
	msgInvalidPart  = "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not have matched the part's entity tag."
	msgUnequalParts = "All non-trailing parts must have the same length."
)

// bucketLocked returns the bucket's objects or a NoSuchBucket error. s.mu is held.
func (s *Store) bucketLocked(op, rid, bucket string) (map[string]*object, error) {
	b, ok := s.buckets[bucket]
	if !ok {
		return nil, respErr(op, rid, 404, "NoSuchBucket", msgNoSuchBucket)
	}
	return b, nil
}

func (s *Store) checkBucket(op, rid, bucket string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.bucketLocked(op, rid, bucket)
	return err
}

// uploadLocked finds an incomplete upload of bucket/key. An id of another key is NoSuchUpload,
// as on S3. s.mu is held.
func (s *Store) uploadLocked(op, rid, bucket, key, id string) (*upload, error) {
	if _, err := s.bucketLocked(op, rid, bucket); err != nil {
		return nil, err
	}
	u, ok := s.uploads[id]
	if !ok || u.bucket != bucket || u.key != key {
		return nil, respErr(op, rid, 404, "NoSuchUpload", msgNoSuchUpload)
	}
	return u, nil
}

// conditionLocked applies If-None-Match: * to bucket/key. s.mu is held.
func (s *Store) conditionLocked(op, rid string, b map[string]*object, key string, ifNoneMatch bool) error {
	if !ifNoneMatch {
		return nil
	}
	if s.rules.NoConditionalWrites {
		return respErr(op, rid, 501, "NotImplemented", msgNotImpl)
	}
	if _, exists := b[key]; exists {
		return respErr(op, rid, 412, "PreconditionFailed", msgPrecondition)
	}
	return nil
}

// readBody reads exactly n bytes from r's current position. Fewer is IncompleteBody, as when a
// client sends less than its Content-Length; a reader error is the client's failure, returned
// wrapped like a transport error because no answer would have come back.
func readBody(op, rid, what string, r io.Reader, n int64) ([]byte, error) {
	var buf bytes.Buffer
	// Grow by at most 64 MiB up front: ContentLength is the caller's claim, not a promise.
	// MinRead more: ReadFrom wants that much room before each read, and would otherwise copy
	// the whole body into a buffer twice its size for the read that finds the end.
	buf.Grow(int(min(n, 64<<20)) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(r, n)); err != nil {
		return nil, fmt.Errorf("%s %s: reading body: %w", op, what, err)
	}
	if int64(buf.Len()) < n {
		return nil, respErr(op, rid, 400, "IncompleteBody",
			"You did not provide the number of bytes specified by the Content-Length HTTP header")
	}
	return buf.Bytes(), nil
}

// checkIntegrity verifies Content-MD5 and the x-amz-checksum header against data.
// sum is data's MD5, which the caller needs for the ETag anyway.
func checkIntegrity(op, rid, contentMD5 string, c store.Checksum, data []byte, sum [md5.Size]byte) error {
	if contentMD5 != "" {
		want, err := base64.StdEncoding.DecodeString(contentMD5)
		if err != nil || len(want) != md5.Size {
			return respErr(op, rid, 400, "InvalidDigest", "The Content-MD5 you specified is not valid.")
		}
		if !bytes.Equal(want, sum[:]) {
			return respErr(op, rid, 400, "BadDigest", "The Content-MD5 you specified did not match what we received.")
		}
	}
	if c.IsZero() {
		return nil
	}
	want, ok := decodeChecksum(c)
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

// PutObject implements store.Store. Without a checksum the store computes and keeps a
// CRC64NVME, as AWS does for uploads that carry none, and echoes it.
func (s *Store) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	const op = "PutObject"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	sent, err := s.checksumHeader(op, rid, in.Checksum)
	if err != nil {
		return nil, err
	}
	if sent != in.Checksum {
		c := *in
		c.Checksum = sent
		in = &c
	}
	if err := s.checkBucket(op, rid, in.Bucket); err != nil {
		return nil, err
	}
	data, err := readBody(op, rid, in.Bucket+"/"+in.Key, in.Body, in.ContentLength)
	if err != nil {
		return nil, err
	}
	store.ReportRequestWritten(ctx)
	etag, sum := md5Hex(data)
	if err := checkIntegrity(op, rid, in.ContentMD5, in.Checksum, data, sum); err != nil {
		return nil, err
	}
	sums := s.defaultChecksum(data)
	if !in.Checksum.IsZero() {
		sums = checksumsOf(in.Checksum.Algorithm, in.Checksum.Value, store.ChecksumTypeFullObject)
	}
	etag = s.objectETag(etag)

	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucketLocked(op, rid, in.Bucket)
	if err != nil {
		return nil, err
	}
	if err := s.conditionLocked(op, rid, b, in.Key, in.IfNoneMatch); err != nil {
		return nil, err
	}
	b[in.Key] = &object{
		data: data, etag: etag, contentType: in.ContentType, metadata: maps.Clone(in.Metadata),
		modified: s.now().UTC(), checksums: sums, enc: s.stored(in.Encryption),
	}
	return &store.PutObjectOutput{ETag: s.answerETag(etag), Checksums: sums, RequestID: rid}, nil
}

// CreateMultipartUpload implements store.Store. An algorithm without a type gets S3's default
// type (FULL_OBJECT for CRC64NVME, COMPOSITE otherwise); combinations S3 refuses are 400
// InvalidRequest.
func (s *Store) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	const op = "CreateMultipartUpload"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if err := s.checksumHeaders(op, rid, in.ChecksumAlgorithm); err != nil {
		return nil, err
	}
	alg, typ := in.ChecksumAlgorithm, in.ChecksumType
	if s.rules.IgnoreChecksumHeaders {
		alg, typ = store.ChecksumNone, store.ChecksumTypeNone
	}
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
	if _, err := s.bucketLocked(op, rid, in.Bucket); err != nil {
		return nil, err
	}
	s.uploadSeq++
	id := fmt.Sprintf("memupload-%08d", s.uploadSeq)
	s.uploads[id] = &upload{
		bucket: in.Bucket, key: in.Key, id: id, initiated: s.now().UTC(),
		contentType: in.ContentType, metadata: maps.Clone(in.Metadata),
		alg: alg, typ: typ, parts: map[int32]*part{}, enc: s.stored(in.Encryption),
	}
	return &store.CreateMultipartUploadOutput{UploadID: id, RequestID: rid}, nil
}

// UploadPart implements store.Store. When the upload was created with a checksum algorithm,
// every part must carry that algorithm's checksum (400 InvalidRequest otherwise), as on AWS.
func (s *Store) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	const op = "UploadPart"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	sent, err := s.checksumHeader(op, rid, in.Checksum)
	if err != nil {
		return nil, err
	}
	if sent != in.Checksum {
		c := *in
		c.Checksum = sent
		in = &c
	}
	// Look the upload up before reading the body, as S3 answers NoSuchUpload without it.
	s.mu.Lock()
	up, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	var enc store.Encryption
	if err == nil {
		enc = up.enc
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := s.customerKeyFits(op, rid, enc, in.SSECustomerKey); err != nil {
		return nil, err
	}
	data, err := readBody(op, rid, fmt.Sprintf("%s/%s part %d", in.Bucket, in.Key, in.PartNumber), in.Body, in.ContentLength)
	if err != nil {
		return nil, err
	}
	store.ReportRequestWritten(ctx)
	etag, sum := md5Hex(data)
	if err := checkIntegrity(op, rid, in.ContentMD5, in.Checksum, data, sum); err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// Again under the lock: the upload may have been aborted or completed while the body was read.
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return nil, err
	}
	if u.alg != store.ChecksumNone && in.Checksum.Algorithm != u.alg {
		got := "null"
		if in.Checksum.Algorithm != store.ChecksumNone {
			got = strings.ToLower(string(in.Checksum.Algorithm))
		}
		return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
			"Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s", strings.ToLower(string(u.alg)), got))
	}
	if old, ok := u.parts[in.PartNumber]; ok && s.rules.ListEveryAttempt {
		if u.replaced == nil {
			u.replaced = map[int32][]*part{}
		}
		u.replaced[in.PartNumber] = append(u.replaced[in.PartNumber], old)
	}
	u.parts[in.PartNumber] = &part{
		data: data, etag: etag, md5: sum, checksum: in.Checksum.Value, alg: in.Checksum.Algorithm,
		modified: s.now().UTC(),
	}
	return &store.UploadPartOutput{ETag: etag, Checksums: checksumsOf(in.Checksum.Algorithm, in.Checksum.Value, ""), RequestID: rid}, nil
}

// ListParts implements store.Store: every part, in part-number order. PageSize is accepted and
// ignored, since there is no wire to page over.
func (s *Store) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	const op = "ListParts"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := lacks(op, rid, s.rules.LacksListParts); err != nil {
		return nil, err
	}
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return nil, err
	}
	out := &store.ListPartsOutput{Parts: make([]store.Part, 0, len(u.parts)), RequestID: rid}
	for _, n := range slices.Sorted(maps.Keys(u.parts)) {
		// The current attempt first: a reader taking the last entry of a number gets a stale one.
		for _, p := range append([]*part{u.parts[n]}, u.replaced[n]...) {
			out.Parts = append(out.Parts, store.Part{
				PartNumber: n, Size: int64(len(p.data)), ETag: p.etag,
				Checksums: checksumsOf(p.alg, p.checksum, ""), LastModified: p.modified,
			})
		}
	}
	return out, nil
}

// CompleteMultipartUpload implements store.Store, with S3's checks in S3's order: the upload,
// the precondition, the part list, part sizes (Rules), the object size, then the checksum.
// A failed Complete leaves the upload as it was, so it can be retried or aborted.
func (s *Store) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	const op = "CompleteMultipartUpload"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if err := s.checksumHeaders(op, rid, in.FullObjectChecksum.Algorithm); err != nil {
		return nil, err
	}
	if s.rules.IgnoreChecksumHeaders {
		c := *in
		c.FullObjectChecksum, c.ChecksumType = store.Checksum{}, store.ChecksumTypeNone
		c.Parts = slices.Clone(in.Parts)
		for i := range c.Parts {
			c.Parts[i].Checksum = store.Checksum{}
		}
		in = &c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucketLocked(op, rid, in.Bucket)
	if err != nil {
		return nil, err
	}
	if c, ok := s.completed[in.UploadID]; ok && c.bucket == in.Bucket && c.key == in.Key {
		out := c.out
		out.RequestID = rid
		return &out, nil
	}
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return nil, err
	}
	if err := s.conditionLocked(op, rid, b, in.Key, in.IfNoneMatch); err != nil {
		return nil, err
	}
	if in.ChecksumType != store.ChecksumTypeNone && u.typ != store.ChecksumTypeNone && in.ChecksumType != u.typ {
		return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
			"The upload was created using the %s checksum mode. The complete request must use the same checksum mode.", u.typ))
	}

	parts := make([]*part, len(in.Parts))
	for i, cp := range in.Parts {
		// Validate already refuses an unordered list; kept so the store stands on its own.
		if i > 0 && cp.PartNumber <= in.Parts[i-1].PartNumber {
			return nil, respErr(op, rid, 400, "InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number.")
		}
		if s.rules.ContiguousParts && cp.PartNumber != int32(i+1) { //nolint:gosec // i < len(in.Parts) ≤ MaxPartNumber after Validate
			return nil, respErr(op, rid, 400, "InvalidPart", fmt.Sprintf("Part numbers must be continuous: part %d at position %d.", cp.PartNumber, i+1))
		}
		p, ok := u.parts[cp.PartNumber]
		if !ok || unquote(cp.ETag) != p.etag {
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
	minSize := s.rules.minPartSize()
	first := int64(len(parts[0].data))
	for i, p := range parts {
		size := int64(len(p.data))
		total += size
		last := i == len(parts)-1
		if !last && size < minSize {
			return nil, respErr(op, rid, 400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size")
		}
		if s.rules.EqualParts && ((!last && size != first) || (last && size > first)) {
			// R2's wording; for a final part larger than the others the wording is memstore's guess.
			return nil, respErr(op, rid, 400, "InvalidPart", msgUnequalParts)
		}
	}
	if in.ObjectSize > 0 && in.ObjectSize != total {
		return nil, respErr(op, rid, 400, "InvalidRequest", fmt.Sprintf(
			"The provided 'x-amz-mp-object-size' header value %d does not match the size of the uploaded parts, %d.", in.ObjectSize, total))
	}

	data := make([]byte, 0, total)
	md5s := make([][md5.Size]byte, len(parts))
	for i, p := range parts {
		data = append(data, p.data...)
		md5s[i] = p.md5
	}
	sums, err := completeChecksum(op, rid, u, in, parts, data)
	if err != nil {
		return nil, err
	}
	if sums.Type == store.ChecksumTypeFullObject && u.alg == store.ChecksumNone && in.FullObjectChecksum.IsZero() {
		sums = s.defaultChecksum(data) // nothing was sent: the store's own choice
	}
	etag := s.objectETag(multipartETag(md5s))
	b[in.Key] = &object{
		data: data, etag: etag, contentType: u.contentType, metadata: u.metadata,
		modified: s.now().UTC(), checksums: sums, enc: u.enc,
	}
	delete(s.uploads, u.id)
	out := store.CompleteMultipartUploadOutput{ETag: s.answerETag(etag), Checksums: sums, RequestID: rid}
	if s.rules.ReplayComplete {
		s.completed[u.id] = &completion{bucket: in.Bucket, key: in.Key, out: out}
	}
	return &out, nil
}

// completeChecksum returns the object's stored checksum after verifying the one Complete sent.
func completeChecksum(op, rid string, u *upload, in *store.CompleteMultipartUploadInput, parts []*part, data []byte) (store.Checksums, error) {
	sent := in.FullObjectChecksum
	switch u.typ {
	case store.ChecksumTypeComposite:
		var raw []byte
		for _, p := range parts {
			d, ok := decodeChecksum(store.Checksum{Algorithm: u.alg, Value: p.checksum})
			if !ok { // every part was checked against u.alg at UploadPart; kept for safety
				return store.Checksums{}, respErr(op, rid, 400, "InvalidPart", msgInvalidPart)
			}
			raw = append(raw, d...)
		}
		bare := b64(digest(u.alg, raw))
		value := bare + "-" + itoa(len(parts))
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
		return checksumsOf(store.ChecksumCRC64NVME, b64(digest(store.ChecksumCRC64NVME, data)), store.ChecksumTypeFullObject), nil
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
		want, ok := decodeChecksum(sent)
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
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := lacks(op, rid, s.rules.LacksAbort); err != nil {
		return err
	}
	u, err := s.uploadLocked(op, rid, in.Bucket, in.Key, in.UploadID)
	if err != nil {
		return err
	}
	delete(s.uploads, u.id)
	return nil
}

// objectLocked finds bucket/key or returns NoSuchBucket / NoSuchKey. s.mu is held.
func (s *Store) objectLocked(op, rid, bucket, key string) (*object, error) {
	b, err := s.bucketLocked(op, rid, bucket)
	if err != nil {
		return nil, err
	}
	o, ok := b[key]
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
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in.ChecksumMode {
		if err := lacks(op, rid, s.rules.LacksHeadChecksumMode); err != nil {
			return nil, err
		}
	}
	o, err := s.objectLocked(op, rid, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if err := s.customerKeyFits(op, rid, o.enc, in.SSECustomerKey); err != nil {
		return nil, err
	}
	out := &store.HeadObjectOutput{
		Size: int64(len(o.data)), ETag: o.etag, ContentType: o.contentType,
		Metadata: maps.Clone(o.metadata), LastModified: o.modified, RequestID: rid, Encryption: o.enc,
	}
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
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.objectLocked(op, rid, in.Bucket, in.Key)
	if err != nil {
		return nil, err
	}
	if err := s.customerKeyFits(op, rid, o.enc, in.SSECustomerKey); err != nil {
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
	// o.data is never modified after commit, so the reader can share it.
	body := o.data[in.Offset:end]
	return &store.GetObjectOutput{
		Body: io.NopCloser(bytes.NewReader(body)), Size: int64(len(body)), ETag: o.etag, RequestID: rid,
	}, nil
}

// DeleteObject implements store.Store. A missing key is not an error; a missing bucket is.
func (s *Store) DeleteObject(ctx context.Context, in *store.DeleteObjectInput) error {
	const op = "DeleteObject"
	if err := store.Validate(in); err != nil {
		return err
	}
	rid, err := s.start(ctx, op, in.Bucket, in.Key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.bucketLocked(op, rid, in.Bucket)
	if err != nil {
		return err
	}
	delete(b, in.Key)
	return nil
}

// ListMultipartUploads implements store.Store: every incomplete upload whose key starts with
// Prefix, sorted by key, then initiation time. PageSize is accepted and ignored.
func (s *Store) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	const op = "ListMultipartUploads"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	rid, err := s.start(ctx, op, in.Bucket, in.Prefix)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := lacks(op, rid, s.rules.LacksListUploads); err != nil {
		return nil, err
	}
	if _, err := s.bucketLocked(op, rid, in.Bucket); err != nil {
		return nil, err
	}
	return &store.ListMultipartUploadsOutput{Uploads: s.listUploads(in.Bucket, in.Prefix), RequestID: rid}, nil
}

// listUploads returns the bucket's uploads under prefix, sorted. s.mu is held.
func (s *Store) listUploads(bucket, prefix string) []store.Upload {
	var out []store.Upload
	for _, u := range s.uploads {
		if u.bucket == bucket && strings.HasPrefix(u.key, prefix) {
			out = append(out, store.Upload{Key: u.key, UploadID: u.id, Initiated: u.initiated})
		}
	}
	slices.SortFunc(out, func(a, b store.Upload) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), a.Initiated.Compare(b.Initiated), strings.Compare(a.UploadID, b.UploadID))
	})
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
