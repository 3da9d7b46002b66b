package writer

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// Upload writes everything r yields to bucket/key and returns the verified Result.
//
// It uses what r offers: a known size (Len() int, Size() int64 or Stat() (fs.FileInfo, error))
// lets the plan pick the part size and turns a short or long stream into an error; an io.ReaderAt
// of known size is uploaded part by part straight from it, with no part buffers, and one within
// the single-PUT threshold goes as one PutObject read from it, with no buffer (an *os.File, or
// an io.SectionReader of one, has each part sent by the kernel, sendfile, through the adapters
// over plain HTTP on Linux); an io.Seeker (or ReaderAt) makes the source replayable, so a write
// that verifies wrong after commit is retried from the start within the retry policy's integrity
// budget, and a multipart upload the store drops mid-write (aborted elsewhere: NoSuchUpload) is
// replaced by one new upload that sends the source again (Result.UploadAttempts and Notes say so;
// a stream's write fails Transient with errors.Error.UploadGone instead).
//
// Upload is a shorthand for an upload from a fresh Uploader of st made for this call alone (as
// New is); a process that writes more than once to a store makes one Uploader and calls its
// Upload.
func Upload(ctx context.Context, st store.Store, bucket, key string, r io.Reader, optFns ...func(*Options)) (*Result, error) {
	return shorthand(st).Upload(ctx, bucket, key, r, optFns...)
}

func (u *Uploader) upload(ctx context.Context, bucket, key string, r io.Reader, cfg config) (*Result, error) {
	// One span covers the whole call, every whole-upload attempt included: its writers report
	// into it and do not end it.
	ctx = cfg.startSpan(ctx, bucket, key)
	own := cfg.ownSpan
	cfg.ownSpan = false
	res, err := u.uploadAttempts(ctx, bucket, key, r, cfg)
	if own {
		endSpan(cfg.span, res, err)
	}
	return res, err
}

func (u *Uploader) uploadAttempts(ctx context.Context, bucket, key string, r io.Reader, cfg config) (*Result, error) {
	if r == nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Upload", Bucket: bucket, Key: key, Message: "nil reader"}
	}
	size, err := sizeOf(r)
	if err != nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Upload", Bucket: bucket, Key: key, Message: "cannot size the source", Err: err}
	}
	if size >= 0 {
		if cfg.sizeHint >= 0 && cfg.sizeHint != size {
			return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Upload", Bucket: bucket, Key: key,
				Message: fmt.Sprintf("Options.Size %d disagrees with the size the reader reports, %d", cfg.sizeHint, size)}
		}
		cfg.sizeHint = size
	}
	ra, isReaderAt := r.(io.ReaderAt)
	seeker, isSeeker := r.(io.Seeker)
	var start int64
	if isSeeker {
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			isSeeker = false
		}
	}
	replayable := (isReaderAt && size >= 0) || isSeeker
	cfg.replayable = replayable
	integrityLeft := 0 // whole-upload attempts left after an Integrity failure
	if replayable {
		integrityLeft = cfg.policy.IntegrityRetries()
	}
	d := decider{createOnly: cfg.createOnly}
	var lastErr error
	var left leftovers
	var total retry.Stats
	var sent int64
	var vanished *sperrors.Error // the failure of the attempt whose upload the store dropped
	var dropped []string         // every upload the store dropped, to be found gone at the end
	for attempt := 1; ; attempt++ {
		if attempt > 1 && isSeeker && (!isReaderAt || size < 0) {
			// ReaderAt sources are read through fresh section readers; only a Seeker rewinds.
			if _, err := seeker.Seek(start, io.SeekStart); err != nil {
				break
			}
		}
		res, spent, err := u.uploadOnce(ctx, bucket, key, r, ra, start, isReaderAt && size >= 0, cfg)
		// The Result tells what every attempt cost, not just the last one.
		total.Add(spent.stats)
		sent += spent.bytesSent
		if err == nil {
			res.UploadAttempts = attempt
			res.Requests, res.BytesSent = total.Attempts, sent
			if len(total.ByKind) > 0 { // else the Result's own empty count stands
				res.Failures = make(map[sperrors.Kind]int, len(total.ByKind))
				for k, v := range total.ByKind {
					res.Failures[k] = v
				}
			}
			if vanished != nil {
				res.Notes = append(res.Notes, vanishedNote(vanished))
			}
			for _, id := range u.settleDropped(ctx, cfg, bucket, key, dropped) {
				res.LeftBehind = append(res.LeftBehind, id)
				res.Notes = append(res.Notes, "the store made dropped upload "+id+" again (a part still in flight) and its abort failed")
			}
			left.report(res, spent)
			return res, nil
		}
		if stderrors.Is(err, sperrors.Integrity) {
			// The failed attempt's verification is a failure of its own, whatever its requests did.
			total.Add(retry.Stats{ByKind: map[sperrors.Kind]int{sperrors.Integrity: 1}})
		}
		if vanished != nil && asError(err) != nil && asError(err).UploadGone {
			err = annotated(err, func(e *sperrors.Error) {
				e.Message += "; the new upload this Upload started after the store dropped upload " + vanished.UploadID + " was dropped too"
			})
		}
		if e := asError(err); e != nil && e.UploadGone && e.UploadID != "" {
			dropped = append(dropped, e.UploadID)
		}
		lastErr = err
		left.track(err, spent)
		callerDone := ctx.Err() != nil
		switch {
		case d.uploadAnew(err, replayable, vanished != nil, callerDone):
			// The store dropped the upload (aborted elsewhere): one new upload, from the source.
			vanished = asError(err)
			cfg.logger.Warn("the store dropped the upload (aborted elsewhere): sending the source again in a new upload",
				zap.String("bucket", bucket), zap.String("key", key), zap.String("upload_id", vanished.UploadID), zap.String("op", vanished.Op), zap.String("code", vanished.Code))
			continue
		case integrityLeft > 0 && d.uploadAgain(err, callerDone):
			integrityLeft--
			continue
		}
		break
	}
	err = left.annotate(lastErr)
	for _, id := range u.settleDropped(ctx, cfg, bucket, key, dropped) {
		err = annotated(err, func(e *sperrors.Error) {
			e.AbortFailed = true
			if e.UploadID == "" || e.UploadID == id {
				e.UploadID = id
			}
			e.Message += "; the store made dropped upload " + id + " again (a part still in flight) and its abort failed"
		})
	}
	return nil, err
}

// settleDropped looks again for the uploads the store dropped during this Upload, once its
// attempts are over, and aborts each that is back: a part still in flight at the store when an
// upload is aborted can make it again (Versity's posix backend re-creates its directory), after
// the write's own abort found it gone. It returns the ids it could not abort.
func (u *Uploader) settleDropped(ctx context.Context, cfg config, bucket, key string, dropped []string) (left []string) {
	if len(dropped) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.abortTimeout)
	defer cancel()
	for _, id := range dropped {
		_, lerr := cfg.policy.Do(ctx, retry.Op{Name: "ListParts", Bucket: bucket, Key: key, UploadID: id}, func(ctx context.Context, _ int) error {
			_, err := u.st.ListParts(ctx, &store.ListPartsInput{Bucket: bucket, Key: key, UploadID: id})
			return err
		})
		if lerr != nil {
			continue // gone (NoSuchUpload), or the store cannot say: its abort was taken
		}
		_, aerr := cfg.policy.Do(ctx, retry.Op{Name: "AbortMultipartUpload", Bucket: bucket, Key: key, UploadID: id}, func(ctx context.Context, _ int) error {
			if err := u.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: bucket, Key: key, UploadID: id}); err != nil && !isNoSuchUpload(err) {
				return err
			}
			return nil
		})
		if aerr != nil {
			cfg.logger.Warn("a dropped upload made again by a part in flight could not be aborted", zap.String("upload_id", id), zap.Error(aerr))
			left = append(left, id)
			continue
		}
		cfg.logger.Info("aborted a dropped upload that a part still in flight had made again", zap.String("bucket", bucket), zap.String("key", key), zap.String("upload_id", id))
	}
	return left
}

// vanishedNote is the Result's note of an Upload that landed in a new upload after the store
// dropped the first (uploadAnew).
func vanishedNote(e *sperrors.Error) string {
	return fmt.Sprintf("the store dropped upload %s (%s answered %s: aborted elsewhere, by a sweep, a lifecycle rule or another client); "+
		"a new multipart upload sent the source again and landed", e.UploadID, e.Op, e.Code)
}

// leftovers is what the failed attempts of one Upload left that a later attempt's error or
// Result would not name: the caller learns only of the last attempt, and must still hear of
// an unproven object at the key and of every upload that could not be aborted.
type leftovers struct {
	// object: the error of an attempt that left its unproven object at the key, while no later
	// attempt deleted the key. A later attempt refused before it wrote must not hide it.
	object error
	// attempts: what each failed attempt left behind, in order.
	attempts []spent
}

// unsettled returns the uploads the earlier attempts could not abort that no attempt after them
// in all took over (resumed from the journal, and so completed, aborted or named it), and their
// failed looks for a lost create's upload.
func unsettled(earlier, all []spent) (ids []string, unswept []error) {
	for i, a := range earlier {
		for _, id := range a.leftUploads {
			taken := slices.ContainsFunc(all[i+1:], func(s spent) bool { return slices.Contains(s.uploads, id) })
			if !taken && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if a.unswept != nil {
			unswept = append(unswept, a.unswept)
		}
	}
	return ids, unswept
}

// track follows an attempt that failed with err.
func (l *leftovers) track(err error, s spent) {
	if se := asError(err); se != nil && se.ObjectLeft {
		l.object = err
	} else if s.keyDeleted {
		l.object = nil
	}
	l.attempts = append(l.attempts, s)
}

// annotate adds to the last attempt's error what the earlier ones left.
func (l *leftovers) annotate(last error) error {
	if asError(last) == nil {
		return last
	}
	// The last attempt's own error names what it left.
	ids, unswept := unsettled(l.attempts[:len(l.attempts)-1], l.attempts)
	return annotated(last, func(e *sperrors.Error) {
		if l.object != nil && !e.ObjectLeft {
			e.ObjectLeft = true
			e.Message += "; an earlier attempt's unproven object is still at the key (" + brief(l.object) + ")"
		}
		for _, id := range ids {
			if !e.AbortFailed {
				// The one upload id the error names is then an earlier attempt's.
				e.AbortFailed, e.UploadID = true, id
			}
			e.Message += "; an earlier attempt could not abort upload " + id
		}
		for _, u := range unswept {
			e.AbortFailed = true
			e.Message += "; an earlier attempt: " + unsweptNote(u)
		}
	})
}

// report adds to a landed Result what the failed attempts before it left.
func (l *leftovers) report(res *Result, landed spent) {
	ids, unswept := unsettled(l.attempts, append(slices.Clone(l.attempts), landed))
	for _, id := range ids {
		if !slices.Contains(res.LeftBehind, id) {
			res.LeftBehind = append(res.LeftBehind, id)
			res.Notes = append(res.Notes, "an earlier attempt failed and could not abort upload "+id)
		}
	}
	for _, u := range unswept {
		res.MaybeLeftBehind = true
		res.Notes = append(res.Notes, "an earlier attempt: "+unsweptNote(u))
	}
}

// brief says how an attempt ended: its kind and message, not the whole chain.
func brief(err error) string {
	e := asError(err)
	return sperrors.Redact(e.Kind.String() + ": " + e.Message)
}

// spent is what one upload attempt cost, for the Result of the whole Upload.
type spent struct {
	stats      retry.Stats
	bytesSent  int64
	keyDeleted bool
	// What a failed attempt left behind: uploads it could not abort, and why the look for a
	// lost create's upload failed.
	leftUploads []string
	unswept     error
	uploads     []string // every upload id the attempt created or resumed
}

func (u *Uploader) uploadOnce(ctx context.Context, bucket, key string, r io.Reader, ra io.ReaderAt, base int64, useReaderAt bool, cfg config) (*Result, spent, error) {
	w, err := u.newWriter(ctx, bucket, key, cfg)
	if err != nil {
		return nil, spent{}, err
	}
	warmConnections(w.st, w.bucket, w.plan, w.cfg.concurrency, func() bool { return w.decider().probes(w.facts.checking()) })
	res, err := w.uploadFrom(r, ra, base, useReaderAt)
	w.mu.Lock()
	defer w.mu.Unlock()
	return res, spent{stats: w.tally.ended(), bytesSent: w.tally.bytesSent.Load(), keyDeleted: w.session.upload.keyDeleted.Load(),
		leftUploads: w.outcome.leftUploads, unswept: w.outcome.unswept, uploads: w.session.upload.given()}, err
}

func (w *Writer) uploadFrom(r io.Reader, ra io.ReaderAt, base int64, useReaderAt bool) (*Result, error) {
	if sendsSections(useReaderAt, w.cfg.sizeHint, w.plan.Threshold) {
		w.intake.section, w.intake.sectionBase = ra, base
		w.intake.sectionInFile = bufpool.FileBacked(ra)
		// A journaled upload of this source that a dead process left: continue it, or find
		// that it had landed.
		landed, err := w.resumeFromJournal()
		if err != nil {
			return nil, w.closeFailed(err)
		}
		if landed != nil {
			return w.closeLanded(landed)
		}
		if err := w.sendSections(); err != nil {
			return nil, w.closeFailed(err)
		}
	} else if useReaderAt {
		// A small ReaderAt object goes as one PutObject read straight from the source, as a
		// section is: no buffer holds a copy of it, and a retry (or a whole-upload retry) reads
		// the source again.
		w.intake.single = io.NewSectionReader(ra, base, w.cfg.sizeHint)
		w.intake.singleInFile = bufpool.FileBacked(ra)
		w.intake.size = w.cfg.sizeHint
	} else {
		w.createEarly()
		if _, err := w.ReadFrom(r); err != nil {
			return nil, w.closeFailed(err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.session.journal.withResumed(w.Result()), nil
}

// closeFailed ends a write that failed before its Close: Close stops the parts, aborts the
// upload and adds to the failure what the caller must know (an abort that failed, uploads left
// behind), so its error is the one to return.
func (w *Writer) closeFailed(err error) error {
	if cerr := w.Close(); cerr != nil {
		return cerr
	}
	return err
}

// sendSections dispatches every part of a ReaderAt source of known size.
func (w *Writer) sendSections() error {
	total, part := w.cfg.sizeHint, w.plan.PartSize
	// The create first, so its round trip tells whether the parts in flight may widen (pacing.go);
	// the first parts are hashed meanwhile (ahead.go).
	w.parts.hashAhead(w.intake.section, w.intake.sectionBase, total, part, w.session.upload.current() != "", &w.wg, w.recoverTo)
	if err := w.ensureUpload(); err != nil {
		return err
	}
	w.parts.startPacing(w.session.upload.createRoundTrip(), w.session.upload.current())
	for off := int64(0); off < total; off += part {
		if err := w.firstErr(); err != nil {
			return err
		}
		n, final := sectionSpan(off, total, part)
		if w.session.journal.resumedPart(w.intake.nextPart + 1) {
			w.intake.nextPart++ // accounted for as dispatched
			continue            // resumed from the journal: the store has these bytes
		}
		if err := w.dispatchSection(off, n, final); err != nil {
			return err
		}
	}
	w.intake.size = total
	return nil
}

// sizeOf returns the size a reader reports, or -1.
func sizeOf(r io.Reader) (int64, error) {
	switch v := r.(type) {
	case interface{ Len() int }:
		return int64(v.Len()), nil
	case interface{ Size() int64 }:
		if s, ok := r.(io.Seeker); ok {
			// A SectionReader's or bytes.Reader's Size is the whole; the rest is what remains.
			cur, err := s.Seek(0, io.SeekCurrent)
			if err == nil {
				return v.Size() - cur, nil
			}
		}
		return v.Size(), nil
	case interface{ Stat() (fs.FileInfo, error) }:
		fi, err := v.Stat()
		if err != nil {
			return -1, err
		}
		if !fi.Mode().IsRegular() {
			return -1, nil
		}
		if s, ok := r.(io.Seeker); ok {
			cur, err := s.Seek(0, io.SeekCurrent)
			if err == nil {
				return fi.Size() - cur, nil
			}
		}
		return fi.Size(), nil
	}
	return -1, nil
}
