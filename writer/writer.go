package writer

import (
	"context"
	stderrors "errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
)

// The code reads in the order of a write:
//   - uploader.go: Uploader, what its writes share; budget.go: the memory budget they share
//   - writer.go: Writer (its steps, and its state by step: intake, session, outcome, tally), New,
//     Close, Abort
//   - intake.go: Write and ReadFrom into pooled part buffers; the intake (its buffers, their
//     release to the budget) is a step of its own, which the Writer dispatches full parts from
//   - session.go: uploadSession, the multipart upload step (its create and id); the parts the
//     store acknowledged
//   - probe.go: prober, the checksum probe step: whether the store checks part checksums, asked
//     in an upload of its own, never the caller's
//   - parts.go: a part's body (buffer or ReaderAt section), dispatch, and the part sender
//     (partSender): UploadPart with retries and its checked receipt or classified error; beside it
//     the pacing of a ReaderAt source's parts (pacing.go, handoff.go) and their sums hashed ahead
//     of the create (ahead.go);
//     fence.go: a part's buffer guarded against a request that outlives its call
//   - commit.go: the single PUT, or ListParts check and CompleteMultipartUpload; committer.go: the
//     committer, which makes the Complete from the parts' receipts, checks it against ListParts
//     and sends it
//   - landed.go: the verifier, the step that proves what landed: HEAD or read-back evidence, lost
//     answers, create-only; it returns a verdict, the Writer keeps the Result or the error
//   - evidence.go: which checksum to send and which evidence can prove the object;
//     encryption.go: the encryption asked for, proven by the HEAD (both the verifier's)
//   - decide_parts.go: the decisions before the commit (single PUT or multipart, part sizes and
//     the final part, the tail at Close, when a part's MD5 is taken, the probe); decide.go: the
//     decisions on the store's answers after; both apart from the I/O (decide_test.go). Whether
//     one failed request is sent again is the retry package's decision (retry/decide.go)
//   - cleanup.go: uploadSession's end: abort (confirmed), sweep of lost creates, delete of a
//     wrong object
//   - failures.go: the retry wrapper, error constructors, events; result.go: Result and Event
//   - optional.go: optionalOps, the store's optional operations (ListParts, ListMultipartUploads,
//     conditional writes, HEAD's checksum mode) and what the write does without them;
//     notes.go: the notes every step adds for Result.Notes
//   - upload.go: Upload for an io.Reader; journal.go, resume.go, recover.go: crash consistency
//     (the journal keeper, which records the write; the resumer, which continues a journaled
//     upload of the same source; Recover)
//   - savings.go: the cost-saving strategies a write may go without (Options.Savings)
//   - endpointcache.go: what an endpoint showed, kept across processes; instrument.go: spans

// ErrClosed is the cause of the error a Write after Close returns.
var ErrClosed = stderrors.New("writer is closed")

// Writer streams bytes into one object.
//
// Write copies into pooled part buffers and never sends a request for a small write; full parts
// go out in the background, up to the configured concurrency. Close commits: one PutObject when
// everything fits the single-PUT threshold, else the last part, a ListParts check and
// CompleteMultipartUpload; then a HEAD verifies what landed, unless the commit's answer proves
// it already (SaveRereads). Close returns nil only when the object is at the key, verified;
// Result then says how, and from which answer (Result.VerifiedBy).
//
// Errors are sticky: after the first failure every Write and Close return it, and Close never
// commits an upload that saw an error (a columnar writer may swallow its own footer error and
// still call Close). On any failure the multipart upload is aborted on a context detached from
// the caller's; if even that fails the error says so and carries the upload id.
//
// Write, ReadFrom and Close must be called from one goroutine at a time (as with any io.Writer);
// Abort may be called from any goroutine: it cancels the write at once, then waits for an
// in-progress Write or ReadFrom to return (a ReadFrom blocked reading its source holds it until
// that read returns). Abort after Close has begun does nothing: Close decides the outcome.
type Writer struct {
	ctx    context.Context
	cancel context.CancelFunc
	st     store.Store
	bucket string
	key    string
	cfg    config
	plan   multipart.Plan
	caps   *checksumCaps  // shared with the verifier, which learns from the answers what to send
	facts  *endpointFacts // what writes learned about this store's endpoint (evidence.go)
	log    *zap.Logger

	wg sync.WaitGroup
	mu sync.Mutex

	// steps
	req      *requester // every store request goes through it (requests.go)
	errs     errorSite  // the write's classified errors (failures.go)
	verifier *verifier  // the checks before and after the commit (landed.go, evidence.go, encryption.go)
	parts    partSender // sends each part and returns its receipt (parts.go)

	// The write's state by step.
	intake  intake  // the bytes on their way into parts, owned by the writing goroutine
	session session // the multipart upload: its steps and what the others record of it (session.go)
	outcome outcome // how the write ended and what it left, guarded by mu
	tally   *tally  // what the write counted, for its Result and log (requests.go)
}

// outcome is how the write ended, and what it leaves at the store for the caller to know;
// guarded by Writer.mu.
type outcome struct {
	err      error // sticky first error
	closed   bool
	closeErr error
	result   *Result
	notes    *notes // Result.Notes, added to by every step
	// leftUploads and unswept: what a failed write's error names as left behind (uploads it could
	// not abort, why the look for a lost create's upload failed), for a later Upload attempt.
	leftUploads []string
	unswept     error
}

// checksumCaps is what this write sends, given the algorithm asked for and the store's rules.
type checksumCaps struct {
	alg        store.ChecksumAlgorithm // sent as x-amz-checksum-*; "" when the store takes none we can use
	local      store.ChecksumAlgorithm // computed locally (and compared with whatever the store reports) even when not sent
	fullObject bool                    // multipart upload carries a FULL_OBJECT checksum
	md5        bool                    // compute MD5 (Content-MD5 or ETag check) before sending
	// md5Late: the HEAD may report the checksum sent (not yet known): a part or PUT whose receipt
	// echoes that checksum, on a store known to check it, needs no MD5; any other gets its MD5
	// then, from the bytes still held (evidence.go).
	md5Late   bool
	sendMD5   bool // send Content-MD5 (asked for, or the store's only body check)
	etagIsMD5 bool // single-PUT and part ETags are the body's MD5
	mpETagMD5 bool // multipart ETags are md5-of-md5s-N
	probing   bool // alg is offered though the profile does not list it
}

// New returns a Writer for bucket/key. Nothing is sent until a part fills or Close, except the
// CreateMultipartUpload of a write whose declared Size is over the single-PUT threshold (see
// Uploader.New). ctx governs the whole write: when it ends, in-flight requests stop and Close returns Canceled.
//
// New is a shorthand for a write from a fresh Uploader of st made for this call alone: it has a
// retry policy (and budget) of its own unless Options.Retry names one, and learns the store afresh.
// A process that writes more than once to a store makes one Uploader and calls its New.
func New(ctx context.Context, st store.Store, bucket, key string, optFns ...func(*Options)) (*Writer, error) {
	return shorthand(st).New(ctx, bucket, key, optFns...)
}

// invalid says what makes cfg unusable for any write, or "".
func (cfg config) invalid() string {
	if cfg.rulesErr != nil {
		return cfg.rulesErr.Error()
	}
	if cfg.sizeHint < -1 {
		return fmt.Sprintf("negative size %d", cfg.sizeHint)
	}
	if cfg.concurrency < 1 || cfg.concurrency > maxConcurrency {
		return fmt.Sprintf("concurrency must be from 1 to %d, got %d", maxConcurrency, cfg.concurrency)
	}
	if cfg.partSize <= 0 {
		return fmt.Sprintf("part size must be positive, got %d", cfg.partSize)
	}
	if err := cfg.sse.Validate(); err != nil {
		return strings.TrimPrefix(err.Error(), store.ErrInvalidInput.Error()+": ")
	}
	if c := cfg.resolvedChecksum(); !c.Valid() || (c != store.ChecksumNone && !integrity.IsCRC(c)) {
		return fmt.Sprintf("checksum %q is not supported (want CRC64NVME, CRC32C, CRC32 or none)", c)
	}
	return ""
}

// resolvedChecksum is the algorithm asked for, or the rules' preferred one.
func (cfg config) resolvedChecksum() store.ChecksumAlgorithm {
	if cfg.checksumSet {
		return cfg.checksum
	}
	return cfg.rules.Checksum()
}

// newWriter makes a write of u's store with cfg (u's options and the write's own).
func (u *Uploader) newWriter(ctx context.Context, bucket, key string, cfg config) (*Writer, error) {
	const op = "New"
	bad := func(format string, args ...any) error {
		e := sperrors.New(sperrors.Permanent, op, format, args...)
		e.Bucket, e.Key = bucket, key
		return e
	}
	st := u.st
	if ctx == nil {
		return nil, bad("nil context")
	}
	if st == nil {
		return nil, bad("nil store")
	}
	if err := store.ValidateBucketKey(bucket, key); err != nil {
		return nil, bad("%v", err)
	}
	if msg := cfg.invalid(); msg != "" {
		return nil, bad("%s", msg)
	}
	if msg := u.sseCOverHTTP(cfg.customerKeyAsked(), cfg.allowSSECOverHTTP, cfg.logger); msg != "" {
		return nil, bad("%s", msg)
	}
	cfg.checksum = cfg.resolvedChecksum()
	if !cfg.checksumSet && cfg.rules.Name == multipart.DefaultProfile {
		// strict's CRC32C is not taken whole by every provider (R2: per part only); where the
		// endpoint names one, send the checksum it takes whole.
		if r := u.endpointRules; r != nil && !r.Checksums.Allows(cfg.checksum, store.ChecksumTypeFullObject) {
			cfg.checksum = r.Checksum()
		}
	}
	size := cfg.sizeHint
	plan, err := cfg.rules.Plan(multipart.PlanRequest{
		Size:            size,
		PartSize:        cfg.partSize,
		Concurrency:     cfg.concurrency,
		Threshold:       cfg.threshold,
		ExpectedMaxSize: cfg.expectedMax,
	})
	if err != nil {
		return nil, classifyRule(op, bucket, key, err)
	}
	if plan.PartSize > math.MaxInt64/int64(cfg.concurrency) {
		return nil, bad("concurrency %d × part size %s does not fit in 64 bits: lower the concurrency or the part size",
			cfg.concurrency, bytesize.Format(plan.PartSize))
	}
	if cfg.budget == nil {
		b, err := NewBudget(int64(cfg.concurrency) * plan.PartSize)
		if err != nil {
			return nil, bad("%v", err)
		}
		b.spares = &smallSpares // the write's own: its small buffers serve the next writes
		cfg.budget = b
	} else if need := int64(cfg.concurrency) * plan.PartSize; need > cfg.budget.Limit() {
		return nil, bad("concurrency %d × part size %s = %s exceeds the whole memory budget %s",
			cfg.concurrency, bytesize.Format(plan.PartSize), bytesize.Format(need), bytesize.Format(cfg.budget.Limit()))
	}
	if cfg.policy == nil { // not made by u.config: a recovery writer given no policy
		cfg.policy = u.cfg.policy
	}
	// One buffer holds the single-PUT object, so the threshold cannot exceed a part.
	plan.Threshold = min(plan.Threshold, plan.PartSize)
	ctx = cfg.startSpan(ctx, bucket, key) // after every check: a write that never began has no span
	st = wrapStore(cfg.instrument, st)
	wctx, cancel := context.WithCancel(ctx)
	// One allocation holds the Writer and its steps: a flush makes one Writer per small object.
	// The steps reach one another through interfaces on these (no closures, each its own
	// allocation).
	a := new(struct {
		w        Writer
		tally    tally
		caps     checksumCaps
		req      requester
		notes    notes
		upload   uploadSession
		optional optionalOps
		verifier verifier
		probe    prober
		journal  journalKeeper
		hooks    writerHooks
	})
	w := &a.w
	*w = Writer{
		ctx:    wctx,
		cancel: cancel,
		st:     st,
		bucket: bucket,
		key:    key,
		cfg:    cfg,
		plan:   plan,
		facts:  u.facts.forBucket(factsKey(bucket, cfg.sse)),
		tally:  newTally(&a.tally),
	}
	a.caps = chooseChecksum(cfg, w.facts)
	w.caps = &a.caps
	w.log = withWriteFields(cfg.logger, bucket, key)
	upload := newUploadSession(&a.upload, st, bucket, key, w.log, cfg.policy, w.facts, cfg.abortTimeout, &a.optional)
	w.session.upload = upload
	w.errs = errorSite{ctx: wctx, bucket: bucket, key: key, upload: upload, replayable: cfg.replayable}
	a.req = requester{ctx: wctx, policy: cfg.policy, bucket: bucket, key: key, upload: upload,
		facts: w.facts, events: emitter{bucket: bucket, key: key, observer: cfg.observer, span: cfg.span}, tally: w.tally, log: w.log}
	w.req = &a.req
	w.outcome.notes = &a.notes
	a.optional = optionalOps{st: st, bucket: bucket, key: key, customerKey: cfg.customerKey(), createOnly: cfg.createOnly,
		req: w.req, facts: w.facts, notes: w.outcome.notes, log: w.log, upload: upload}
	a.hooks = writerHooks{w: w}
	w.verifier = &a.verifier
	*w.verifier = verifier{st: st, bucket: bucket, key: key, cfg: verifierConfigOf(cfg), log: w.log,
		req: w.req, errs: w.errs, events: w.req.events, facts: w.facts, caps: w.caps, notes: w.outcome.notes, optional: &a.optional,
		upload: &a.hooks}
	w.session.probe = &a.probe
	*w.session.probe = prober{st: st, bucket: bucket, key: key, log: w.log, policy: cfg.policy, facts: w.facts, abortTimeout: cfg.abortTimeout,
		customerKey: cfg.customerKey(), errs: w.errs, fail: w, aborter: upload}
	w.parts = partSender{
		ctx: wctx, st: st, bucket: bucket, key: key, log: w.log,
		req: w.req, errs: w.errs, events: w.req.events, policy: cfg.policy, tally: w.tally, facts: w.facts,
		caps: w.caps, slots: partSlots{ch: make(chan struct{}, cfg.concurrency)}, buffers: &w.intake, upload: upload,
		cfg: partsConfig{customerKey: cfg.customerKey(), sizeHint: cfg.sizeHint, concurrency: cfg.concurrency},
	}
	w.intake.init(cfg, plan.PartSize, w.caps.local, &w.parts.slots, w.log)
	w.session.journal = newJournalKeeper(&a.journal, cfg, bucket, key, plan.PartSize, w.caps.local, w.errs, w.log)
	return w, nil
}

// withWriteFields is l naming the write's bucket and key in every line; a logger that writes
// nothing (the default) is kept as it is, so that a flush of small writes does not build one
// per write.
func withWriteFields(l *zap.Logger, bucket, key string) *zap.Logger {
	if !l.Core().Enabled(zapcore.FatalLevel) {
		return l
	}
	return l.With(zap.String("bucket", bucket), zap.String("key", key))
}

// Close commits the object and verifies it. It returns nil only when the object landed and
// verified; Result then reports how. A second Close returns the first Close's error (or nil).
func (w *Writer) Close() error {
	w.intake.op.Lock()
	defer w.intake.op.Unlock()
	w.mu.Lock()
	if w.outcome.closed {
		err := w.outcome.closeErr
		w.mu.Unlock()
		return err
	}
	w.outcome.closed = true
	w.mu.Unlock()

	err := w.commit()
	if err != nil {
		uploadID := w.session.upload.current() // before cleanup aborts it and forgets the id
		err = w.cleanup(err)
		w.req.events.emit(Event{Type: EventFailed, UploadID: uploadID, Kind: sperrors.KindOf(err), Err: err, Elapsed: time.Since(w.tally.start)})
		w.log.Warn("write failed", zap.Int64("size", w.intake.size), zap.String("upload_id", uploadID), zap.Error(err))
	}
	probeLeft := w.session.probe.end() // its upload aborted before the sweep looks, and what it left reported with the write's
	left, unswept := w.session.upload.sweepLostCreates(w.ctx, probeLeft)
	if len(left) > 0 || unswept != nil {
		// Say so, in the Result or the error, so a sweep can find them.
		if err == nil {
			w.mu.Lock()
			w.outcome.result.LeftBehind = left
			if unswept != nil {
				w.outcome.result.MaybeLeftBehind = true
				w.outcome.result.Notes = append(w.outcome.result.Notes, unsweptNote(unswept))
			}
			w.mu.Unlock()
		} else {
			err = withLeftBehind(err, left, unswept)
			w.mu.Lock()
			w.outcome.leftUploads, w.outcome.unswept = append(w.outcome.leftUploads, left...), unswept
			w.mu.Unlock()
		}
	}
	w.cancel()
	w.facts.keep()                                                     // for the next process, when the CLI keeps an endpoint cache
	w.session.journal.settleCreate(len(left) == 0 && unswept == nil)   // journal hook: a lost create's placeholder
	w.session.journal.settle(err, w.decider().recordAtEnd(err != nil)) // journal hook: record removed if landed, else kept for recovery
	w.mu.Lock()
	w.outcome.closeErr = err
	res := w.outcome.result
	w.mu.Unlock()
	if w.cfg.ownSpan {
		if err != nil {
			res = nil
		}
		endSpan(w.cfg.span, res, err)
	}
	return err
}

// Result returns what a successful Close did; nil before Close or after a failure.
func (w *Writer) Result() *Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.outcome.result
}

// Abort discards the write: in-flight parts stop, the multipart upload is aborted, nothing is
// committed. It returns nil when nothing is left behind (or nothing was started), and an error
// carrying the upload id when the abort itself failed. After Abort, Write and Close fail.
func (w *Writer) Abort(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	aborted := w.errs.errorf(sperrors.Canceled, "Abort", context.Canceled, "write aborted by the caller")
	w.mu.Lock()
	if w.outcome.closed {
		w.mu.Unlock()
		return nil
	}
	w.outcome.closed = true
	if w.outcome.err == nil {
		w.outcome.err = aborted
	}
	w.outcome.closeErr = w.outcome.err
	w.mu.Unlock()
	// Cancel first: a Write blocked on a part slot or on the memory budget returns at once and
	// gives up the buffers it owns.
	w.cancel()
	w.intake.op.Lock()
	defer w.intake.op.Unlock()
	w.wg.Wait()
	w.intake.releaseHeld(w.session.upload.current())
	var err error
	if aerr := w.abortUpload(ctx); aerr != nil {
		err = aerr
	}
	probeLeft := w.session.probe.end()
	// An upload a lost CreateMultipartUpload answer left is this write's too, as in Close.
	left, unswept := w.session.upload.sweepLostCreates(w.ctx, probeLeft)
	if len(left) > 0 || unswept != nil {
		if err == nil {
			err = w.errs.errorf(sperrors.Transient, "Abort", nil, "write aborted by the caller")
		}
		err = withLeftBehind(err, left, unswept)
	}
	w.facts.keep()
	w.session.journal.settleCreate(len(left) == 0 && unswept == nil)                                 // journal hook: a lost create's placeholder
	w.session.journal.settle(w.outcome.closeErr, w.decider().recordAtEnd(w.outcome.closeErr != nil)) // journal hook: kept for recovery when the abort failed
	if w.cfg.ownSpan {
		if err != nil {
			endSpan(w.cfg.span, nil, err)
		} else {
			endSpan(w.cfg.span, nil, w.outcome.closeErr)
		}
	}
	return err
}

// withLeftBehind names in err the uploads a lost CreateMultipartUpload answer left (or the
// checksum probe could not abort), so a sweep can find them, and says when the look for them
// failed (unswept).
func withLeftBehind(err error, left []string, unswept error) error {
	return annotated(err, func(e *sperrors.Error) {
		e.AbortFailed = true
		if e.UploadID == "" && len(left) > 0 {
			e.UploadID = left[0]
		}
		if len(left) > 0 {
			e.Message += fmt.Sprintf("; uploads left behind by a lost CreateMultipartUpload answer or the checksum probe: %v", left)
		}
		if unswept != nil {
			e.Message += "; " + unsweptNote(unswept)
		}
	})
}

// unsweptNote says that a lost CreateMultipartUpload answer may have left an upload nobody can
// name, and how to find it.
func unsweptNote(err error) string {
	if store.Unsupported(err) {
		return fmt.Sprintf("a CreateMultipartUpload answer was lost and the store does not support ListMultipartUploads (%s), "+
			"so the upload it may have left could not be looked for: an empty incomplete upload of the key may remain", unsupportedWhy(err))
	}
	return fmt.Sprintf("a CreateMultipartUpload answer was lost and the look for the upload it may have left failed (%s): "+
		"sweep the key for an empty incomplete upload", sperrors.Redact(err.Error()))
}
