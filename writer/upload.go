package writer

import (
	"context"
	stderrors "errors"
	"io"
	"io/fs"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// Upload writes everything r yields to bucket/key and returns the verified Result.
//
// It uses what r offers: a known size (Len() int, Size() int64 or Stat() (fs.FileInfo, error))
// lets the plan pick the part size and turns a short or long stream into an error; an io.ReaderAt
// of known size is uploaded part by part straight from it, with no part buffers (an *os.File, or
// an io.SectionReader of one, has each part sent by the kernel, sendfile, through the adapters
// over plain HTTP on Linux); an io.Seeker (or ReaderAt) makes the source replayable, so a write
// that verifies wrong after commit is retried from the start within the retry policy's integrity
// budget.
func Upload(ctx context.Context, st store.Store, bucket, key string, r io.Reader, opts ...Option) (*Result, error) {
	if r == nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Upload", Bucket: bucket, Key: key, Message: "nil reader"}
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	size, err := sizeOf(r)
	if err != nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Upload", Bucket: bucket, Key: key, Message: "cannot size the source", Err: err}
	}
	if size >= 0 {
		if cfg.sizeHint >= 0 && cfg.sizeHint != size {
			return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Upload", Bucket: bucket, Key: key,
				Message: "WithSize disagrees with the size the reader reports"}
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
	maxAttempts := 1
	if replayable {
		maxAttempts = 1 + cfg.policyIntegrityRetries()
	}
	var lastErr error
	// leftBy: the error of an attempt that left its unproven object at the key, while no later
	// attempt has deleted the key. A later attempt refused before it wrote must not hide it.
	var leftBy error
	var total retry.Stats
	var sent int64
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if attempt > 1 && isSeeker && (!isReaderAt || size < 0) {
			// ReaderAt sources are read through fresh section readers; only a Seeker rewinds.
			if _, err := seeker.Seek(start, io.SeekStart); err != nil {
				break
			}
		}
		res, spent, err := uploadOnce(ctx, st, bucket, key, r, ra, start, isReaderAt && size >= 0, cfg)
		// The Result tells what every attempt cost, not just the last one.
		total.Add(spent.stats)
		sent += spent.bytesSent
		if err == nil {
			res.UploadAttempts = attempt
			res.Requests, res.BytesSent = total.Attempts, sent
			res.Failures = make(map[sperrors.Kind]int, len(total.ByKind))
			for k, v := range total.ByKind {
				res.Failures[k] = v
			}
			return res, nil
		}
		if stderrors.Is(err, sperrors.Integrity) {
			// The failed attempt's verification is a failure of its own, whatever its requests did.
			total.Add(retry.Stats{ByKind: map[sperrors.Kind]int{sperrors.Integrity: 1}})
		}
		lastErr = err
		if se := asError(err); se != nil && se.ObjectLeft {
			leftBy = err
		} else if spent.keyDeleted {
			leftBy = nil
		}
		if !stderrors.Is(err, sperrors.Integrity) || isUnverifiable(err) || ctx.Err() != nil {
			break
		}
		if se := asError(err); cfg.createOnly && se != nil && se.ObjectLeft {
			// The attempt's own bad object is at the key: a create-only retry would only meet
			// it and call it another writer's.
			break
		}
	}
	if se := asError(lastErr); leftBy != nil && se != nil && !se.ObjectLeft {
		return nil, annotated(lastErr, func(e *sperrors.Error) {
			e.ObjectLeft = true
			e.Message += "; an earlier attempt's unproven object is still at the key: " + sperrors.Redact(leftBy.Error())
		})
	}
	return nil, lastErr
}

// spent is what one upload attempt cost, for the Result of the whole Upload.
type spent struct {
	stats      retry.Stats
	bytesSent  int64
	keyDeleted bool
}

func uploadOnce(ctx context.Context, st store.Store, bucket, key string, r io.Reader, ra io.ReaderAt, base int64, useReaderAt bool, cfg config) (*Result, spent, error) {
	w, err := newWriter(ctx, st, bucket, key, cfg)
	if err != nil {
		return nil, spent{}, err
	}
	res, err := w.uploadFrom(r, ra, base, useReaderAt)
	w.mu.Lock()
	defer w.mu.Unlock()
	return res, spent{stats: w.stats, bytesSent: w.bytesSent.Load(), keyDeleted: w.keyDeleted.Load()}, err
}

func (w *Writer) uploadFrom(r io.Reader, ra io.ReaderAt, base int64, useReaderAt bool) (*Result, error) {
	if useReaderAt && w.cfg.sizeHint > w.plan.Threshold {
		w.section, w.sectionBase = ra, base
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
	} else {
		if useReaderAt {
			// A small ReaderAt object goes through one buffer; a section keeps the source
			// untouched so a whole-upload retry can read it again.
			r = io.NewSectionReader(ra, base, w.cfg.sizeHint)
		}
		if _, err := w.ReadFrom(r); err != nil {
			return nil, w.closeFailed(err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.withResumed(w.Result()), nil
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
	for off := int64(0); off < total; off += part {
		if err := w.firstErr(); err != nil {
			return err
		}
		n := min(part, total-off)
		if w.skipResumedPart() {
			continue // resumed from the journal: the store has these bytes
		}
		if err := w.dispatchSection(off, n, off+n == total); err != nil {
			return err
		}
	}
	w.size = total
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
