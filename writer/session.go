package writer

import (
	"context"
	stderrors "errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// session is the write's multipart upload: the steps that open and end the uploads the write
// opens (upload, its own; probe, the checksum probe's beside it), set when the write is made and
// guarded by themselves, and what the other steps record of the upload, guarded by Writer.mu:
// the parts the store acknowledged, how its Complete was answered, the keeper of its journal record.
type session struct {
	upload *uploadSession // the write's upload: create, id, abort, sweep (session.go, cleanup.go)
	probe  *prober        // the checksum probe, beside the create or a single PUT (probe.go)

	parts map[int32]partDone // made by the first part acknowledged (record)
	// completeLost: a CompleteMultipartUpload's answer was lost and its retry found the upload
	// gone, so the object may have landed; the journal record keeps what was intended until the
	// outcome is proven (journalKeeper.forget leaves it).
	completeLost bool
	// completeGone: a CompleteMultipartUpload was answered NoSuchUpload, at its first attempt or
	// at a retry (completeLost): the upload is gone, so unless the HEAD finds this write's object
	// the write did not land (decider.atKey: keyGone).
	completeGone bool
	// commitAnswerLost (atomic, for itself) is set when an attempt of the commit, the single PUT
	// or the Complete, was sent whole and got no answer: it may have landed (Result.CommitAnswerLost).
	commitAnswerLost atomic.Bool
	journal          *journalKeeper // the upload's record in the journal (journal.go)
	// early is closed when the create started as the write began (createEarly) has its answer;
	// nil when none was started. Set before any other goroutine of the write runs.
	early chan struct{}
}

// record keeps a part the store acknowledged. The caller holds Writer.mu.
func (s *session) record(n int32, done partDone) {
	if s.parts == nil { // a single PUT has none
		s.parts = map[int32]partDone{}
	}
	s.parts[n] = done
}

// uploadSession is the write's multipart upload, from its create to its abort (cleanup.go). It
// owns the upload's id (the one open now, and every one it was given), what the create's attempts
// showed (their round trip; when an answer was lost, the window in which the store may have
// created an upload nobody was told of), whether a part request went out whole and got no
// answer, and the note of an abort the store took but could not confirm. It sends the create, the
// abort (confirmed) and the sweep for lost creates, and deletes a wrong object at the key, each
// within the clean-up's bound. It does not own the parts (parts.go), the journal's record of the
// upload (journal.go), nor the write's sticky error: a failure it returns is the caller's to keep.
type uploadSession struct {
	st           store.Store
	bucket, key  string
	log          *zap.Logger
	policy       *retry.Policy  // the clean-up's requests (abort, sweep, delete) run under it
	facts        *endpointFacts // what the endpoint can list (ListParts, ListMultipartUploads)
	abortTimeout time.Duration  // the bound of each clean-up (Options.AbortTimeout)
	// lacks records that the store answered an optional operation "not supported", and says
	// how (optional.go).
	lacks opLacks

	mu  sync.Mutex
	id  string          // the upload open now; "" before the create, and once committed or aborted
	ids map[string]bool // every upload id this write was given
	// created is the create's attempts: their window, whether an answer was lost (see sweepLost).
	created createWindow
	// createTook is the round trip of the create attempt that was answered (pacing.go).
	createTook time.Duration
	// unconfirmed is the note of an abort the store took but could not confirm (it lists no
	// parts), for the failed write's error (takeUnconfirmed).
	unconfirmed string
	// partUnanswered: a part request was written out in full and got no answer, so the store
	// may still be finishing it after the abort (abort looks again).
	partUnanswered atomic.Bool
	// keyDeleted: the object at the key was deleted (the write's own damaged or unproven one), so
	// an earlier Upload attempt's object is no longer there.
	keyDeleted atomic.Bool
}

// createWindow is when the create's attempts ran, and whether one got no answer (ambiguous), so
// the store may hold an upload we never heard of; cut, when we stopped waiting for that attempt
// ourselves (stall window, attempt timeout, cancel), after waiting cutWaited: the store may still
// be carrying it out.
type createWindow struct {
	ambiguous  bool
	start, end time.Time
	cut        time.Time
	cutWaited  time.Duration
}

// newUploadSession makes s (zero, allocated with its write) the upload step of a write of
// bucket/key to st.
func newUploadSession(s *uploadSession, st store.Store, bucket, key string, log *zap.Logger, policy *retry.Policy, facts *endpointFacts,
	abortTimeout time.Duration, lacks opLacks) *uploadSession {
	s.st, s.bucket, s.key, s.log, s.policy, s.facts = st, bucket, key, log, policy, facts
	s.abortTimeout, s.lacks = abortTimeout, lacks
	return s
}

// opLacks records that the store answered an optional operation "not supported", and says how
// (optionalOps.lacksOp).
type opLacks interface {
	lacksOp(op string, err error) string
}

// current is the upload open now, "" when none is.
func (s *uploadSession) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// adopt makes id the upload open now (a resumed or recovered one), as if this write had created it.
func (s *uploadSession) adopt(id string) {
	s.mu.Lock()
	s.id = id
	if s.ids == nil { // most writes are single PUTs and never open one
		s.ids = map[string]bool{}
	}
	s.ids[id] = true
	s.mu.Unlock()
}

// committed forgets the open upload: it became the object, nothing is left to abort.
func (s *uploadSession) committed() {
	s.mu.Lock()
	s.id = ""
	s.mu.Unlock()
}

// given is every upload id this write was given.
func (s *uploadSession) given() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.ids))
}

// createLost reports whether a create attempt got no answer, so the store may hold an upload
// nobody was told of.
func (s *uploadSession) createLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created.ambiguous
}

// createRoundTrip is the round trip of the answered create attempt (0 before one).
func (s *uploadSession) createRoundTrip() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createTook
}

// partWentUnanswered records that a part request was written out in full and got no answer.
func (s *uploadSession) partWentUnanswered() { s.partUnanswered.Store(true) }

// create sends CreateMultipartUpload for in, with do (the write's retry runner), and makes the
// upload it is given the open one. sent wraps each attempt's context (the write's work that
// starts once the request is out). When in's checksum header is only offered and the store
// refuses it, the create goes again without it, and headerRefusedBy is that refusal, for the
// caller to drop the header from the write. A failure is returned as do classified it.
func (s *uploadSession) create(do func(op string, part int32, fn func(ctx context.Context, attempt int) error) error,
	in *store.CreateMultipartUploadInput, sent func(context.Context) context.Context, offered bool) (id string, headerRefusedBy, err error) {
	s.mu.Lock()
	s.created.start = time.Now()
	s.mu.Unlock()
	err = do("CreateMultipartUpload", 0, func(ctx context.Context, _ int) error {
		ctx = sent(ctx)
		sentAt := time.Now()
		out, err := s.st.CreateMultipartUpload(ctx, in)
		if err != nil && offered && headerRefused(err) {
			headerRefusedBy, offered = err, false
			in.ChecksumAlgorithm, in.ChecksumType = store.ChecksumNone, store.ChecksumTypeNone
			sentAt = time.Now()
			out, err = s.st.CreateMultipartUpload(ctx, in)
		}
		if err != nil {
			var re *store.ResponseError
			if !stderrors.As(err, &re) && !stderrors.Is(err, store.ErrInvalidInput) && !notSent(err) {
				// No answer: the store may have created an upload we will never hear of. (Input
				// the adapter refused, or a request that never left (refused, TLS handshake
				// failed), was never sent: nothing can have been created.)
				s.mu.Lock()
				s.created.ambiguous = true
				if ctx.Err() != nil {
					// We stopped waiting; the store need not have stopped working on it.
					s.created.cut, s.created.cutWaited = time.Now(), time.Since(sentAt)
				}
				s.mu.Unlock()
			}
			return err
		}
		id = out.UploadID
		took := time.Since(sentAt)
		s.mu.Lock()
		s.createTook = took
		s.mu.Unlock()
		return nil
	})
	s.mu.Lock()
	s.created.end = time.Now()
	s.mu.Unlock()
	if err != nil {
		return "", headerRefusedBy, err
	}
	s.adopt(id)
	return id, headerRefusedBy, nil
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

// createUpload creates the write's multipart upload (uploadSession.create) unless it has one
// already, between the steps that go with it: the journal's placeholder before and the upload id
// after, the checksum probe beside it, the passes ahead while it is on the wire.
func (w *Writer) createUpload() error {
	defer w.parts.createReturned() // whatever the create's fate, the passes ahead must end (ahead.go)
	if w.session.upload.current() != "" {
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
	createdJournaled, err := w.session.journal.creating(w.session.upload.createLost)
	if err != nil {
		return w.fail(err)
	}
	defer createdJournaled()
	// The checksum probe goes beside the create, in an upload of its own (probe.go); after it,
	// when the checksum header is only offered: the create's answer says whether the store takes it.
	offered := w.caps.probing
	if !offered {
		w.session.probe.start(w.ctx, in, w.decider().probes(w.facts.checking()))
	}
	id, refused, err := w.session.upload.create(w.req.do, in, w.parts.createSent, offered)
	if refused != nil {
		w.verifier.dropOfferedChecksum("CreateMultipartUpload", refused)
	}
	w.parts.createReturned()
	if err != nil {
		return w.fail(err)
	}
	w.log.Debug("multipart upload created", zap.String("upload_id", id), zap.Int64("part_size", w.plan.PartSize))
	// Journal hook: the upload id is on disk before the first part is sent.
	if err := w.session.journal.begin(id); err != nil {
		return w.fail(err)
	}
	if offered {
		w.session.probe.start(w.ctx, in, w.decider().probes(w.facts.checking()))
	}
	return nil
}

// notSent reports whether err is a request's failure before any of its bytes left (a
// store.NotSentError, as the adapters' transports mark it). Any other error, or a Store that does
// not mark them, may have reached the store.
func notSent(err error) bool {
	var ns store.NotSentError
	return stderrors.As(err, &ns) && ns.NotSent()
}

// writerHooks answers the verifier's uploadHooks from the write's session, under Writer.mu
// where the session's record is read.
type writerHooks struct{ w *Writer }

var _ uploadHooks = (*writerHooks)(nil)

func (h *writerHooks) partETags() []string {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return etagsInOrder(h.w.session.parts)
}

func (h *writerHooks) fate() (completeLost, completeGone bool) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return h.w.session.completeLost, h.w.session.completeGone
}

func (h *writerHooks) abort() *sperrors.Error { return h.w.abortUpload(h.w.ctx) }
func (h *writerHooks) committed()             { h.w.session.upload.committed() }
func (h *writerHooks) deleteObject() error    { return h.w.session.upload.deleteObject(h.w.ctx) }
