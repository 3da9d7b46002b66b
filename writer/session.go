package writer

import (
	"context"
	stderrors "errors"
	"time"

	"go.uber.org/zap"

	"github.com/safeput/safeput/store"
)

// session is the state of the writer's multipart upload, guarded by Writer.mu: the upload id,
// the parts the store acknowledged, what a lost CreateMultipartUpload answer may have left, and
// the keeper of the upload's journal record.
type session struct {
	uploadID string
	parts    map[int32]partDone
	// createAmbiguous: a CreateMultipartUpload attempt got no answer between createStart and
	// createEnd, so the store may hold an upload we never heard of (see sweepLostCreates).
	createAmbiguous        bool
	createStart, createEnd time.Time
	// createTook is the round trip of the create attempt that was answered (pacing.go).
	createTook time.Duration
	// createCut: the last ambiguous attempt that we cut ourselves (stall window, attempt timeout,
	// cancel) ended then, after waiting createCutWaited. The store may still be carrying it out.
	createCut       time.Time
	createCutWaited time.Duration
	uploadIDs       map[string]bool // every upload id this writer was given
	// completeLost: a CompleteMultipartUpload's answer was lost and its retry found the upload
	// gone, so the object may have landed; the journal record keeps what was intended until the
	// outcome is proven (journalKeeper.forget leaves it).
	completeLost bool
	// completeGone: a CompleteMultipartUpload was answered NoSuchUpload, at its first attempt or
	// at a retry (completeLost): the upload is gone, so unless the HEAD finds this write's object
	// the write did not land (decider.atKey: keyGone).
	completeGone bool
	journal      *journalKeeper // the upload's record in the journal (journal.go)
	// early is closed when the create started as the write began (createEarly) has its answer;
	// nil when none was started. Set before any other goroutine of the write runs.
	early chan struct{}
}

// createEarly starts the multipart upload in the background as the write begins, when the write
// is multipart whatever comes (createsAtStart): over a wide-area link its round trip then
// overlaps the filling of the first part instead of following it. The first part waits for it
// (ensureUpload); Close and Abort wait for it too (w.wg) and abort what it created.
func (w *Writer) createEarly() {
	if !createsAtStart(w.cfg.sizeHint, w.plan.Threshold) {
		return
	}
	done := make(chan struct{})
	w.session.early = done
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer close(done)
		defer w.recoverTo("CreateMultipartUpload", 0)
		_ = w.createUpload() // a failure is the write's, sticky (w.fail)
	}()
}

// ensureUpload creates the multipart upload before the first part, once: it waits for the early
// create when one was started (bounded as every request is, and ended by the write's context),
// so two creates never race.
func (w *Writer) ensureUpload() error {
	if w.session.early != nil {
		<-w.session.early
	}
	return w.createUpload()
}

// createUpload sends CreateMultipartUpload unless the write has its upload already.
func (w *Writer) createUpload() error {
	defer w.createReturned() // whatever the create's fate, the passes ahead must end (ahead.go)
	if w.currentUploadID() != "" {
		return nil
	}
	if err := w.firstErr(); err != nil {
		return err
	}
	in := &store.CreateMultipartUploadInput{
		Bucket: w.bucket, Key: w.key, ContentType: w.cfg.contentType, Metadata: w.cfg.metadata,
		Headers: w.cfg.headers, Encryption: w.cfg.sse,
	}
	if w.caps.alg != store.ChecksumNone {
		in.ChecksumAlgorithm = w.caps.alg
		in.ChecksumType = store.ChecksumTypeComposite
		if w.caps.fullObject {
			in.ChecksumType = store.ChecksumTypeFullObject
		}
	}
	// Journal hook: a placeholder is on disk before the create is sent, so a kill before the
	// real upload id is journaled still leaves a trace Recover can follow; removed on return.
	createdJournaled, err := w.session.journal.creating(func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.session.createAmbiguous })
	if err != nil {
		return w.fail(err)
	}
	defer createdJournaled()
	// The checksum probe goes beside the create, in an upload of its own (probe.go); after it,
	// when the checksum header is only offered: the create's answer says whether the store takes it.
	offered := w.caps.probing
	if !offered {
		w.startProbe(in)
	}
	var id string
	w.session.createStart = time.Now()
	err = w.req.do("CreateMultipartUpload", 0, func(ctx context.Context, _ int) error {
		ctx = w.createSent(ctx) // the first parts are hashed while it is on the wire (ahead.go)
		sent := time.Now()
		out, err := w.st.CreateMultipartUpload(ctx, in)
		if err != nil && w.caps.probing && headerRefused(err) {
			w.verifier.dropOfferedChecksum("CreateMultipartUpload", err)
			in.ChecksumAlgorithm, in.ChecksumType = store.ChecksumNone, store.ChecksumTypeNone
			sent = time.Now()
			out, err = w.st.CreateMultipartUpload(ctx, in)
		}
		if err != nil {
			var re *store.ResponseError
			if !stderrors.As(err, &re) && !stderrors.Is(err, store.ErrInvalidInput) && !notSent(err) {
				// No answer: the store may have created an upload we will never hear of. (Input
				// the adapter refused, or a request that never left (refused, TLS handshake
				// failed), was never sent: nothing can have been created.)
				w.mu.Lock()
				w.session.createAmbiguous = true
				if ctx.Err() != nil {
					// We stopped waiting; the store need not have stopped working on it.
					w.session.createCut, w.session.createCutWaited = time.Now(), time.Since(sent)
				}
				w.mu.Unlock()
			}
			return err
		}
		id = out.UploadID
		took := time.Since(sent)
		w.mu.Lock()
		w.session.createTook = took
		w.mu.Unlock()
		return nil
	})
	w.mu.Lock()
	w.session.createEnd = time.Now()
	w.mu.Unlock()
	w.createReturned()
	if err != nil {
		return w.fail(err)
	}
	w.mu.Lock()
	w.session.uploadID = id
	w.session.uploadIDs[id] = true
	w.mu.Unlock()
	w.log.Debug("multipart upload created", zap.String("upload_id", id), zap.Int64("part_size", w.plan.PartSize))
	// Journal hook: the upload id is on disk before the first part is sent.
	if err := w.session.journal.begin(id); err != nil {
		return w.fail(err)
	}
	if offered {
		w.startProbe(in)
	}
	return nil
}

func (w *Writer) currentUploadID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.session.uploadID
}

// notSent reports whether err is a request's failure before any of its bytes left (a
// store.NotSentError, as the adapters' transports mark it). Any other error, or a Store that does
// not mark them, may have reached the store.
func notSent(err error) bool {
	var ns store.NotSentError
	return stderrors.As(err, &ns) && ns.NotSent()
}
