// Package store is the seam between safeput and an S3-compatible object store: the handful of
// operations the writer needs, with inputs and results that carry no SDK types.
//
// Two adapters implement Store: store/awss3 (aws-sdk-go-v2) and store/miniogo (minio-go Core).
// Each method's doc states the contract an implementation must keep, so a third adapter (or a
// fault-injecting wrapper) can be written against this file alone; storetest checks it.
//
// Contract common to every method:
//   - The input has been checked with Validate before any request is sent; an
//     invalid input returns an error wrapping ErrInvalidInput and sends nothing.
//   - The SDK's own retries are off: one call is one attempt. Retrying is the caller's job.
//   - A failure that reached the store returns an error for which errors.As(err, **ResponseError)
//     is true, carrying the HTTP status, S3 error code, message and request id. A failure with no
//     response (dial, reset, timeout, cancelled context) returns the underlying error unchanged
//     (wrapped), so errors.Is(err, context.Canceled) and errors.As(err, *net.OpError) work.
//     A failure before the request had a connection (refused, TLS handshake or certificate
//     failed) may carry a NotSentError whose NotSent is true (the adapters' do): the writer then
//     knows the store cannot have acted on it, so a failed CreateMultipartUpload left no upload
//     to look for. Without the mark it assumes one may exist.
//   - A call's request carries the call's context: a request on net/http is sent with it or one
//     derived from it, so the stall watchdog's progress (ProgressTransport, ReportProgress) and
//     the writer's request-written signal (httptrace's WroteRequest, or ReportRequestWritten
//     from a Store not on net/http) reach whoever asked.
//   - A throttling answer's Retry-After or x-amz-retry-after goes in ResponseError.RetryAfter:
//     the retry policy waits at least that long (up to its cap) before the next attempt.
//   - A success status whose body is an S3 <Error> document, on any operation, is a
//     *ResponseError with StatusCode 500 and the document's code (as AWS advises treating it).
//   - A non-compliant answer (no UploadId, no part ETag, malformed XML) is an error, never a nil
//     result. PutObject and CompleteMultipartUpload answers may carry an empty ETag (Ceph RGW
//     sends <ETag></ETag>): that is passed on, and the writer's HEAD decides what landed.
//   - Only the checksums the input asks for are sent, as plain x-amz-checksum-* headers: no SDK
//     default CRC trailers and no aws-chunked encoding.
//   - Every ETag an output carries is the store's entity tag with its surrounding double quotes
//     stripped (5d41402abc4b2a76b9719d911017c592, not "5d41…"), so ETags compare as plain
//     strings across adapters. CompletedPart.ETag may be given either way.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	sperrors "github.com/safeput/safeput/errors"
)

// Store is the set of S3 operations safeput uses. Implementations must be safe for concurrent use.
type Store interface {
	// PutObject uploads Body (exactly ContentLength bytes) in one request. With IfNoneMatch, an
	// existing key answers a *ResponseError with StatusCode 412 (a store without conditional
	// writes may answer 501 NotImplemented instead, and the writer sends it again without, the
	// key checked with a HEAD; one may also ignore it).
	PutObject(ctx context.Context, in *PutObjectInput) (*PutObjectOutput, error)
	// CreateMultipartUpload starts an upload; the output's UploadID is never empty.
	CreateMultipartUpload(ctx context.Context, in *CreateMultipartUploadInput) (*CreateMultipartUploadOutput, error)
	// UploadPart uploads one part; the output's ETag is never empty. A part of an unknown or
	// aborted upload answers a *ResponseError with Code "NoSuchUpload".
	UploadPart(ctx context.Context, in *UploadPartInput) (*UploadPartOutput, error)
	// ListParts returns every part of the upload, following all pages, in part-number order. An
	// unknown or aborted upload is an error (NoSuchUpload on S3; some stores say NoSuchKey): the
	// writer treats any error after an abort as "gone".
	//
	// The answers stores disagree on have one meaning each, the same in every adapter:
	//   - A part number listed more than once (a store that keeps one entry per attempt of a
	//     re-sent part) is returned as listed: every entry, none dropped or merged. Deciding which
	//     attempt counts is the caller's job (the writer keeps the one matching its receipt).
	//   - Entries out of order are sorted by part number; entries of one number keep the order
	//     the store listed them in (the sort is stable, pages taken in order).
	//   - An entry without a part number (or one outside 1..MaxPartNumber), or whose ETag is
	//     missing, empty, or only quotes or spaces, is non-compliant: the whole call fails.
	//   - ETags are stripped of surrounding spaces and one pair of double quotes, as everywhere.
	//   - Every checksum the store lists is returned, whatever algorithm the upload was created
	//     with (a checksum of a type not asked for is kept, not dropped); Checksums.Type is the
	//     answer's ChecksumType ("" when the store sends none). The caller compares what it knows.
	//   - A truncated page must name a next part-number marker greater than the one asked with;
	//     a marker that is missing, unparsable or does not advance (or more than 100,000 pages)
	//     is non-compliant, so a listing always ends.
	//   - RequestID is the last page's.
	// Non-compliant means a *ResponseError with the status the store sent (200) wrapping
	// ErrNonCompliant, as in the common contract.
	ListParts(ctx context.Context, in *ListPartsInput) (*ListPartsOutput, error)
	// CompleteMultipartUpload commits the upload. A 200 answer whose body is an <Error> is an
	// error (see the common contract); a 200 with no body at all is a result without an ETag. Completing an unknown upload, or one already completed, answers an error the writer
	// resolves with a HEAD (NoSuchUpload on S3 and MinIO; Versity answers 400 InvalidPart, or
	// 200 again for an upload it completed).
	CompleteMultipartUpload(ctx context.Context, in *CompleteMultipartUploadInput) (*CompleteMultipartUploadOutput, error)
	// AbortMultipartUpload discards the upload and its parts. Aborting an upload that is already
	// gone returns nil or a *ResponseError with Code "NoSuchUpload": both mean gone.
	AbortMultipartUpload(ctx context.Context, in *AbortMultipartUploadInput) error
	// HeadObject returns the object's metadata; with ChecksumMode the stored checksums too. A
	// missing key is a *ResponseError with StatusCode 404 (a HEAD answer has no body, so its Code
	// may be empty): the writer reads it as "nothing landed".
	HeadObject(ctx context.Context, in *HeadObjectInput) (*HeadObjectOutput, error)
	// GetObject opens the object (or a range of it). The caller closes Body. A missing key is a
	// *ResponseError with StatusCode 404.
	GetObject(ctx context.Context, in *GetObjectInput) (*GetObjectOutput, error)
	// DeleteObject removes the object. Deleting a missing key is not an error.
	DeleteObject(ctx context.Context, in *DeleteObjectInput) error
	// ListMultipartUploads returns every incomplete upload under Prefix, following all pages.
	ListMultipartUploads(ctx context.Context, in *ListMultipartUploadsInput) (*ListMultipartUploadsOutput, error)
}

// ErrInvalidInput marks an input rejected before any request was sent. Its InvalidInput method
// lets packages that must not import store (errors) recognise it with errors.As.
var ErrInvalidInput error = invalidInputError{}

type invalidInputError struct{}

func (invalidInputError) Error() string      { return "invalid input" }
func (invalidInputError) InvalidInput() bool { return true }

// ChecksumAlgorithm names an S3 additional-checksum algorithm, spelled as in the S3 API.
type ChecksumAlgorithm string

// The algorithms S3 defines for x-amz-checksum-*. ChecksumNone sends no checksum header.
const (
	ChecksumNone      ChecksumAlgorithm = ""
	ChecksumCRC32     ChecksumAlgorithm = "CRC32"
	ChecksumCRC32C    ChecksumAlgorithm = "CRC32C"
	ChecksumCRC64NVME ChecksumAlgorithm = "CRC64NVME"
	ChecksumSHA1      ChecksumAlgorithm = "SHA1"
	ChecksumSHA256    ChecksumAlgorithm = "SHA256"
)

// Valid reports whether a is a known algorithm (or none).
func (a ChecksumAlgorithm) Valid() bool {
	switch a {
	case ChecksumNone, ChecksumCRC32, ChecksumCRC32C, ChecksumCRC64NVME, ChecksumSHA1, ChecksumSHA256:
		return true
	}
	return false
}

// ChecksumType says whether a multipart object's checksum covers the whole object or is a
// checksum of the part checksums.
type ChecksumType string

// Checksum types defined by S3.
const (
	ChecksumTypeNone       ChecksumType = ""
	ChecksumTypeFullObject ChecksumType = "FULL_OBJECT"
	ChecksumTypeComposite  ChecksumType = "COMPOSITE"
)

// Checksum is one checksum value: Value is base64 of the big-endian digest, as S3 sends it.
type Checksum struct {
	Algorithm ChecksumAlgorithm
	Value     string
}

// IsZero reports whether no checksum is set.
func (c Checksum) IsZero() bool { return c.Algorithm == ChecksumNone && c.Value == "" }

func (c Checksum) validate(field string) error {
	if !c.Algorithm.Valid() {
		return invalid("%s: unknown checksum algorithm %q", field, c.Algorithm)
	}
	if (c.Algorithm == ChecksumNone) != (c.Value == "") {
		return invalid("%s: checksum algorithm %q and value %q must be set together", field, c.Algorithm, c.Value)
	}
	return nil
}

// Checksums are the checksum values a store answered with (base64; empty when not returned).
type Checksums struct {
	CRC32     string
	CRC32C    string
	CRC64NVME string
	SHA1      string
	SHA256    string
	Type      ChecksumType
}

// Get returns the value for algorithm a, or "" when the store returned none.
func (c Checksums) Get(a ChecksumAlgorithm) string {
	switch a {
	case ChecksumCRC32:
		return c.CRC32
	case ChecksumCRC32C:
		return c.CRC32C
	case ChecksumCRC64NVME:
		return c.CRC64NVME
	case ChecksumSHA1:
		return c.SHA1
	case ChecksumSHA256:
		return c.SHA256
	}
	return ""
}

// Set stores v under algorithm a; an unknown algorithm is ignored.
func (c *Checksums) Set(a ChecksumAlgorithm, v string) {
	switch a {
	case ChecksumCRC32:
		c.CRC32 = v
	case ChecksumCRC32C:
		c.CRC32C = v
	case ChecksumCRC64NVME:
		c.CRC64NVME = v
	case ChecksumSHA1:
		c.SHA1 = v
	case ChecksumSHA256:
		c.SHA256 = v
	}
}

// Headers are the standard HTTP headers a store keeps with an object and returns on GET and
// HEAD. Each is sent when not empty.
type Headers struct {
	CacheControl       string
	ContentDisposition string
	ContentEncoding    string
	ContentLanguage    string
}

// PutObjectInput is a single-request upload.
type PutObjectInput struct {
	Bucket string
	Key    string
	// Body is read from its current position for ContentLength bytes; adapters may Seek it back to
	// that position to sign or re-read it, never elsewhere.
	Body          io.ReadSeeker
	ContentLength int64
	// ContentMD5 is the base64 MD5 of the body, sent as Content-MD5 when set.
	ContentMD5 string
	// Checksum is sent as x-amz-checksum-<alg> when set.
	Checksum    Checksum
	ContentType string
	Metadata    map[string]string
	// Headers are the standard headers stored with the object.
	Headers Headers
	// IfNoneMatch sends If-None-Match: * (create-only: 412 when the key exists).
	IfNoneMatch bool
	// Encryption is the server-side encryption asked for (x-amz-server-side-encryption*, or the
	// SSE-C customer headers).
	Encryption Encryption
}

// validate checks the input without sending anything (Validate).
func (in *PutObjectInput) validate() error {
	if in == nil {
		return invalid("PutObject: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	if in.Body == nil {
		return invalid("PutObject %s/%s: nil body", in.Bucket, in.Key)
	}
	if in.ContentLength < 0 {
		return invalid("PutObject %s/%s: negative content length %d", in.Bucket, in.Key, in.ContentLength)
	}
	if err := in.Encryption.Validate(); err != nil {
		return fmt.Errorf("PutObject %s/%s: %w", in.Bucket, in.Key, err)
	}
	return in.Checksum.validate("PutObject checksum")
}

// PutObjectOutput is what the store answered to a PutObject.
type PutObjectOutput struct {
	ETag      string
	VersionID string
	Checksums Checksums
	RequestID string
}

// CreateMultipartUploadInput starts a multipart upload.
type CreateMultipartUploadInput struct {
	Bucket      string
	Key         string
	ContentType string
	Metadata    map[string]string
	// Headers are the standard headers stored with the object, as in PutObjectInput.
	Headers Headers
	// ChecksumAlgorithm and ChecksumType are sent when set; every part must then carry that
	// algorithm's checksum.
	ChecksumAlgorithm ChecksumAlgorithm
	ChecksumType      ChecksumType
	// Encryption is the server-side encryption asked for, as in PutObjectInput. With SSE-C every
	// UploadPart (and a HEAD or GET of the object) must carry the same key.
	Encryption Encryption
}

// validate checks the input without sending anything (Validate).
func (in *CreateMultipartUploadInput) validate() error {
	if in == nil {
		return invalid("CreateMultipartUpload: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	if !in.ChecksumAlgorithm.Valid() {
		return invalid("CreateMultipartUpload: unknown checksum algorithm %q", in.ChecksumAlgorithm)
	}
	switch in.ChecksumType {
	case ChecksumTypeNone, ChecksumTypeFullObject, ChecksumTypeComposite:
	default:
		return invalid("CreateMultipartUpload: unknown checksum type %q", in.ChecksumType)
	}
	if in.ChecksumType != ChecksumTypeNone && in.ChecksumAlgorithm == ChecksumNone {
		return invalid("CreateMultipartUpload: checksum type %s needs a checksum algorithm", in.ChecksumType)
	}
	if err := in.Encryption.Validate(); err != nil {
		return fmt.Errorf("CreateMultipartUpload %s/%s: %w", in.Bucket, in.Key, err)
	}
	return nil
}

// CreateMultipartUploadOutput carries the new upload id.
type CreateMultipartUploadOutput struct {
	UploadID  string
	RequestID string
}

// MaxPartNumber is the largest part number S3 accepts.
const MaxPartNumber = 10000

// UploadPartInput uploads one part.
type UploadPartInput struct {
	Bucket     string
	Key        string
	UploadID   string
	PartNumber int32
	// Body is read for ContentLength bytes, as in PutObjectInput.
	Body          io.ReadSeeker
	ContentLength int64
	ContentMD5    string
	Checksum      Checksum
	// SSECustomerKey is the SSE-C key the upload was created with (nil for none).
	SSECustomerKey CustomerKey
}

// validate checks the input without sending anything (Validate).
func (in *UploadPartInput) validate() error {
	if in == nil {
		return invalid("UploadPart: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	if in.UploadID == "" {
		return invalid("UploadPart %s/%s: empty upload id", in.Bucket, in.Key)
	}
	if in.PartNumber < 1 || in.PartNumber > MaxPartNumber {
		return invalid("UploadPart %s/%s: part number %d outside 1..%d", in.Bucket, in.Key, in.PartNumber, MaxPartNumber)
	}
	if in.Body == nil {
		return invalid("UploadPart %s/%s part %d: nil body", in.Bucket, in.Key, in.PartNumber)
	}
	if in.ContentLength < 0 {
		return invalid("UploadPart %s/%s part %d: negative content length %d", in.Bucket, in.Key, in.PartNumber, in.ContentLength)
	}
	if err := validateCustomerKey("UploadPart", in.SSECustomerKey); err != nil {
		return err
	}
	return in.Checksum.validate("UploadPart checksum")
}

// UploadPartOutput is what the store answered to an UploadPart.
type UploadPartOutput struct {
	// ETag is the part's entity tag without surrounding quotes.
	ETag      string
	Checksums Checksums
	RequestID string
}

// ListPartsInput lists the parts of an upload.
type ListPartsInput struct {
	Bucket   string
	Key      string
	UploadID string
	// PageSize asks for at most this many parts per page (0: the store's default). All pages are
	// always followed; this only exists so tests can force paging.
	PageSize int32
}

// validate checks the input without sending anything (Validate).
func (in *ListPartsInput) validate() error {
	if in == nil {
		return invalid("ListParts: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	if in.UploadID == "" {
		return invalid("ListParts %s/%s: empty upload id", in.Bucket, in.Key)
	}
	if in.PageSize < 0 {
		return invalid("ListParts %s/%s: negative page size %d", in.Bucket, in.Key, in.PageSize)
	}
	return nil
}

// Part is one uploaded part as the store lists it.
type Part struct {
	PartNumber int32
	Size       int64
	// ETag is the part's entity tag without surrounding quotes, as UploadPartOutput.ETag.
	ETag         string
	Checksums    Checksums
	LastModified time.Time
}

// ListPartsOutput holds every part of the upload.
type ListPartsOutput struct {
	Parts     []Part
	RequestID string
}

// CompletedPart names a part for CompleteMultipartUpload.
type CompletedPart struct {
	PartNumber int32
	// ETag as UploadPart returned it; quoted or not, adapters send it in the form S3 expects.
	ETag string
	// Checksum is the part's checksum, sent when set. Send it whenever the upload was created
	// with a checksum algorithm: S3 requires it for COMPOSITE, and Versity S3 Gateway also for
	// FULL_OBJECT (400 InvalidRequest when missing).
	Checksum Checksum
}

// CompleteMultipartUploadInput commits an upload.
type CompleteMultipartUploadInput struct {
	Bucket   string
	Key      string
	UploadID string
	// Parts in strictly ascending part-number order.
	Parts []CompletedPart
	// FullObjectChecksum is sent as x-amz-checksum-<alg> for a FULL_OBJECT upload.
	FullObjectChecksum Checksum
	ChecksumType       ChecksumType
	// IfNoneMatch sends If-None-Match: *.
	IfNoneMatch bool
	// ObjectSize is sent as x-amz-mp-object-size when > 0, for stores that check it.
	ObjectSize int64
	// SSECustomerKey is the SSE-C key the upload was created with (nil for none): AWS wants it
	// on the Complete of an upload with checksums.
	SSECustomerKey CustomerKey
}

// validate checks the input without sending anything (Validate).
func (in *CompleteMultipartUploadInput) validate() error {
	if in == nil {
		return invalid("CompleteMultipartUpload: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	if in.UploadID == "" {
		return invalid("CompleteMultipartUpload %s/%s: empty upload id", in.Bucket, in.Key)
	}
	if len(in.Parts) == 0 {
		return invalid("CompleteMultipartUpload %s/%s: no parts", in.Bucket, in.Key)
	}
	prev := int32(0)
	for i, p := range in.Parts {
		if p.PartNumber <= prev || p.PartNumber > MaxPartNumber {
			return invalid("CompleteMultipartUpload %s/%s: parts out of order: part %d (index %d) after part %d", in.Bucket, in.Key, p.PartNumber, i, prev)
		}
		if p.ETag == "" {
			return invalid("CompleteMultipartUpload %s/%s: part %d has no ETag", in.Bucket, in.Key, p.PartNumber)
		}
		if err := p.Checksum.validate(fmt.Sprintf("part %d checksum", p.PartNumber)); err != nil {
			return err
		}
		prev = p.PartNumber
	}
	if in.ObjectSize < 0 {
		return invalid("CompleteMultipartUpload %s/%s: negative object size %d", in.Bucket, in.Key, in.ObjectSize)
	}
	if err := validateCustomerKey("CompleteMultipartUpload", in.SSECustomerKey); err != nil {
		return err
	}
	return in.FullObjectChecksum.validate("CompleteMultipartUpload full-object checksum")
}

// CompleteMultipartUploadOutput is what the store answered to a Complete.
type CompleteMultipartUploadOutput struct {
	ETag      string
	VersionID string
	Checksums Checksums
	RequestID string
}

// AbortMultipartUploadInput discards an upload.
type AbortMultipartUploadInput struct {
	Bucket   string
	Key      string
	UploadID string
}

// validate checks the input without sending anything (Validate).
func (in *AbortMultipartUploadInput) validate() error {
	if in == nil {
		return invalid("AbortMultipartUpload: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	if in.UploadID == "" {
		return invalid("AbortMultipartUpload %s/%s: empty upload id", in.Bucket, in.Key)
	}
	return nil
}

// HeadObjectInput asks for an object's metadata.
type HeadObjectInput struct {
	Bucket string
	Key    string
	// ChecksumMode asks the store to return stored checksums (x-amz-checksum-mode: ENABLED).
	ChecksumMode bool
	// SSECustomerKey is the SSE-C key of the object (nil for none): a store answers a HEAD of an
	// SSE-C object without it with 400.
	SSECustomerKey CustomerKey
}

// validate checks the input without sending anything (Validate).
func (in *HeadObjectInput) validate() error {
	if in == nil {
		return invalid("HeadObject: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	return validateCustomerKey("HeadObject", in.SSECustomerKey)
}

// HeadObjectOutput is an object's metadata.
type HeadObjectOutput struct {
	Size         int64
	ETag         string
	VersionID    string
	ContentType  string
	Metadata     map[string]string
	LastModified time.Time
	Checksums    Checksums
	// Encryption is the server-side encryption the store reports (never a customer key: for
	// SSE-C, its MD5).
	Encryption Encryption
	RequestID  string
}

// GetObjectInput opens an object, or the range [Offset, Offset+Length) of it.
type GetObjectInput struct {
	Bucket string
	Key    string
	Offset int64
	// Length is the number of bytes from Offset; 0 reads to the end.
	Length int64
	// SSECustomerKey is the SSE-C key of the object (nil for none).
	SSECustomerKey CustomerKey
}

// validate checks the input without sending anything (Validate).
func (in *GetObjectInput) validate() error {
	if in == nil {
		return invalid("GetObject: nil input")
	}
	if err := ValidateBucketKey(in.Bucket, in.Key); err != nil {
		return err
	}
	if in.Offset < 0 || in.Length < 0 {
		return invalid("GetObject %s/%s: negative range offset %d length %d", in.Bucket, in.Key, in.Offset, in.Length)
	}
	return validateCustomerKey("GetObject", in.SSECustomerKey)
}

// GetObjectOutput is an open object body. Size is the length of Body (the range, when ranged).
type GetObjectOutput struct {
	Body      io.ReadCloser
	Size      int64
	ETag      string
	RequestID string
}

// DeleteObjectInput removes an object.
type DeleteObjectInput struct {
	Bucket string
	Key    string
}

// validate checks the input without sending anything (Validate).
func (in *DeleteObjectInput) validate() error {
	if in == nil {
		return invalid("DeleteObject: nil input")
	}
	return ValidateBucketKey(in.Bucket, in.Key)
}

// ListMultipartUploadsInput lists incomplete uploads.
type ListMultipartUploadsInput struct {
	Bucket string
	Prefix string
	// PageSize as in ListPartsInput.
	PageSize int32
}

// validate checks the input without sending anything (Validate).
func (in *ListMultipartUploadsInput) validate() error {
	if in == nil {
		return invalid("ListMultipartUploads: nil input")
	}
	if in.Bucket == "" {
		return invalid("ListMultipartUploads: empty bucket")
	}
	if in.PageSize < 0 {
		return invalid("ListMultipartUploads %s: negative page size %d", in.Bucket, in.PageSize)
	}
	return nil
}

// Upload is one incomplete multipart upload.
type Upload struct {
	Key       string
	UploadID  string
	Initiated time.Time
}

// ListMultipartUploadsOutput holds every matching upload.
type ListMultipartUploadsOutput struct {
	Uploads   []Upload
	RequestID string
}

// MaxKeyLength is S3's limit on a key, in bytes of UTF-8.
const MaxKeyLength = 1024

// input is any of the operation inputs of Store, for Validate.
type input interface {
	PutObjectInput | CreateMultipartUploadInput | UploadPartInput | ListPartsInput |
		CompleteMultipartUploadInput | AbortMultipartUploadInput | HeadObjectInput | GetObjectInput |
		DeleteObjectInput | ListMultipartUploadsInput
}

// Validate checks an operation's input without sending anything: what every implementation
// checks before its first request, so a bad input fails the same way (ErrInvalidInput, with the
// rule broken) whichever store it is given to.
func Validate[T input](in *T) error {
	switch v := any(in).(type) {
	case *PutObjectInput:
		return v.validate()
	case *CreateMultipartUploadInput:
		return v.validate()
	case *UploadPartInput:
		return v.validate()
	case *ListPartsInput:
		return v.validate()
	case *CompleteMultipartUploadInput:
		return v.validate()
	case *AbortMultipartUploadInput:
		return v.validate()
	case *HeadObjectInput:
		return v.validate()
	case *GetObjectInput:
		return v.validate()
	case *DeleteObjectInput:
		return v.validate()
	case *ListMultipartUploadsInput:
		return v.validate()
	}
	return invalid("unknown input type %T", in) // unreachable: Input lists every type
}

// ValidateBucketKey checks the rules every operation shares: a non-empty bucket and a key of 1 to
// 1024 bytes of valid UTF-8.
func ValidateBucketKey(bucket, key string) error {
	if bucket == "" {
		return invalid("empty bucket name")
	}
	if key == "" {
		return invalid("bucket %s: empty key", bucket)
	}
	if len(key) > MaxKeyLength {
		return invalid("bucket %s: key is %d bytes, longer than the %d-byte limit", bucket, len(key), MaxKeyLength)
	}
	if !utf8.ValidString(key) {
		return invalid("bucket %s: key %q is not valid UTF-8", bucket, key)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInput}, args...)...)
}

// ResponseError carries the raw facts of a failed request that reached the store. Adapters
// return it (wrapped or not) so the errors package can classify without knowing the SDK.
type ResponseError struct {
	// Op is the S3 operation name, e.g. "UploadPart".
	Op         string
	StatusCode int
	// Code is the S3 error code from the body ("SlowDown"), or "" when the body had none.
	Code      string
	Message   string
	RequestID string
	// RetryAfter is the store's Retry-After / x-amz-retry-after hint, 0 when absent.
	RetryAfter time.Duration
	// DocumentLost is why the error document could not be read (the connection dropped while
	// it arrived): Code is then unknown, not absent, and the error is retried as Transient.
	DocumentLost error
	// Err is the SDK's error, kept so errors.As can still reach SDK types.
	Err error
}

// ErrorDocumentLost reports whether the store's error document was lost on the way (the
// errors package classifies such an answer by that, not by its status alone).
func (e *ResponseError) ErrorDocumentLost() bool { return e.DocumentLost != nil }

// Error describes the answer, redacted as errors.Redact does: a store may echo the
// request's headers (its Authorization, session token or SSE-C key) in its message.
func (e *ResponseError) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", e.Op, e.StatusCode)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request id " + e.RequestID + ")"
	}
	return sperrors.Redact(s)
}

// Unwrap returns the SDK error.
func (e *ResponseError) Unwrap() error { return e.Err }

// HTTPStatusCode, ErrorCode, ErrorMessage, ServiceRequestID, Operation and ErrorDocumentLost let
// package errors, which must not import store, read the facts through small interfaces.
func (e *ResponseError) HTTPStatusCode() int { return e.StatusCode }

// ErrorCode returns the S3 error code.
func (e *ResponseError) ErrorCode() string { return e.Code }

// ErrorMessage returns the store's message.
func (e *ResponseError) ErrorMessage() string { return e.Message }

// Operation returns Op, so errors.Classify applies the rules that depend on the operation
// (NoSuchUpload on Complete) to every adapter's errors alike, not only to those whose SDK error
// names the operation.
func (e *ResponseError) Operation() string { return e.Op }

// ServiceRequestID returns the store's request id.
func (e *ResponseError) ServiceRequestID() string { return e.RequestID }

// ErrNonCompliant marks an answer that broke the S3 protocol (missing ETag or UploadId,
// malformed XML). It is wrapped in a ResponseError with the status the store sent.
var ErrNonCompliant = errors.New("non-compliant response from store")

// Unsupported reports whether err is a store's answer that it does not implement what was asked:
// HTTP 405 or 501, or the S3 code MethodNotAllowed or NotImplemented in any status. An operation
// or header that is optional for a store (ListParts, ListMultipartUploads, an offered checksum
// header, HEAD's checksum mode) answered this way means "this store does not do that", not a
// failed write: the writer goes on with the proof it can still get and says what it skipped.
// Both adapters give the same answer for the same response (store/parity_test.go).
func Unsupported(err error) bool {
	var re *ResponseError
	if !errors.As(err, &re) {
		return false
	}
	switch re.StatusCode {
	case 405, 501:
		return true
	}
	return re.Code == "MethodNotAllowed" || re.Code == "NotImplemented"
}
