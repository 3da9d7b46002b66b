// Package errors defines safeput's one error type, *Error, and the Kind taxonomy callers act on.
//
// Every error safeput returns from a public API unwraps (errors.As) to *Error, whose Kind says
// what is safe to do next. errors.Is(err, errors.Integrity) (any Kind is a sentinel) asks the
// kind; errors.Is and errors.As also reach the cause through any wrapping. A sync manager decides
// with Retryable (run the task again) and Kind Canceled (stop quietly); the rest is terminal.
//
// This package imports nothing else from safeput: store adapters' raw facts are read through
// small interfaces (HTTPStatusCode, ErrorCode, ErrorMessage, ServiceRequestID, Operation), which
// store.ResponseError and the AWS SDK's errors implement, so the classification table stays here.
//
// # Classification
//
// Classify turns any error into an *Error; see its documentation for the order of the rules.
// Classify treats context.Canceled and context.DeadlineExceeded as Canceled wherever they come
// from. A per-attempt timeout is not the caller giving up: ClassifyContext(ctx, err) returns Canceled
// only when the caller's ctx is done, and Transient otherwise.
//
// NoSuchUpload depends on the operation. On CompleteMultipartUpload it is Precondition: the
// upload may have completed on an earlier attempt (S3 replays success, MinIO and COS answer
// NoSuchUpload), so the caller must HEAD the key and compare before failing. Elsewhere it is
// Transient with UploadGone set: re-sending the request cannot work, restarting the upload can,
// so retry.Policy does not re-send it and a sync manager re-drives the task.
//
// A full store is Transient with StoreFull set, its code and message the store's: MinIO answers
// 507 XMinioStorageFull when no drive has room above its free-space threshold, and 500
// InternalError whose message ends "cause(no space left on device)" when a drive fills while the
// bytes are written (which of the two a write ends with depends on where each attempt failed);
// Versity's gateway answers 507 InsufficientStorage; any 507, or a server error naming ENOSPC,
// counts too. Waiting helps once space is freed (deletes, expiry, the store's clean-up of aborted
// uploads): a sync manager runs the task again later (Retryable), and safeput's own retries
// within a write are bounded as for any Transient failure.
//
// Messages never carry credentials: Error() redacts the Authorization header, session tokens,
// SSE-C keys, Credential=, Signature=, URL passwords and access key ids in every form a message
// prints them in, and every secret value the adapters were given or sent (their secret keys and
// session tokens, renewed ones included, and SSE-C keys raw and base64), wherever it appears
// (Redact).
//
// # S3 error codes
//
// The codes Classify knows. The status is the one stores usually send; the code wins
// over the status. A test keeps this list equal to the table; to rewrite it, run
// go test -run TestDocTable ./errors/ -args -update.
//
//	Code                                    Status  Kind                               Note
//	InternalError                           500     transient                          also embedded in a 200 Complete body
//	ServiceUnavailable                      503     transient
//	Unavailable                             503     transient                          Wasabi
//	RequestTimeout                          400     transient                          socket idle too long; Ceph may send 408
//	RequestTimeoutException                 400     transient
//	OperationAborted                        409     transient                          a conflicting operation is in progress
//	DisconnectError                         410     transient                          Wasabi
//	RequestTimeTooSkewed                    403     transient                          the SDK corrects its clock offset from the answer
//	Stalled                                 0       transient                          client-side: no progress for the stall window; sent again
//	NoSuchUpload                            404     transient; Complete: precondition  Complete: check whether it landed; elsewhere UploadGone: restart the upload
//	XMinioStorageFull                       507     transient                          MinIO: no drive has room above its free-space threshold; StoreFull
//	InsufficientStorage                     507     transient                          Versity gateway: no space left on device; StoreFull
//	SlowDown                                503     throttled
//	SlowDownRead                            503     throttled                          MinIO
//	SlowDownWrite                           503     throttled                          MinIO
//	Throttling                              400     throttled
//	ThrottlingException                     400     throttled
//	ThrottledException                      400     throttled
//	RequestThrottled                        400     throttled
//	RequestThrottledException               400     throttled
//	TooManyRequests                         429     throttled
//	TooManyRequestsException                429     throttled
//	RequestLimitExceeded                    503     throttled
//	RequestRateLimitExceeded                503     throttled                          Wasabi
//	BandwidthLimitExceeded                  509     throttled
//	LimitExceededException                  400     throttled
//	ProvisionedThroughputExceededException  400     throttled
//	TransactionInProgressException          400     throttled
//	PriorRequestNotComplete                 400     throttled
//	EC2ThrottledException                   400     throttled
//	BadDigest                               400     integrity                          Content-MD5 or x-amz-checksum-* mismatch
//	InvalidDigest                           400     integrity                          Garage's MD5 mismatch; we always send well-formed digests
//	XAmzContentChecksumMismatch             400     integrity                          MinIO
//	XAmzContentSHA256Mismatch               400     integrity                          SigV4 payload hash mismatch
//	IncompleteBody                          400     integrity                          fewer bytes than Content-Length arrived
//	Unverifiable                            0       integrity                          safeput's own, never a store's: no evidence could prove the object (message says what was missing); not retried
//	EntityTooSmall                          400     compatibility                      part below the store's minimum
//	EntityTooLarge                          400     compatibility
//	InvalidPart                             400     compatibility                      missing part, ETag mismatch, R2 unequal parts
//	InvalidPartOrder                        400     compatibility
//	NotImplemented                          501     compatibility                      a header the store does not support
//	EncryptionNotApplied                    0       compatibility                      safeput's own: the HEAD after commit showed no or other server-side encryption than asked; the object was deleted
//	PreconditionFailed                      412     precondition                       If-None-Match: the key exists
//	ConditionalRequestConflict              409     precondition                       concurrent conditional write; restart the upload
//	AccessDenied                            403     permanent
//	AllAccessDisabled                       403     permanent
//	AccountProblem                          403     permanent
//	InvalidAccessKeyId                      403     permanent
//	SignatureDoesNotMatch                   403     permanent
//	ExpiredToken                            400     permanent
//	InvalidToken                            400     permanent
//	AuthorizationHeaderMalformed            400     permanent                          wrong region
//	PermanentRedirect                       301     permanent                          wrong endpoint
//	NoSuchBucket                            404     permanent
//	NoSuchKey                               404     permanent
//	InvalidBucketName                       400     permanent
//	InvalidArgument                         400     permanent
//	InvalidRequest                          400     permanent
//	MalformedXML                            400     permanent
//	MethodNotAllowed                        405     permanent
//	MissingContentLength                    411     permanent
//	KeyTooLongError                         400     permanent
//	MetadataTooLarge                        400     permanent
//
// # HTTP statuses without a known code
//
// Statuses Classify knows. Any other status of 500 and above is Transient; any other 4xx is
// Permanent. An error status whose document the connection lost on the way (no code known) is
// Transient. A success status with an unknown code (an <Error> in a 200 Complete body) is
// Transient; a success status with no code at all is a non-compliant answer: Compatibility.
//
//	Status  Kind           Note
//	408     transient      request timeout
//	409     permanent      a conflict without ConditionalRequestConflict
//	412     precondition   HEAD and other bodiless answers carry no code
//	429     throttled      too many requests
//	499     transient      client closed request (proxies)
//	500     transient
//	501     compatibility  not implemented: a header or feature the store lacks
//	502     transient
//	503     transient      a throttle code makes it Throttled
//	504     transient
//	507     transient      insufficient storage: StoreFull
package errors
