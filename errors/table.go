package errors

import "strings"

// codeRule maps one S3 error code to a Kind. It is the single source of the code table: Classify
// reads it, doc.go prints it (a test keeps them equal) and the tests are driven by it.
type codeRule struct {
	Code string
	// Status is the HTTP status stores usually send with Code; documentation only, since Classify
	// trusts the code over the status.
	Status int
	Kind   Kind
	// OnComplete, when not Unknown, is the Kind for CompleteMultipartUpload.
	OnComplete Kind
	// UploadGone marks the code as "the multipart upload no longer exists" outside Complete.
	UploadGone bool
	Note       string
}

// CodeUnverifiable is the Code of the Integrity error a write ends with when it landed but
// nothing could prove its content (no checksum from the store, no MD5 ETag, no read-back) and
// length-only verification was not allowed. Status 0: no store sends it.
const CodeUnverifiable = "Unverifiable"

// CodeEncryptionNotApplied is the Code of the Compatibility error of a write whose object landed
// without the server-side encryption asked for: the HEAD after commit reported none, or another
// kind, KMS key or customer-key MD5 (a store or gateway that ignores the headers answers 200).
// The write's own object is deleted. Status 0: no store sends it.
const CodeEncryptionNotApplied = "EncryptionNotApplied"

// storeFullCodes are the codes with which stores say they have no room for the bytes: MinIO
// when no drive has room above its free-space threshold (cmd/api-errors.go, ErrStorageFull),
// Versity's gateway when its posix backend gets ENOSPC (s3err.ErrNoSpaceLeftOnDevice). Each has
// a row in codeTable.
var storeFullCodes = []string{"XMinioStorageFull", "InsufficientStorage"}

// noSpaceCause is how MinIO names ENOSPC in the message of the InternalError it answers when a
// drive fills while the bytes are being written ("...: cause(no space left on device)").
const noSpaceCause = "no space left on device"

// storeFull reports whether an answer says the store has no room for the bytes: a code in
// storeFullCodes, HTTP 507, or a server error whose message names ENOSPC.
func storeFull(status int, code, message string) bool {
	for _, c := range storeFullCodes {
		if strings.EqualFold(code, c) {
			return true
		}
	}
	if status == 507 {
		return true
	}
	return (status >= 500 || strings.EqualFold(code, "InternalError")) && strings.Contains(strings.ToLower(message), noSpaceCause)
}

// codeTable is ordered by kind, then code, for the documentation.
var codeTable = []codeRule{
	// Transient: the store failed this request; the same request may succeed later.
	{"InternalError", 500, Transient, Unknown, false, "also embedded in a 200 Complete body"},
	{"ServiceUnavailable", 503, Transient, Unknown, false, ""},
	{"Unavailable", 503, Transient, Unknown, false, "Wasabi"},
	{"RequestTimeout", 400, Transient, Unknown, false, "socket idle too long; Ceph may send 408"},
	{"RequestTimeoutException", 400, Transient, Unknown, false, ""},
	{"OperationAborted", 409, Transient, Unknown, false, "a conflicting operation is in progress"},
	{"DisconnectError", 410, Transient, Unknown, false, "Wasabi"},
	{"RequestTimeTooSkewed", 403, Transient, Unknown, false, "the SDK corrects its clock offset from the answer"},
	{"Stalled", 0, Transient, Unknown, false, "client-side: no progress for the stall window; sent again"},
	{"NoSuchUpload", 404, Transient, Precondition, true, "Complete: check whether it landed; elsewhere UploadGone: restart the upload"},
	{"XMinioStorageFull", 507, Transient, Unknown, false, "MinIO: no drive has room above its free-space threshold; StoreFull"},
	{"InsufficientStorage", 507, Transient, Unknown, false, "Versity gateway: no space left on device; StoreFull"},
	// Throttled: the store asked us to slow down.
	{"SlowDown", 503, Throttled, Unknown, false, ""},
	{"SlowDownRead", 503, Throttled, Unknown, false, "MinIO"},
	{"SlowDownWrite", 503, Throttled, Unknown, false, "MinIO"},
	{"Throttling", 400, Throttled, Unknown, false, ""},
	{"ThrottlingException", 400, Throttled, Unknown, false, ""},
	{"ThrottledException", 400, Throttled, Unknown, false, ""},
	{"RequestThrottled", 400, Throttled, Unknown, false, ""},
	{"RequestThrottledException", 400, Throttled, Unknown, false, ""},
	{"TooManyRequests", 429, Throttled, Unknown, false, ""},
	{"TooManyRequestsException", 429, Throttled, Unknown, false, ""},
	{"RequestLimitExceeded", 503, Throttled, Unknown, false, ""},
	{"RequestRateLimitExceeded", 503, Throttled, Unknown, false, "Wasabi"},
	{"BandwidthLimitExceeded", 509, Throttled, Unknown, false, ""},
	{"LimitExceededException", 400, Throttled, Unknown, false, ""},
	{"ProvisionedThroughputExceededException", 400, Throttled, Unknown, false, ""},
	{"TransactionInProgressException", 400, Throttled, Unknown, false, ""},
	{"PriorRequestNotComplete", 400, Throttled, Unknown, false, ""},
	{"EC2ThrottledException", 400, Throttled, Unknown, false, ""},
	// Integrity: the bytes did not arrive as sent.
	{"BadDigest", 400, Integrity, Unknown, false, "Content-MD5 or x-amz-checksum-* mismatch"},
	{"InvalidDigest", 400, Integrity, Unknown, false, "Garage's MD5 mismatch; we always send well-formed digests"},
	{"XAmzContentChecksumMismatch", 400, Integrity, Unknown, false, "MinIO"},
	{"XAmzContentSHA256Mismatch", 400, Integrity, Unknown, false, "SigV4 payload hash mismatch"},
	{"IncompleteBody", 400, Integrity, Unknown, false, "fewer bytes than Content-Length arrived"},
	{CodeUnverifiable, 0, Integrity, Unknown, false, "safeput's own, never a store's: no evidence could prove the object (message says what was missing); not retried"},
	// Compatibility: this store rejects this layout or header.
	{"EntityTooSmall", 400, Compatibility, Unknown, false, "part below the store's minimum"},
	{"EntityTooLarge", 400, Compatibility, Unknown, false, ""},
	{"InvalidPart", 400, Compatibility, Unknown, false, "missing part, ETag mismatch, R2 unequal parts"},
	{"InvalidPartOrder", 400, Compatibility, Unknown, false, ""},
	{"NotImplemented", 501, Compatibility, Unknown, false, "a header the store does not support"},
	{CodeEncryptionNotApplied, 0, Compatibility, Unknown, false, "safeput's own: the HEAD after commit showed no or other server-side encryption than asked; the object was deleted"},
	// Precondition: a conditional write failed.
	{"PreconditionFailed", 412, Precondition, Unknown, false, "If-None-Match: the key exists"},
	{"ConditionalRequestConflict", 409, Precondition, Unknown, false, "concurrent conditional write; restart the upload"},
	// Permanent: retrying cannot help.
	{"AccessDenied", 403, Permanent, Unknown, false, ""},
	{"AllAccessDisabled", 403, Permanent, Unknown, false, ""},
	{"AccountProblem", 403, Permanent, Unknown, false, ""},
	{"InvalidAccessKeyId", 403, Permanent, Unknown, false, ""},
	{"SignatureDoesNotMatch", 403, Permanent, Unknown, false, ""},
	{"ExpiredToken", 400, Permanent, Unknown, false, ""},
	{"InvalidToken", 400, Permanent, Unknown, false, ""},
	{"AuthorizationHeaderMalformed", 400, Permanent, Unknown, false, "wrong region"},
	{"PermanentRedirect", 301, Permanent, Unknown, false, "wrong endpoint"},
	{"NoSuchBucket", 404, Permanent, Unknown, false, ""},
	{"NoSuchKey", 404, Permanent, Unknown, false, ""},
	{"InvalidBucketName", 400, Permanent, Unknown, false, ""},
	{"InvalidArgument", 400, Permanent, Unknown, false, ""},
	{"InvalidRequest", 400, Permanent, Unknown, false, ""},
	{"MalformedXML", 400, Permanent, Unknown, false, ""},
	{"MethodNotAllowed", 405, Permanent, Unknown, false, ""},
	{"MissingContentLength", 411, Permanent, Unknown, false, ""},
	{"KeyTooLongError", 400, Permanent, Unknown, false, ""},
	{"MetadataTooLarge", 400, Permanent, Unknown, false, ""},
}

// statusRule maps an HTTP status to a Kind when the answer carried no code Classify knows.
type statusRule struct {
	Status int
	Kind   Kind
	Note   string
}

var statusTable = []statusRule{
	{408, Transient, "request timeout"},
	{409, Permanent, "a conflict without ConditionalRequestConflict"},
	{412, Precondition, "HEAD and other bodiless answers carry no code"},
	{429, Throttled, "too many requests"},
	{499, Transient, "client closed request (proxies)"},
	{500, Transient, ""},
	{501, Compatibility, "not implemented: a header or feature the store lacks"},
	{502, Transient, ""},
	{503, Transient, "a throttle code makes it Throttled"},
	{504, Transient, ""},
	{507, Transient, "insufficient storage: StoreFull"},
}

var (
	codeIndex   = indexCodes()
	statusIndex = indexStatuses()
)

func indexCodes() map[string]*codeRule {
	m := make(map[string]*codeRule, len(codeTable))
	for i := range codeTable {
		m[strings.ToLower(codeTable[i].Code)] = &codeTable[i]
	}
	return m
}

func indexStatuses() map[int]Kind {
	m := make(map[int]Kind, len(statusTable))
	for _, r := range statusTable {
		m[r.Status] = r.Kind
	}
	return m
}

// isCompleteOp reports whether op names CompleteMultipartUpload, under either of the names
// safeput and the SDKs use.
func isCompleteOp(op string) bool {
	return strings.EqualFold(op, "Complete") || strings.EqualFold(op, "CompleteMultipartUpload")
}

// lookupCode returns the rule's Kind for code under op, and whether the upload is gone.
func lookupCode(code, op string) (k Kind, gone bool, ok bool) {
	r := codeIndex[strings.ToLower(strings.TrimSpace(code))]
	if r == nil {
		return Unknown, false, false
	}
	if isCompleteOp(op) && r.OnComplete != Unknown {
		return r.OnComplete, false, true
	}
	return r.Kind, r.UploadGone, true
}

// statusKind classifies an error status (>= 400) that carried no known code.
func statusKind(status int) Kind {
	if k, ok := statusIndex[status]; ok {
		return k
	}
	if status >= 500 {
		return Transient
	}
	return Permanent
}
