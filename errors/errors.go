package errors

import (
	stderrors "errors"
	"fmt"
	"strings"
)

// Kind is the class of a failure: what a caller may do about it.
type Kind int

// The kinds. The zero value is Unknown, which Classify never returns for a non-nil error.
const (
	Unknown Kind = iota
	// Transient: 5xx, timeouts, connection resets. Retry with backoff.
	Transient
	// Throttled: the store asked us to slow down. Retry with a longer backoff.
	Throttled
	// Integrity: bytes did not arrive or land as sent (BadDigest, checksum mismatch, a verify
	// failure). Retry only from the clean source bytes, a bounded number of times.
	Integrity
	// Compatibility: the store rejects this layout or header (EntityTooSmall, InvalidPart,
	// NotImplemented, too many parts). Retrying the same request cannot help; change the profile.
	Compatibility
	// Precondition: a conditional write failed (412) or conflicted (409): the key exists.
	Precondition
	// Permanent: credentials, permissions, missing bucket, bad input. Do not retry.
	Permanent
	// Canceled: the caller's context ended.
	Canceled
	// Internal: a recovered panic or a broken invariant of safeput's own.
	Internal
)

var kindNames = [...]string{
	Unknown:       "unknown",
	Transient:     "transient",
	Throttled:     "throttled",
	Integrity:     "integrity",
	Compatibility: "compatibility",
	Precondition:  "precondition",
	Permanent:     "permanent",
	Canceled:      "canceled",
	Internal:      "internal",
}

// Kinds lists every kind Classify can return, in declaration order. It returns a new slice each
// time: no caller can change what another sees.
func Kinds() []Kind {
	return []Kind{Transient, Throttled, Integrity, Compatibility, Precondition, Permanent, Canceled, Internal}
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error makes a Kind usable as a sentinel: errors.Is(err, errors.Integrity).
func (k Kind) Error() string { return "safeput: " + k.String() }

// Error is safeput's classified error. Fields that do not apply are zero.
type Error struct {
	Kind       Kind
	Op         string // S3 operation or safeput step: PutObject, UploadPart, Complete, Head, Verify, ...
	Bucket     string
	Key        string
	UploadID   string
	PartNumber int32
	Attempts   int
	StatusCode int
	Code       string // S3 error code
	RequestID  string
	Message    string // the store's message, or ours
	// AbortFailed is set when the upload UploadID could not be aborted: a sweep must find it.
	AbortFailed bool
	// ObjectLeft is set when a failed write's own object is at the key, not proven to be the
	// source: it was committed (or, after a lost Complete answer, most likely was) but could not
	// be checked, or it was found corrupt or unproven and deleting it failed. Readers of the key
	// may see damaged bytes until it is rewritten.
	ObjectLeft bool
	// UploadGone is set for NoSuchUpload outside Complete: the upload id is dead, so re-sending
	// this request cannot succeed, but restarting the whole upload can (Kind is Transient).
	UploadGone bool
	// StoreFull is set when the store answered that it has no room for the bytes (Code and
	// Message stay the store's: see the package doc for the answers meant). Kind is Transient:
	// waiting helps once space is freed (deletes, expiry, the store's clean-up of aborted
	// uploads), so a later run may land what this one could not.
	StoreFull bool
	Err       error
}

// Error renders one log line: op, bucket/key, part, kind, code, status, attempts, upload,
// request id, message and cause. Credentials and signatures are redacted (see Redact).
func (e *Error) Error() string {
	if e == nil {
		return "safeput: <nil>"
	}
	var b strings.Builder
	b.WriteString("safeput: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteByte(' ')
	}
	if e.Bucket != "" || e.Key != "" {
		b.WriteString(e.Bucket)
		b.WriteByte('/')
		b.WriteString(e.Key)
		b.WriteByte(' ')
	}
	if e.PartNumber > 0 {
		fmt.Fprintf(&b, "part %d ", e.PartNumber)
	}
	b.WriteString(e.Kind.String())
	if e.Code != "" {
		b.WriteString(" code=")
		b.WriteString(e.Code)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " status=%d", e.StatusCode)
	}
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " attempts=%d", e.Attempts)
	}
	if e.UploadID != "" {
		b.WriteString(" upload=")
		b.WriteString(e.UploadID)
	}
	if e.RequestID != "" {
		b.WriteString(" request=")
		b.WriteString(e.RequestID)
	}
	if e.AbortFailed {
		b.WriteString(" (abort failed: upload left behind)")
	}
	if e.ObjectLeft {
		b.WriteString(" (object left: an unproven object of this write is at the key)")
	}
	if e.UploadGone {
		b.WriteString(" (upload gone: restart it)")
	}
	if e.StoreFull {
		b.WriteString(" (store full: retry once space is freed)")
	}
	// Redact before comparing: the message is stored redacted, the cause's text is not.
	msg := Redact(e.Message)
	var cause string
	if e.Err != nil {
		cause = Redact(e.Err.Error())
	}
	// Print the message and the cause once each: an adapter's cause usually repeats the store's
	// message, and ours usually does not.
	switch {
	case msg != "" && cause != "" && strings.Contains(cause, msg):
		b.WriteString(": ")
		b.WriteString(cause)
	case msg != "":
		b.WriteString(": ")
		b.WriteString(msg)
		if cause != "" && !strings.Contains(msg, cause) {
			b.WriteString(": ")
			b.WriteString(cause)
		}
	case cause != "":
		b.WriteString(": ")
		b.WriteString(cause)
	}
	return Redact(oneLine(b.String()))
}

// oneLine keeps a log line one line: store messages and causes may carry newlines.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// Retryable reports whether running the whole write again may succeed, once safeput's own
// retries are spent: what a caller that re-drives its tasks (a sync manager) asks. Transient and
// Throttled are, an upload the store dropped (UploadGone) included, since a new upload can work;
// so is Unknown, as Milvus's ClassifySyncError defaults to. Integrity is not: safeput already
// re-sent from the caller's clean bytes, so a mismatch that survives that points at corrupt source
// memory or a broken store, and running it again would repeat it. Canceled is the caller's own
// stop, and the other kinds cannot succeed unchanged.
func (e *Error) Retryable() bool {
	if e == nil {
		return false
	}
	switch e.Kind {
	case Unknown, Transient, Throttled:
		return true
	}
	return false
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is makes errors.Is(err, Kind) true for the error's kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && e != nil && k == e.Kind
}

// KindOf returns the Kind of err: the first *Error in its chain, else Classify's answer.
func KindOf(err error) Kind {
	if err == nil {
		return Unknown
	}
	var e *Error
	if stderrors.As(err, &e) && e != nil && e.Kind != Unknown {
		return e.Kind
	}
	return Classify(err).Kind
}

// New returns an *Error of kind k with a message of ours.
func New(k Kind, op, format string, args ...any) *Error {
	return &Error{Kind: k, Op: op, Message: fmt.Sprintf(format, args...)}
}

// FromPanic turns a recovered panic value into an Internal error, so a bug in a callback or in
// safeput surfaces as an error the caller can log instead of a crash.
func FromPanic(op string, recovered any) *Error {
	e := &Error{Kind: Internal, Op: op, Message: fmt.Sprintf("panic: %v", recovered)}
	if err, ok := recovered.(error); ok {
		e.Err = err
	}
	return e
}
