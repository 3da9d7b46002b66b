package writer

import (
	"context"
	stderrors "errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// do runs one store operation under the retry policy and folds its stats into the writer's.
func (w *Writer) do(op string, part int32, fn func(ctx context.Context, attempt int) error) error {
	return w.doSized(op, part, 0, fn)
}

// doSized is do for a request with a body of size bytes (logged with every retry).
func (w *Writer) doSized(op string, part int32, size int64, fn func(ctx context.Context, attempt int) error) error {
	uploadID := w.currentUploadID()
	var last error
	var lastEnd time.Time
	stats, err := w.policy.Do(w.ctx, retry.Op{Name: op, Bucket: w.bucket, Key: w.key, UploadID: uploadID, PartNumber: part, Size: size,
		FirstContact: w.facts.firstContact()},
		func(ctx context.Context, attempt int) error {
			if attempt > 1 {
				// The event says why this attempt is a retry: the previous attempt's failure.
				w.emit(Event{Type: EventRetry, UploadID: uploadID, PartNumber: part, Size: size, Attempt: attempt,
					Kind: sperrors.ClassifyContext(w.ctx, last).Kind, Err: last, Elapsed: time.Since(lastEnd)})
			}
			err := fn(ctx, attempt)
			w.facts.storeAnswered(err)
			last = err
			if err != nil {
				lastEnd = time.Now()
				// The policy cut this attempt (its stall window or timeout) while the write goes
				// on: the request saw only "context canceled"; the next attempt's event names
				// the cut, as the final error would (Code errors.CodeStalled).
				if cause := context.Cause(ctx); ctx.Err() != nil && w.ctx.Err() == nil && cause != nil && !stderrors.Is(err, cause) {
					last = fmt.Errorf("attempt cut: %w: %w", cause, err)
				}
			}
			return err
		})
	w.mu.Lock()
	w.tally.stats.Add(stats)
	w.mu.Unlock()
	if err != nil {
		if e := asError(err); e != nil {
			if e.Bucket == "" && e.Key == "" {
				e.Bucket, e.Key = w.bucket, w.key
			}
			if e.UploadID == "" {
				e.UploadID = uploadID
			}
			if e.PartNumber == 0 {
				e.PartNumber = part
			}
		}
		w.log.Debug("operation failed", zap.String("op", op), zap.Int32("part", part), zap.Int64("size", size),
			zap.String("upload_id", uploadID), zap.Int("attempt", stats.Attempts), zap.Error(err))
	}
	return err
}

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

func (w *Writer) errorf(k sperrors.Kind, op string, cause error, format string, args ...any) *sperrors.Error {
	return &sperrors.Error{Kind: k, Op: op, Bucket: w.bucket, Key: w.key, UploadID: w.currentUploadID(), Message: fmt.Sprintf(format, args...), Err: cause}
}

func (w *Writer) integrity(op string, part int32, cause error) *sperrors.Error {
	e := w.errorf(sperrors.Integrity, op, cause, "%v", cause)
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
func (w *Writer) uploadVanished(op string, part int32, cause error, detail string) *sperrors.Error {
	e := w.errorf(sperrors.Transient, op, cause, "%s", vanishedMessage)
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
	if !w.cfg.replayable {
		e.Message += "; " + vanishedStream
	}
	return e
}

// sourceError classifies a failure to read the caller's source: Canceled when it is the
// context ending (a reader that honours ctx), else Permanent (retrying the store cannot help).
func (w *Writer) sourceError(op string, part int32, err error) *sperrors.Error {
	if w.ctx.Err() != nil || stderrors.Is(err, context.Canceled) || stderrors.Is(err, context.DeadlineExceeded) {
		e := w.canceled(op, err)
		e.PartNumber = part
		return e
	}
	e := w.errorf(sperrors.Permanent, op, err, "reading the source failed")
	e.PartNumber = part
	return e
}

func (w *Writer) canceled(op string, cause error) *sperrors.Error {
	return w.errorf(sperrors.Canceled, op, cause, "the write's context ended")
}

// recoverTo turns a panic in a part goroutine into an Internal error instead of a crash.
func (w *Writer) recoverTo(op string, part int32) {
	if r := recover(); r != nil {
		e := w.errorf(sperrors.Internal, op, nil, "recovered panic: %v", r)
		e.PartNumber = part
		w.log.Error("panic recovered", zap.String("op", op), zap.Int32("part", part), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		_ = w.fail(e)
	}
}

func (w *Writer) emit(e Event) {
	if w.cfg.observer == nil && w.cfg.span == nil {
		return
	}
	e.Bucket, e.Key = w.bucket, w.key
	if w.cfg.span != nil {
		safeCall(w.cfg.span.Event, e)
	}
	if w.cfg.observer != nil {
		safeCall(w.cfg.observer, e)
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
