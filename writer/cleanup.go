package writer

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	w.intake.releaseHeld(w.session.upload.current())
	aerr := w.abortUpload(w.ctx)
	if aerr != nil {
		w.mu.Lock()
		w.outcome.leftUploads = append(w.outcome.leftUploads, aerr.UploadID)
		w.mu.Unlock()
		return afterAbort(err, aerr, "")
	}
	return afterAbort(err, nil, w.session.upload.takeUnconfirmed())
}

// joinMessage appends more to an error message.
func joinMessage(msg, more string) string {
	if msg == "" {
		return more
	}
	return msg + "; " + more
}

// takeUnconfirmed returns (and clears) the note of an abort the store took but could not
// confirm, "" when there was none.
func (s *uploadSession) takeUnconfirmed() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.unconfirmed
	s.unconfirmed = ""
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
func cleanupContext(parent context.Context, bound time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), bound)
}

// abortUpload aborts the open upload, if any (uploadSession.abort), and forgets its journal
// record once it is gone; the note of an abort the store could not confirm goes in the Result.
func (w *Writer) abortUpload(parent context.Context) *sperrors.Error {
	id := w.session.upload.current()
	if id == "" {
		return nil
	}
	note, err := w.session.upload.abort(parent, id, w.req.events)
	if note != "" {
		w.outcome.notes.add(note)
	}
	if err != nil {
		return err
	}
	w.session.journal.forget(id, w.decider().recordAfterAbort()) // journal hook: the upload is gone, so is its record
	return nil
}

// abort aborts upload id, the open one, on a context detached from parent (whose cancellation is
// often why we are here) with its own deadline and retries. A part request still in flight at the
// store when the abort lands can re-create the upload (S3 documents this: "it might be necessary
// to abort a given multipart upload multiple times"), so the abort is confirmed with ListParts and
// repeated until the upload is gone; after a part that went unanswered, looked for once more
// (aborted once more where the store cannot list parts). note says when the store took the abort
// but could not confirm it (kept for takeUnconfirmed too); err
// is the failed abort, carrying the upload id. The open upload is forgotten once aborted.
func (s *uploadSession) abort(parent context.Context, id string, events emitter) (note string, _ *sperrors.Error) {
	ctx, cancel := cleanupContext(parent, s.abortTimeout)
	defer cancel()
	why, err := s.abortConfirmed(ctx, id)
	if err == nil && s.partUnanswered.Load() {
		err = s.lookAgainAfterAbort(ctx, id)
	}
	events.emit(Event{Type: EventAbort, UploadID: id, Err: err})
	if err == nil && why != "" {
		note = fmt.Sprintf("abort of upload %s sent, answered with success, not confirmable: the store does not support ListParts (%s)", id, why)
		s.log.Warn("abort answered with success but not confirmable: the store cannot list parts",
			zap.String("upload_id", id), zap.String("why", why))
		s.mu.Lock()
		s.unconfirmed = note
		s.mu.Unlock()
	}
	if err != nil {
		s.log.Error("abort failed: incomplete upload left behind", zap.String("upload_id", id), zap.Error(err))
		e := asError(err)
		if e == nil {
			e = &sperrors.Error{Kind: sperrors.Transient, Err: err}
		}
		e.AbortFailed, e.UploadID, e.Bucket, e.Key = true, id, s.bucket, s.key
		return note, e
	}
	s.log.Debug("upload aborted", zap.String("upload_id", id))
	s.mu.Lock()
	if s.id == id {
		s.id = ""
	}
	s.mu.Unlock()
	return note, nil
}

// abortConfirmed aborts the upload and confirms it is gone by asking the store: ListParts must
// no longer find it. A part request the store is still finishing when the abort lands can
// re-create the upload, so while ListParts still lists it the abort is repeated. The repetition
// is paced and bounded by the retry policy (its backoff and attempt limit), not by fixed sleeps:
// the store's answer, not elapsed time, decides that the upload is gone. unconfirmed says why
// the store could not be asked (it does not support ListParts) after it took the abort.
func (s *uploadSession) abortConfirmed(ctx context.Context, id string) (unconfirmed string, err error) {
	_, err = s.policy.Do(ctx, retry.Op{Name: "AbortMultipartUpload", Bucket: s.bucket, Key: s.key, UploadID: id, FirstContact: s.facts.firstContact()},
		func(ctx context.Context, attempt int) error {
			unconfirmed = ""
			err := s.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: s.bucket, Key: s.key, UploadID: id})
			if err != nil && !isNoSuchUpload(err) {
				return err
			}
			listed, why := s.stillListed(ctx, id)
			switch afterAbortListed(err, listed, why) {
			case abortUnconfirmable:
				unconfirmed = why
			case abortAgain:
				s.log.Warn("upload still listed after abort: aborting again", zap.String("upload_id", id), zap.Int("attempt", attempt))
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
// ListParts finds it back, or if the store cannot list parts: it cannot say the late part did not
// make the upload anew, and a second abort of an upload that is gone is answered NoSuchUpload.
func (s *uploadSession) lookAgainAfterAbort(ctx context.Context, id string) error {
	t := time.NewTimer(unansweredPartSettle)
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	listed, unsupported := s.stillListed(ctx, id)
	if !listed && unsupported == "" {
		return nil
	}
	s.log.Warn("a part request unanswered at the abort may have made the upload again: aborting again",
		zap.String("bucket", s.bucket), zap.String("key", s.key), zap.String("upload_id", id), zap.Bool("listed", listed))
	_, err := s.abortConfirmed(ctx, id)
	return err
}

// stillListed reports whether ListParts still finds the upload after an abort. Any error
// (404 NoSuchUpload, or a store that cannot say) counts as gone: the abort itself was accepted.
// A store that does not support ListParts cannot say: unsupported is then why, and the abort
// is not confirmable.
func (s *uploadSession) stillListed(ctx context.Context, id string) (listed bool, unsupported string) {
	if why := s.facts.lacking(optListParts); why != "" {
		return false, why
	}
	_, err := s.st.ListParts(ctx, &store.ListPartsInput{Bucket: s.bucket, Key: s.key, UploadID: id})
	if store.Unsupported(err) {
		return false, s.lacks.lacksOp(optListParts, err)
	}
	return err == nil, ""
}

// sweepLostCreates aborts uploads a CreateMultipartUpload left behind when its answer was lost
// (the store created an upload we never heard of, and the retry created another), the write's or
// its checksum probe's (probe.go, given as probe). Only uploads for exactly this key, started
// during those create attempts, with no parts, and not ours are touched: a concurrent writer's
// upload of the same key would have parts or another start time. leftBehind names the uploads it
// found but could not abort, and the probe's it could not; unswept says why it could not look (the
// listing, or a candidate's ListParts, failed), so an upload no id names may be left. It runs on
// a context detached from parent, within the clean-up's bound.
func (s *uploadSession) sweepLostCreates(parent context.Context, probe probeLeft) (leftBehind []string, unswept error) {
	left, unswept := s.sweepLost(parent, s.lostCreateWindow(probe))
	return append(slices.Clone(probe.ids), left...), unswept
}

// lostWindow is where the sweep for lost creates looks: the create attempts between from and to,
// one of them cut at cut after waiting waited; ours are the ids not to touch.
type lostWindow struct {
	ambiguous     bool
	from, to, cut time.Time
	waited        time.Duration
	ours          map[string]bool
}

// lostCreateWindow is where the sweep for lost creates looks: the write's own create whose answer
// was lost, widened to the probe's; ours are the ids not to touch: the write's, and the probe's it
// could not abort (reported as left already).
func (s *uploadSession) lostCreateWindow(probe probeLeft) lostWindow {
	s.mu.Lock()
	c := s.created
	lw := lostWindow{ambiguous: c.ambiguous, from: c.start, to: c.end, cut: c.cut, waited: c.cutWaited, ours: maps.Clone(s.ids)}
	s.mu.Unlock()
	if lw.ours == nil {
		lw.ours = map[string]bool{}
	}
	for _, id := range probe.ids {
		lw.ours[id] = true
	}
	p := probe.lost
	switch {
	case p == nil:
	case !lw.ambiguous:
		lw.ambiguous, lw.from, lw.to, lw.cut, lw.waited = true, p.from, p.to, p.cut, p.waited
	default:
		if p.from.Before(lw.from) {
			lw.from = p.from
		}
		if p.to.After(lw.to) {
			lw.to = p.to
		}
		if p.cut.After(lw.cut) {
			lw.cut, lw.waited = p.cut, p.waited
		}
	}
	return lw
}

// sweepLost is sweepLostCreates' look for the uploads lost creates left, in window lw.
func (s *uploadSession) sweepLost(parent context.Context, lw lostWindow) (leftBehind []string, unswept error) {
	if !lw.ambiguous {
		return nil, nil
	}
	from, to, cut, waited, ours := lw.from, lw.to, lw.cut, lw.waited, lw.ours
	ctx, cancel := cleanupContext(parent, s.abortTimeout)
	defer cancel()
	// A create we stopped waiting for may still be carried out: a store slow to answer is slow to
	// list too. Look no sooner than it had been waited for after it was cut (a write that went on
	// to send its parts is long past that), within half the clean-up bound.
	if settle := time.Until(cut.Add(min(waited, s.abortTimeout/2))); !cut.IsZero() && settle > 0 {
		s.log.Debug("waiting before looking for an upload a cut CreateMultipartUpload may still create",
			zap.Duration("wait", settle), zap.Duration("waited", waited))
		t := time.NewTimer(settle)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if err := s.facts.lackingErr(optListUploads); err != nil {
		return nil, err // the store cannot list uploads: the caller says so
	}
	// Under the retry policy: a transient failure here would otherwise leave the lost upload
	// behind unnamed.
	var out *store.ListMultipartUploadsOutput
	_, err := s.policy.Do(ctx, retry.Op{Name: "ListMultipartUploads", Bucket: s.bucket, Key: s.key, FirstContact: s.facts.firstContact()}, func(ctx context.Context, _ int) error {
		var err error
		out, err = s.st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: s.bucket, Prefix: s.key})
		return err
	})
	if err != nil {
		if store.Unsupported(err) {
			s.lacks.lacksOp(optListUploads, err)
		}
		s.log.Warn("could not look for uploads a lost CreateMultipartUpload answer left", zap.Error(err))
		return nil, err
	}
	for _, u := range out.Uploads {
		if !mayBeLostCreate(u, s.key, ours, from, to) {
			continue
		}
		var parts *store.ListPartsOutput
		_, err := s.policy.Do(ctx, retry.Op{Name: "ListParts", Bucket: s.bucket, Key: s.key, UploadID: u.UploadID, FirstContact: s.facts.firstContact()}, func(ctx context.Context, _ int) error {
			var err error
			parts, err = s.st.ListParts(ctx, &store.ListPartsInput{Bucket: s.bucket, Key: s.key, UploadID: u.UploadID})
			return err
		})
		if err != nil && !isNoSuchUpload(err) {
			s.log.Warn("could not check an upload a lost CreateMultipartUpload answer may have left", zap.String("upload_id", u.UploadID), zap.Error(err))
			if unswept == nil {
				unswept = err
			}
			continue
		}
		if err != nil || len(parts.Parts) > 0 {
			continue // gone, or not ours (see mayBeLostCreate)
		}
		if _, err := s.abortConfirmed(ctx, u.UploadID); err != nil {
			s.log.Warn("could not abort an upload a lost CreateMultipartUpload answer left", zap.String("upload_id", u.UploadID), zap.Error(err))
			leftBehind = append(leftBehind, u.UploadID)
			continue
		}
		s.log.Info("aborted an upload a lost CreateMultipartUpload answer left", zap.String("upload_id", u.UploadID))
	}
	return leftBehind, unswept
}

// deleteObject deletes the object at the key (the write's own, damaged or unproven), on a context
// detached from parent within the clean-up's bound, under the retry policy.
func (s *uploadSession) deleteObject(parent context.Context) error {
	ctx, cancel := cleanupContext(parent, s.abortTimeout)
	defer cancel()
	_, err := s.policy.Do(ctx, retry.Op{Name: "DeleteObject", Bucket: s.bucket, Key: s.key, FirstContact: s.facts.firstContact()}, func(ctx context.Context, _ int) error {
		return s.st.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: s.bucket, Key: s.key})
	})
	if err == nil {
		s.keyDeleted.Store(true)
	}
	return err
}
