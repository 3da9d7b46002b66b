package faulty

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/safeput/safeput/store"
)

// Operation names, as in store.ResponseError.Op.
const (
	AnyOp                   = "*"
	OpPutObject             = "PutObject"
	OpCreateMultipartUpload = "CreateMultipartUpload"
	OpUploadPart            = "UploadPart"
	OpListParts             = "ListParts"
	OpCompleteMultipart     = "CompleteMultipartUpload"
	OpAbortMultipart        = "AbortMultipartUpload"
	OpHeadObject            = "HeadObject"
	OpGetObject             = "GetObject"
	OpDeleteObject          = "DeleteObject"
	OpListMultipartUploads  = "ListMultipartUploads"
)

type kind uint8

const (
	kindNone     kind = iota
	kindResponse      // answer with an error response, inner not called
	kindReset         // connection reset while sending the body
	kindDrop          // inner called, answer lost
	kindTruncate      // inner gets half the body, caller gets a faked success
	kindFlip          // inner gets the body with one byte flipped, caller gets a faked success
	kindHang          // block until the context is done
	kindGoneAfterCommit
)

// scope limits where a fault can happen; a rule never matches an operation its fault cannot
// happen on.
type scope uint8

const (
	scopeAny      scope = iota
	scopeBody           // PutObject, UploadPart with a non-empty body
	scopeComplete       // CompleteMultipartUpload
)

// Fault is one kind of failure the wrapper can inject. Faults are comparable, so tests can
// count them in Injected. The zero Fault injects nothing.
type Fault struct {
	name    string
	kind    kind
	scope   scope
	status  int
	code    string
	message string
}

// The predefined faults. Each is a function, not a variable: a fault is a value the caller
// passes around and compares, never shared state a test could change for every other.

// SlowDown answers 503 SlowDown without calling the inner store.
func SlowDown() Fault {
	return Fault{name: "SlowDown", kind: kindResponse, status: 503, code: "SlowDown", message: "Please reduce your request rate."}
}

// InternalError answers 500 InternalError without calling the inner store.
func InternalError() Fault {
	return Fault{name: "InternalError", kind: kindResponse, status: 500, code: "InternalError", message: "We encountered an internal error. Please try again."}
}

// ChecksumMismatch answers 400 XAmzContentChecksumMismatch (MinIO's code for a body that
// does not match its x-amz-checksum) to PutObject and UploadPart, without calling the inner
// store.
func ChecksumMismatch() Fault {
	return Fault{name: "ChecksumMismatch", kind: kindResponse, scope: scopeBody, status: 400, code: "XAmzContentChecksumMismatch",
		message: "The provided 'x-amz-checksum' header does not match what was computed."}
}

// Forbidden answers 403 AccessDenied without calling the inner store.
func Forbidden() Fault {
	return Fault{name: "Forbidden", kind: kindResponse, status: 403, code: "AccessDenied", message: "Access Denied"}
}

// EntityTooSmall answers CompleteMultipartUpload with 400 EntityTooSmall without calling the
// inner store.
func EntityTooSmall() Fault {
	return Fault{name: "EntityTooSmall", kind: kindResponse, scope: scopeComplete, status: 400, code: "EntityTooSmall",
		message: "Your proposed upload is smaller than the minimum allowed size"}
}

// UnequalParts answers CompleteMultipartUpload with R2's 400 InvalidPart for unequal parts,
// without calling the inner store.
func UnequalParts() Fault {
	return Fault{name: "UnequalParts", kind: kindResponse, scope: scopeComplete, status: 400, code: "InvalidPart",
		message: "All non-trailing parts must have the same length."}
}

// ResetMidBody reads half the body, then fails with a connection reset (*net.OpError
// wrapping syscall.ECONNRESET) without calling the inner store. On operations without a body
// it fails at once.
func ResetMidBody() Fault {
	return Fault{name: "ResetMidBody", kind: kindReset}
}

// DropResponse calls the inner store, so the operation takes effect, then returns a
// transport error (wrapping io.ErrUnexpectedEOF) instead of its answer: the lost response.
func DropResponse() Fault {
	return Fault{name: "DropResponse", kind: kindDrop}
}

// Truncate sends the first half of a PutObject or UploadPart body to the inner store, with
// Content-MD5 dropped and the checksum recomputed over the half so the store accepts it, and
// returns the store's success (its real ETag) with the echoed checksums replaced by the
// caller's: a store that keeps a truncated object and says OK.
func Truncate() Fault {
	return Fault{name: "Truncate", kind: kindTruncate, scope: scopeBody}
}

// FlipByte is Truncate with the middle byte of the body inverted instead of cut.
func FlipByte() Fault {
	return Fault{name: "FlipByte", kind: kindFlip, scope: scopeBody}
}

// Hang blocks until the context is done, then returns its error, without calling the inner
// store.
func Hang() Fault {
	return Fault{name: "Hang", kind: kindHang}
}

// NoSuchUploadAfterCommit calls the inner CompleteMultipartUpload and, when it succeeds,
// answers 404 NoSuchUpload instead: MinIO's answer to a re-sent Complete. Put it after a
// DropResponse on Complete to replay a lost answer followed by a retry.
func NoSuchUploadAfterCommit() Fault {
	return Fault{name: "NoSuchUploadAfterCommit", kind: kindGoneAfterCommit, scope: scopeComplete, status: 404, code: "NoSuchUpload",
		message: "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."}
}

// All returns every predefined fault.
func All() []Fault {
	return []Fault{SlowDown(), InternalError(), ChecksumMismatch(), Forbidden(), EntityTooSmall(), UnequalParts(),
		ResetMidBody(), DropResponse(), Truncate(), FlipByte(), Hang(), NoSuchUploadAfterCommit()}
}

// Response returns a fault that answers any operation with the given status, S3 error code and
// message without calling the inner store (429, 501 NotImplemented, 409 ConditionalRequestConflict...).
func Response(status int, code, message string) Fault {
	return Fault{name: fmt.Sprintf("Response(%d %s)", status, code), kind: kindResponse, status: status, code: code, message: message}
}

// String names the fault.
func (f Fault) String() string {
	if f.kind == kindNone {
		return "NoFault"
	}
	return f.name
}

// AppliesTo reports whether the fault can happen on operation op. Rules with a fault that does
// not apply never match that operation.
func (f Fault) AppliesTo(op string) bool {
	switch f.scope {
	case scopeBody:
		return op == OpPutObject || op == OpUploadPart
	case scopeComplete:
		return op == OpCompleteMultipart
	}
	return f.kind != kindNone
}

// needsBytes reports whether the fault has nothing to corrupt in an empty body.
func (f Fault) needsBytes() bool { return f.kind == kindTruncate || f.kind == kindFlip }

func (f Fault) responseError(op, rid string) *store.ResponseError {
	return &store.ResponseError{Op: op, StatusCode: f.status, Code: f.code, Message: f.message, RequestID: rid}
}

// connReset is what a reset TCP connection looks like from net/http's side.
func connReset(write bool) error {
	op := "read"
	if write {
		op = "write"
	}
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, syscall.ECONNRESET)}
}
