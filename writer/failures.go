package writer

import (
	"context"
	stderrors "errors"
	"fmt"
	"runtime/debug"
	"strings"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
)

// fail records the first error (sticky) and cancels in-flight work; it returns the sticky error.
func (w *Writer) fail(err error) error {
	if err == nil {
		return nil
	}
	w.mu.Lock()
	if w.outcome.err == nil {
		w.outcome.err = err
	}
	first := w.outcome.err
	w.mu.Unlock()
	w.cancel()
	return first
}

func (w *Writer) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.outcome.err
}

// errorSite builds the write's classified errors: each names the bucket, the key and the upload
// the write is in when it is made. It owns nothing that changes; every step that fails takes one.
type errorSite struct {
	// ctx is the write's: a source failing after it ended is the write being cancelled.
	ctx         context.Context
	bucket, key string
	upload      openUpload // the upload the write is in, named by its errors
	// replayable: the source can be read again, so a vanished upload is not the write's end.
	replayable bool
}

// openUpload is the write's upload as its errors and logs name it: the id open now, "" when
// none is (uploadSession.current).
type openUpload interface{ current() string }

// uploadID is the write's open upload, "" when none is.
func (s errorSite) uploadID() string { return uploadIDOf(s.upload) }

func uploadIDOf(u openUpload) string {
	if u == nil {
		return ""
	}
	return u.current()
}

func (s errorSite) errorf(k sperrors.Kind, op string, cause error, format string, args ...any) *sperrors.Error {
	return &sperrors.Error{Kind: k, Op: op, Bucket: s.bucket, Key: s.key, UploadID: s.uploadID(), Message: fmt.Sprintf(format, args...), Err: cause}
}

func (s errorSite) integrity(op string, part int32, cause error) *sperrors.Error {
	e := s.errorf(sperrors.Integrity, op, cause, "%v", cause)
	e.PartNumber = part
	return e
}

// vanishedMessage is what a write says when the store dropped its multipart upload: the words
// are the writer's, the same through every adapter (the store's code stays in Code).
const vanishedMessage = "the store no longer has this write's multipart upload: it was aborted elsewhere " +
	"(a sweep of incomplete uploads, a lifecycle rule, another client) while the write was sending it, " +
	"and the parts sent went with it"

// vanishedStream ends that message for a source that cannot be read again.
const vanishedStream = "the source is a stream whose bytes already sent are gone, so the write cannot go on " +
	"and committed nothing: write the object again from its source"

// uploadVanished is the failure of a write whose upload the store no longer has (NoSuchUpload,
// or RGW's NoSuchKey, to op): Transient with UploadGone, the store's code, status and request id
// kept, and a message that says the upload was aborted elsewhere, not a generic transient
// failure. Upload starts a new upload for a source it can read again (decider.uploadAnew); a
// stream's write ends here, and the message says why. detail adds what the write found.
func (s errorSite) uploadVanished(op string, part int32, cause error, detail string) *sperrors.Error {
	e := s.errorf(sperrors.Transient, op, cause, "%s", vanishedMessage)
	e.PartNumber, e.UploadGone = part, true
	if ce := asError(cause); ce != nil {
		e.StatusCode, e.Code, e.RequestID, e.Attempts = ce.StatusCode, ce.Code, ce.RequestID, ce.Attempts
		if ce.UploadID != "" {
			e.UploadID = ce.UploadID
		}
		if ce.Err != nil {
			e.Err = ce.Err // the store's answer, not the generic line this error replaces
		}
	} else if re := (*store.ResponseError)(nil); stderrors.As(cause, &re) {
		e.StatusCode, e.Code, e.RequestID = re.StatusCode, re.Code, re.RequestID
	}
	if detail != "" {
		e.Message += "; " + detail
	}
	if !s.replayable {
		e.Message += "; " + vanishedStream
	}
	return e
}

// sourceError classifies a failure to read the caller's source: Canceled when it is the
// context ending (a reader that honours ctx), else Permanent (retrying the store cannot help).
func (s errorSite) sourceError(op string, part int32, err error) *sperrors.Error {
	if s.ctx.Err() != nil || stderrors.Is(err, context.Canceled) || stderrors.Is(err, context.DeadlineExceeded) {
		e := s.canceled(op, err)
		e.PartNumber = part
		return e
	}
	e := s.errorf(sperrors.Permanent, op, err, "reading the source failed")
	e.PartNumber = part
	return e
}

func (s errorSite) canceled(op string, cause error) *sperrors.Error {
	return s.errorf(sperrors.Canceled, op, cause, "the write's context ended")
}

// recoverTo turns a panic in a part goroutine into an Internal error instead of a crash.
func (w *Writer) recoverTo(op string, part int32) {
	if r := recover(); r != nil {
		e := w.errs.errorf(sperrors.Internal, op, nil, "recovered panic: %v", r)
		e.PartNumber = part
		w.log.Error("panic recovered", zap.String("op", op), zap.Int32("part", part), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		_ = w.fail(e)
	}
}

// emitter delivers the write's events to the caller's observer and the write's span, stamped
// with the bucket and key; a panic in either stays theirs.
type emitter struct {
	bucket, key string
	observer    func(Event)
	span        WriteSpan
}

func (m emitter) emit(e Event) {
	if m.observer == nil && m.span == nil {
		return
	}
	e.Bucket, e.Key = m.bucket, m.key
	if m.span != nil {
		safeCall(m.span.Event, e)
	}
	if m.observer != nil {
		safeCall(m.observer, e)
	}
}

// safeCall calls fn(e); a panic in an observer or instrumentation must not break the write.
func safeCall(fn func(Event), e Event) {
	defer func() { _ = recover() }()
	fn(e)
}

func asError(err error) *sperrors.Error {
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		return e
	}
	return nil
}

func isPrecondition(err error) bool {
	e := asError(err)
	return e != nil && e.Kind == sperrors.Precondition
}

// isNoSuchUpload: the upload a request names is gone. Ceph RGW answers ListParts of a finished or
// aborted upload with 404 NoSuchKey instead of NoSuchUpload; every caller asks about a request
// that names an upload in a bucket that exists, so NoSuchKey there means the same.
func isNoSuchUpload(err error) bool { return hasCode(err, "NoSuchUpload") || hasCode(err, "NoSuchKey") }

// recreatedWithoutChecksum reports Versity's refusal of a Complete whose upload holds no checksum
// mode: sent by a write that created its upload with one, it says the upload was aborted and a
// part still in flight re-created it (the posix backend makes the upload's directory again, but
// not its checksum attributes).
func recreatedWithoutChecksum(err error) bool {
	var re *store.ResponseError
	return hasCode(err, "InvalidRequest") && stderrors.As(err, &re) && strings.Contains(re.Message, "created using the null checksum mode")
}

func hasCode(err error, code string) bool {
	if err == nil {
		return false
	}
	if e := asError(err); e != nil && e.Code == code {
		return true
	}
	var re *store.ResponseError
	return stderrors.As(err, &re) && re.Code == code
}

func classifyRule(op, bucket, key string, err error) error {
	var re *multipart.RuleError
	kind := sperrors.Permanent
	if stderrors.As(err, &re) {
		kind = sperrors.Compatibility
	}
	return &sperrors.Error{Kind: kind, Op: op, Bucket: bucket, Key: key, Message: err.Error(), Err: err}
}
