package writer

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// cleanup runs after a failed commit: stop parts, release buffers, abort the upload.
func (w *Writer) cleanup(err error) error {
	w.cancel()
	w.wg.Wait()
	w.releaseHeld()
	aerr := w.abortUpload(w.ctx)
	if aerr != nil {
		w.mu.Lock()
		w.outcome.leftUploads = append(w.outcome.leftUploads, aerr.UploadID)
		w.mu.Unlock()
		return afterAbort(err, aerr, "")
	}
	return afterAbort(err, nil, w.takeAbortUnconfirmed())
}

// joinMessage appends more to an error message.
func joinMessage(msg, more string) string {
	if msg == "" {
		return more
	}
	return msg + "; " + more
}

// takeAbortUnconfirmed returns (and clears) the note of an abort the store took but could not
// confirm, "" when there was none.
func (w *Writer) takeAbortUnconfirmed() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.outcome.abortUnconfirmed
	w.outcome.abortUnconfirmed = ""
	return n
}

// annotated returns a copy of err's *Error changed by fn. Errors are values: err may be the sticky
// error an earlier Write already returned to the caller, which must not change under them.
func annotated(err error, fn func(*sperrors.Error)) error {
	e := asError(err)
	if e == nil {
		return err
	}
	c := *e
	fn(&c)
	return &c
}

// cleanupContext is the context of the clean-up after a failure (abort, sweep, delete): detached
// from parent, whose cancellation is often why we are here, with its own deadline.
func (w *Writer) cleanupContext(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), w.cfg.abortTimeout)
}

// abortUpload aborts the open upload, if any, on a context detached from the caller's (whose
// cancellation is often why we are here) with its own deadline and retries. A part request still
// in flight at the store when the abort lands can re-create the upload (S3 documents this: "it
// might be necessary to abort a given multipart upload multiple times"), so the abort is
// confirmed with ListParts and repeated until the upload is gone.
func (w *Writer) abortUpload(parent context.Context) *sperrors.Error {
	id := w.currentUploadID()
	if id == "" {
		return nil
	}
	ctx, cancel := w.cleanupContext(parent)
	defer cancel()
	why, err := w.abortConfirmed(ctx, id)
	if err == nil && why == "" && w.outcome.partUnanswered.Load() {
		err = w.lookAgainAfterAbort(ctx, id)
	}
	w.req.events.emit(Event{Type: EventAbort, UploadID: id, Err: err})
	if err == nil && why != "" {
		note := fmt.Sprintf("abort of upload %s sent, answered with success, not confirmable: the store does not support ListParts (%s)", id, why)
		w.log.Warn("abort answered with success but not confirmable: the store cannot list parts",
			zap.String("upload_id", id), zap.String("why", why))
		w.outcome.notes.add(note)
		w.mu.Lock()
		w.outcome.abortUnconfirmed = note
		w.mu.Unlock()
	}
	if err != nil {
		w.log.Error("abort failed: incomplete upload left behind", zap.String("upload_id", id), zap.Error(err))
		e := asError(err)
		if e == nil {
			e = &sperrors.Error{Kind: sperrors.Transient, Err: err}
		}
		e.AbortFailed, e.UploadID, e.Bucket, e.Key = true, id, w.bucket, w.key
		return e
	}
	w.log.Debug("upload aborted", zap.String("upload_id", id))
	w.mu.Lock()
	w.session.uploadID = ""
	w.mu.Unlock()
	w.session.journal.forget(id, w.decider().recordAfterAbort()) // journal hook: the upload is gone, so is its record
	return nil
}

// abortConfirmed aborts the upload and confirms it is gone by asking the store: ListParts must
// no longer find it. A part request the store is still finishing when the abort lands can
// re-create the upload, so while ListParts still lists it the abort is repeated. The repetition
// is paced and bounded by the retry policy (its backoff and attempt limit), not by fixed sleeps:
// the store's answer, not elapsed time, decides that the upload is gone. unconfirmed says why
// the store could not be asked (it does not support ListParts) after it took the abort.
func (w *Writer) abortConfirmed(ctx context.Context, id string) (unconfirmed string, err error) {
	_, err = w.cfg.policy.Do(ctx, retry.Op{Name: "AbortMultipartUpload", Bucket: w.bucket, Key: w.key, UploadID: id, FirstContact: w.facts.firstContact()},
		func(ctx context.Context, attempt int) error {
			unconfirmed = ""
			err := w.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: w.bucket, Key: w.key, UploadID: id})
			if err != nil && !isNoSuchUpload(err) {
				return err
			}
			listed, why := w.uploadStillListed(ctx, id)
			switch afterAbortListed(err, listed, why) {
			case abortUnconfirmable:
				unconfirmed = why
			case abortAgain:
				w.log.Warn("upload still listed after abort: aborting again", zap.String("upload_id", id), zap.Int("attempt", attempt))
				// Transient, so the policy aborts again after its backoff; a fresh value each
				// time, since the policy annotates the errors it is given.
				return &sperrors.Error{Kind: sperrors.Transient, Op: "AbortMultipartUpload", UploadID: id, Message: "upload still listed after abort"}
			}
			return nil
		})
	return unconfirmed, err
}

// unansweredPartSettle is how long after a confirmed abort the upload is looked for once more
// when a part request had been written out in full without an answer: the store may still be
// finishing it, and Versity's posix backend then makes the aborted upload's directory again.
const unansweredPartSettle = time.Second

// lookAgainAfterAbort waits unansweredPartSettle (within ctx), then aborts the upload again if
// ListParts finds it back.
func (w *Writer) lookAgainAfterAbort(ctx context.Context, id string) error {
	t := time.NewTimer(unansweredPartSettle)
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	if listed, _ := w.uploadStillListed(ctx, id); !listed {
		return nil
	}
	w.log.Warn("aborted upload listed again (a part request unanswered at the abort landed after it): aborting again",
		zap.String("bucket", w.bucket), zap.String("key", w.key), zap.String("upload_id", id))
	_, err := w.abortConfirmed(ctx, id)
	return err
}

// uploadStillListed reports whether ListParts still finds the upload after an abort. Any error
// (404 NoSuchUpload, or a store that cannot say) counts as gone: the abort itself was accepted.
// A store that does not support ListParts cannot say: unsupported is then why, and the abort
// is not confirmable.
func (w *Writer) uploadStillListed(ctx context.Context, id string) (listed bool, unsupported string) {
	if why := w.facts.lacking(optListParts); why != "" {
		return false, why
	}
	_, err := w.st.ListParts(ctx, &store.ListPartsInput{Bucket: w.bucket, Key: w.key, UploadID: id})
	if store.Unsupported(err) {
		return false, w.verifier.optional.lacksOp(optListParts, err)
	}
	return err == nil, ""
}

// sweepLostCreates aborts uploads a CreateMultipartUpload left behind when its answer was lost
// (the store created an upload we never heard of, and the retry created another), the write's or
// its checksum probe's (probe.go). Only uploads for exactly this key, started during those create
// attempts, with no parts, and not ours are touched: a concurrent writer's upload of the same key
// would have parts or another start time. leftBehind names the uploads it found but could not
// abort, and the probe's it could not; unswept says why it could not look (the listing, or a
// candidate's ListParts, failed), so an upload no id names may be left.
func (w *Writer) sweepLostCreates() (leftBehind []string, unswept error) {
	left, unswept := w.sweepLost()
	return append(w.probeLeftBehind(), left...), unswept
}

// sweepLost is sweepLostCreates' look for the uploads lost creates left (lostCreateWindow).
func (w *Writer) sweepLost() (leftBehind []string, unswept error) {
	ambiguous, from, to, cut, waited, ours := w.lostCreateWindow()
	if !ambiguous {
		return nil, nil
	}
	ctx, cancel := w.cleanupContext(w.ctx)
	defer cancel()
	// A create we stopped waiting for may still be carried out: a store slow to answer is slow to
	// list too. Look no sooner than it had been waited for after it was cut (a write that went on
	// to send its parts is long past that), within half the clean-up bound.
	if settle := time.Until(cut.Add(min(waited, w.cfg.abortTimeout/2))); !cut.IsZero() && settle > 0 {
		w.log.Debug("waiting before looking for an upload a cut CreateMultipartUpload may still create",
			zap.Duration("wait", settle), zap.Duration("waited", waited))
		t := time.NewTimer(settle)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if err := w.facts.lackingErr(optListUploads); err != nil {
		return nil, err // the store cannot list uploads: the caller says so
	}
	// Under the retry policy: a transient failure here would otherwise leave the lost upload
	// behind unnamed.
	var out *store.ListMultipartUploadsOutput
	_, err := w.cfg.policy.Do(ctx, retry.Op{Name: "ListMultipartUploads", Bucket: w.bucket, Key: w.key, FirstContact: w.facts.firstContact()}, func(ctx context.Context, _ int) error {
		var err error
		out, err = w.st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: w.bucket, Prefix: w.key})
		return err
	})
	if err != nil {
		if store.Unsupported(err) {
			w.verifier.optional.lacksOp(optListUploads, err)
		}
		w.log.Warn("could not look for uploads a lost CreateMultipartUpload answer left", zap.Error(err))
		return nil, err
	}
	for _, u := range out.Uploads {
		if !mayBeLostCreate(u, w.key, ours, from, to) {
			continue
		}
		var parts *store.ListPartsOutput
		_, err := w.cfg.policy.Do(ctx, retry.Op{Name: "ListParts", Bucket: w.bucket, Key: w.key, UploadID: u.UploadID, FirstContact: w.facts.firstContact()}, func(ctx context.Context, _ int) error {
			var err error
			parts, err = w.st.ListParts(ctx, &store.ListPartsInput{Bucket: w.bucket, Key: w.key, UploadID: u.UploadID})
			return err
		})
		if err != nil && !isNoSuchUpload(err) {
			w.log.Warn("could not check an upload a lost CreateMultipartUpload answer may have left", zap.String("upload_id", u.UploadID), zap.Error(err))
			if unswept == nil {
				unswept = err
			}
			continue
		}
		if err != nil || len(parts.Parts) > 0 {
			continue // gone, or not ours (see mayBeLostCreate)
		}
		if _, err := w.abortConfirmed(ctx, u.UploadID); err != nil {
			w.log.Warn("could not abort an upload a lost CreateMultipartUpload answer left", zap.String("upload_id", u.UploadID), zap.Error(err))
			leftBehind = append(leftBehind, u.UploadID)
			continue
		}
		w.log.Info("aborted an upload a lost CreateMultipartUpload answer left", zap.String("upload_id", u.UploadID))
	}
	return leftBehind, unswept
}

func (w *Writer) deleteObject() error {
	ctx, cancel := w.cleanupContext(w.ctx)
	defer cancel()
	_, err := w.cfg.policy.Do(ctx, retry.Op{Name: "DeleteObject", Bucket: w.bucket, Key: w.key, FirstContact: w.facts.firstContact()}, func(ctx context.Context, _ int) error {
		return w.st.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: w.bucket, Key: w.key})
	})
	if err == nil {
		w.outcome.keyDeleted.Store(true)
	}
	return err
}
