// Package errors defines safeput's one error type, *Error, and the Kind taxonomy callers act on.
//
// Every error safeput returns from a public API unwraps (errors.As) to *Error, whose Kind says
// what is safe to do next. errors.Is(err, errors.Integrity) (any Kind is a sentinel) asks the
// kind; errors.Is and errors.As also reach the cause through any wrapping.
//
// This package imports nothing else from safeput: store adapters' raw facts are read through
// small interfaces (HTTPStatusCode, ErrorCode, ...), so the classification table stays here.
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

// Kinds lists every kind Classify can return, in declaration order.
var Kinds = []Kind{Transient, Throttled, Integrity, Compatibility, Precondition, Permanent, Canceled, Internal}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error makes a Kind usable as a sentinel: errors.Is(err, errors.Integrity).
func (k Kind) Error() string { return "safeput: " + k.String() }

// ParseKind returns the Kind named s (as printed by String).
func ParseKind(s string) (Kind, bool) {
	for k, n := range kindNames {
		if n == s && Kind(k) != Unknown {
			return Kind(k), true
		}
	}
	return Unknown, false
}

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
	Err         error
}

func (e *Error) Error() string {
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
	switch {
	case e.Message != "":
		b.WriteString(": ")
		b.WriteString(e.Message)
		if e.Err != nil && !strings.Contains(e.Message, e.Err.Error()) {
			b.WriteString(": ")
			b.WriteString(e.Err.Error())
		}
	case e.Err != nil:
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, Kind) true for the error's kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// KindOf returns the Kind of err: the first *Error in its chain, else Classify's answer.
func KindOf(err error) Kind {
	if err == nil {
		return Unknown
	}
	var e *Error
	if stderrors.As(err, &e) {
		return e.Kind
	}
	return Classify(err).Kind
}

// New returns an *Error of kind k with a message of ours.
func New(k Kind, op, format string, args ...any) *Error {
	return &Error{Kind: k, Op: op, Message: fmt.Sprintf(format, args...)}
}
