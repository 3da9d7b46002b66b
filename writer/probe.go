package writer

import (
	"bytes"
	"context"
	stderrors "errors"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// A receipt that echoes the checksum sent spares its part's MD5 only on a store known to check
// that checksum: an echo alone proves nothing (a store or middlebox may parrot the header), and a
// part damaged on the way to a store that checks nothing is caught before Complete only by its
// MD5. So the first write that would defer its MD5s to an endpoint not yet known asks, in a
// multipart upload of its own on the write's key (the write's rights, encryption and checksum
// algorithm), sent beside the write's own CreateMultipartUpload (after it, when the checksum
// header is only offered and the create's answer says whether the store takes it): it creates
// that upload, sends it one tiny part whose checksum is wrong on purpose, and aborts it. An
// Uploader that writes only single PUTs (a flush of small objects) asks the same way from its
// second one (its first may be its only one: probesBesidePut), beside the PUT or after its answer
// likewise (prober.startBesidePut), so that its later PUTs may be proven by their answers' echo
// (putProves) without an MD5. The answer to that part:
//   - refused as a digest mismatch (BadDigest, MinIO's XAmzContentChecksumMismatch): the store
//     checks the checksums of parts, so a part it took with the checksum echoed arrived as sent;
//   - taken: it checks nothing, and every part gets its MD5;
//   - refused as Permanent with 403 (AccessDenied, a key the store no longer knows), to the part
//     or the create: an answer to the write's credentials on the write's key, not to the probe's
//     checksum, so a multipart write fails with it as its own request would (one answer, one
//     meaning; a single PUT's own answer spoke for the credentials already): nothing is known;
//   - anything else (a throttle, a 5xx, a lost answer, none within probeTimeout): not known, and
//     the write hashes every part.
//
// Nothing of the probe enters the caller's upload. Its requests carry SaveProbe in their context
// (Instrumentation.WrapStore) and count in no write's Result. Its create and part are each sent
// once, whatever the answer: the probe is evidence, not a step of the write, so it adds no retry
// allowance to the write's bound. Until the answer is in, a write assumes the endpoint checks
// nothing: a receipt that would trust its echo waits for the answer (bounded by probeTimeout;
// mostly not at all, the probe's requests being tiny and sent with the write's create), and the
// listing before Complete and the HEAD after it are sent unless the endpoint is known to check.
//
// The probe's upload is aborted whatever happened (retried, and confirmed when its part may still
// be landing, within Options.AbortTimeout), on a context detached from the write's. One it could
// not abort, or that a lost create answer may have left, the write reports as its own
// (Result.LeftBehind, MaybeLeftBehind: sweepLostCreates), so Close and Abort wait for that
// clean-up. One probe per Uploader, bucket and encryption, or per day for the CLI
// (endpointcache.go), whatever it learned: an endpoint it could not tell about gets every MD5,
// and the first HEAD then settles what later writes hash.

// probeBody is the probe's body; it is sent with a well-formed checksum of other bytes.
var probeBody = []byte("safeput: does this store check part checksums?")

const (
	// probePart is the probe's part number, in its own upload.
	probePart = 1
	// probeTimeout bounds the probe's create and part together, and so how long a receipt may
	// wait for the answer: past it the answer is not known.
	probeTimeout = 10 * time.Second
)

// checksumProbe is one probe, with what it needs and nothing of the write's: the store, a policy
// that sends each request once, and the write's create, whose rights, encryption and checksum
// algorithm the probe's upload takes.
type checksumProbe struct {
	st          store.Store
	policy      *retry.Policy
	create      store.CreateMultipartUploadInput
	customerKey store.CustomerKey
	log         *zap.Logger
}

// probeAsked is what a probe's create and part found.
type probeAsked struct {
	verdict  tri    // whether the endpoint checks part checksums
	uploadID string // the probe's upload, to abort; "" when the create gave none
	// refused is a Permanent 403 to the create or the part: the write's credentials refused.
	refused error
	// lost: the create got no answer, so the store may hold an upload no id names.
	lost *lostCreate
	// partUnanswered: the part got no answer, so the store may still be storing it when the
	// abort lands, and re-create the upload to hold it.
	partUnanswered bool
}

// lostCreate is a CreateMultipartUpload whose answer was lost: sent between from and to; cut,
// when we stopped waiting for it ourselves, after waiting waited (the store may still carry it out).
type lostCreate struct {
	from, to, cut time.Time
	waited        time.Duration
}

// prober is the write's checksum probe. It owns the probe's run: whether this write sent one
// (claimed from the endpoint's facts, once per Uploader and endpoint), beside a single PUT or the
// write's create, and what it left (an upload it could not abort, a create whose answer was lost),
// until end hands that to the sweep (uploadSession.sweepLostCreates). The probe's requests run on a
// context of their own, derived from the write's, that end cuts. It does not own the answer, which
// is the endpoint's (endpointFacts), nor the write's upload or sticky error: a refusal of the
// credentials goes to fail, the write's.
type prober struct {
	st           store.Store
	bucket, key  string
	log          *zap.Logger
	policy       *retry.Policy // the write's: the probe's abort runs under it; its create and part go once
	facts        *endpointFacts
	abortTimeout time.Duration
	customerKey  store.CustomerKey
	// errs names the write's errors, with its open upload (uploadSession.current).
	errs errorSite
	// fail ends the write with err (its sticky error): a refusal of the write's credentials to the
	// probe, or a panic in the probe's goroutine.
	fail failer
	// aborter aborts the probe's upload and confirms it gone (uploadSession.abortConfirmed).
	aborter confirmedAborter

	mu  sync.Mutex
	run probeRun
}

// failer ends a write with err, its sticky error, and returns what the write failed with
// (Writer.fail).
type failer interface{ fail(err error) error }

// confirmedAborter aborts an upload and confirms it gone (uploadSession.abortConfirmed).
type confirmedAborter interface {
	abortConfirmed(ctx context.Context, id string) (unconfirmed string, err error)
}

// probeRun is what the write's probe, when it sent one, leaves for Close and Abort (guarded by
// prober.mu).
type probeRun struct {
	done   chan struct{} // closed once the probe's upload is aborted or given up; nil: no probe
	cancel context.CancelFunc
	// besidePut: sent beside a single PUT, for the Uploader's later ones (startBesidePut): its
	// question is not cut when the write ends, since its answer is all it is for.
	besidePut bool
	left      probeLeft
}

// probeLeft is what the probe left at the store: its upload, when it could not be aborted (ids),
// and its create whose answer was lost (lost), for the sweep.
type probeLeft struct {
	ids  []string
	lost *lostCreate
}

// markProbe returns ctx marking its requests as the probe's: ctx.Value(SaveProbe) is true.
func markProbe(ctx context.Context) context.Context { return context.WithValue(ctx, SaveProbe, true) }

// start starts the probe, when decided (decider.probes: this write defers its MD5s and its
// endpoint is not yet known to check, nor asked by another write already), with the write's
// create (in), so its answer comes about with the first parts' receipts. It runs apart from the
// write's parts, on a context derived from ctx (the write's): the commit never waits for it; Close
// and Abort wait for its clean-up (end).
func (p *prober) start(ctx context.Context, in *store.CreateMultipartUploadInput, decided bool) {
	if !decided {
		return
	}
	p.launch(ctx, in, false)
}

// startBesidePut starts the probe beside a single PUT (its request in), when decided
// (decider.probesBesidePut: that PUT's answer cannot be proven by its echo yet but a later one's
// could): a flush of small objects sends no multipart write, so without it an Uploader would never
// learn that its store checks checksums, and every single PUT would take its MD5. The probe asks
// in an upload of its own on the PUT's key, with the PUT's encryption, headers and checksum
// algorithm (a FULL_OBJECT one when fullObject); the PUT does not wait for it and keeps its MD5,
// and so do the writes that run meanwhile. Close waits for the probe's answer and its upload's
// abort (end), so nothing of it outlives the write: an Uploader has no Close of its own, and a
// process that writes one object and exits would otherwise leave the probe's upload behind.
func (p *prober) startBesidePut(ctx context.Context, in *store.PutObjectInput, decided, fullObject bool) {
	if !decided {
		return
	}
	create := &store.CreateMultipartUploadInput{
		Bucket: in.Bucket, Key: in.Key, ContentType: in.ContentType, Metadata: in.Metadata,
		Headers: in.Headers, Encryption: in.Encryption, ChecksumAlgorithm: in.Checksum.Algorithm,
		ChecksumType: store.ChecksumTypeComposite,
	}
	if fullObject {
		create.ChecksumType = store.ChecksumTypeFullObject
	}
	p.launch(ctx, create, true)
}

// launch sends the probe with the create in, unless the endpoint was asked already; beside a
// single PUT (besidePut), a refusal of the credentials does not fail the write, whose own PUT
// answered for them.
func (p *prober) launch(ctx context.Context, in *store.CreateMultipartUploadInput, besidePut bool) {
	asked := p.facts.claimProbe()
	if asked == nil {
		return
	}
	q := &checksumProbe{st: p.st, policy: p.policy.With(sendOnce), create: *in, customerKey: p.customerKey, log: p.log}
	ctx, cancel := context.WithCancel(markProbe(ctx))
	done := make(chan struct{})
	p.mu.Lock()
	p.run.done, p.run.cancel, p.run.besidePut = done, cancel, besidePut
	p.mu.Unlock()
	go func() {
		defer close(done)
		defer p.recoverTo("AbortMultipartUpload")
		p.cleanUp(ctx, p.ask(ctx, q, asked, besidePut))
	}()
}

// recoverTo turns a panic in the probe's goroutine into an Internal failure of the write instead
// of a crash.
func (p *prober) recoverTo(op string) {
	if r := recover(); r != nil {
		e := p.errs.errorf(sperrors.Internal, op, nil, "recovered panic: %v", r)
		p.log.Error("panic recovered", zap.String("op", op), zap.Int32("part", 0), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		_ = p.fail.fail(e)
	}
}

// ask runs the probe q's create and part, publishes the answer to every write of the endpoint
// (closing asked), and fails this write on a refusal of its credentials, unless the probe went
// beside a single PUT (besidePut).
func (p *prober) ask(ctx context.Context, q *checksumProbe, asked chan struct{}, besidePut bool) (a probeAsked) {
	defer func() { p.facts.answered(a.verdict, asked) }()
	defer p.recoverTo("CreateMultipartUpload")
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	a = q.ask(ctx)
	if a.refused != nil && besidePut {
		p.log.Info("the checksum probe's own upload of this key was refused: whether the store checks checksums is not known, and single PUTs keep their MD5",
			zap.Error(a.refused))
	} else if a.refused != nil {
		_ = p.fail.fail(annotated(a.refused, func(e *sperrors.Error) {
			e.UploadID = p.errs.uploadID()
			e.Message = joinMessage(e.Message, "refused to the checksum probe's own upload of this key, with the write's credentials")
		}))
	}
	return a
}

// ask creates the probe's upload and sends its part, each once, within ctx.
func (p *checksumProbe) ask(ctx context.Context) (a probeAsked) {
	in := p.create
	wrong, err := integrity.Sum(in.ChecksumAlgorithm, append([]byte("not "), probeBody...))
	if err != nil {
		return a // an algorithm the probe cannot sum: nothing asked, the parts hash every byte
	}
	start := time.Now()
	_, err = p.policy.Do(ctx, retry.Op{Name: "CreateMultipartUpload", Bucket: in.Bucket, Key: in.Key},
		func(ctx context.Context, _ int) error {
			sent := time.Now()
			out, err := p.st.CreateMultipartUpload(ctx, &in)
			if err == nil {
				a.uploadID = out.UploadID
				return nil
			}
			var re *store.ResponseError
			if !stderrors.As(err, &re) && !stderrors.Is(err, store.ErrInvalidInput) && !notSent(err) {
				// No answer: the store may have created an upload we never heard of.
				a.lost = &lostCreate{from: start, to: time.Now()}
				if ctx.Err() != nil {
					a.lost.cut, a.lost.waited = time.Now(), time.Since(sent)
				}
			}
			return err
		})
	if err != nil {
		if refusedAccess(err) {
			a.refused = err
		}
		p.log.Debug("probe's upload not created: whether the store checks part checksums is not known", zap.Error(err))
		return a
	}
	var answer error
	_, err = p.policy.Do(ctx, retry.Op{Name: "UploadPart", Bucket: in.Bucket, Key: in.Key, UploadID: a.uploadID, PartNumber: probePart, Size: int64(len(probeBody))},
		func(ctx context.Context, _ int) error {
			_, err := p.st.UploadPart(ctx, &store.UploadPartInput{
				Bucket: in.Bucket, Key: in.Key, UploadID: a.uploadID, PartNumber: probePart,
				Body: bytes.NewReader(probeBody), ContentLength: int64(len(probeBody)),
				Checksum: store.Checksum{Algorithm: in.ChecksumAlgorithm, Value: wrong}, SSECustomerKey: p.customerKey,
			})
			answer = err
			if probeAnswer(err) == yes {
				return nil // the answer asked for, not a failure
			}
			return err
		})
	a.verdict = probeAnswer(answer)
	var re *store.ResponseError
	a.partUnanswered = answer != nil && !stderrors.As(answer, &re) && !notSent(answer)
	if refusedAccess(err) {
		a.refused = err
	}
	p.log.Debug("probed whether the store checks part checksums", zap.String("probe_upload_id", a.uploadID), zap.Int32("part", probePart),
		zap.Int64("size", int64(len(probeBody))), zap.String("checksum", string(in.ChecksumAlgorithm)),
		zap.Bool("checks", a.verdict == yes), zap.Bool("known", a.verdict != unknown), zap.NamedError("answer", answer))
	return a
}

// cleanUp aborts the probe's upload on a context detached from ctx with the clean-up's bound,
// and keeps for end what it could not remove. The abort is retried under the write's policy; it
// is confirmed (uploadSession.abortConfirmed) only when the part got no answer and so may still be
// landing: an answered part leaves nothing in flight to re-create the upload.
func (p *prober) cleanUp(ctx context.Context, a probeAsked) {
	var left []string
	if a.uploadID != "" {
		ctx, cancel := cleanupContext(ctx, p.abortTimeout)
		var unconfirmed string
		var err error
		if a.partUnanswered {
			unconfirmed, err = p.aborter.abortConfirmed(ctx, a.uploadID)
		} else {
			_, err = p.policy.Do(ctx, retry.Op{Name: "AbortMultipartUpload", Bucket: p.bucket, Key: p.key, UploadID: a.uploadID},
				func(ctx context.Context, _ int) error {
					err := p.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: p.bucket, Key: p.key, UploadID: a.uploadID})
					if isNoSuchUpload(err) {
						return nil // gone already
					}
					return err
				})
		}
		cancel()
		switch {
		case err != nil:
			p.log.Warn("the checksum probe's upload could not be aborted: incomplete upload left behind", zap.String("probe_upload_id", a.uploadID), zap.Error(err))
			left = []string{a.uploadID}
		case unconfirmed != "":
			p.log.Info("the checksum probe's upload aborted, not confirmable: the store cannot list parts", zap.String("probe_upload_id", a.uploadID), zap.String("why", unconfirmed))
		default:
			p.log.Debug("the checksum probe's upload aborted", zap.String("probe_upload_id", a.uploadID))
		}
	}
	p.mu.Lock()
	p.run.left = probeLeft{ids: left, lost: a.lost}
	p.mu.Unlock()
}

// end ends this write's probe, if it sent one, and returns what it left for the sweep: a question
// still out is cut (its answer is then not known), unless it went beside a single PUT (then it
// runs to its answer, within probeTimeout, or until the write's context ends), and the abort of
// its upload waited for, which its own bound ends.
func (p *prober) end() probeLeft {
	p.mu.Lock()
	done, cancel, besidePut := p.run.done, p.run.cancel, p.run.besidePut
	p.mu.Unlock()
	if done == nil {
		return probeLeft{}
	}
	if !besidePut {
		cancel()
	}
	<-done
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	return probeLeft{ids: slices.Clone(p.run.left.ids), lost: p.run.left.lost}
}

// claimProbe makes the caller the one write that asks this endpoint, when its answer is not known
// and no probe was sent, and returns the channel answered closes; nil otherwise.
func (f *endpointFacts) claimProbe() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checksParts != unknown || f.probed {
		return nil
	}
	f.probed = true
	f.asking = make(chan struct{})
	return f.asking
}

// answered records a probe's verdict and releases the writes waiting for it (awaitAnswer).
func (f *endpointFacts) answered(verdict tri, asked chan struct{}) {
	f.mu.Lock()
	// A receipt without the echo, seen meanwhile by another write, still decides.
	if f.checksParts == unknown {
		f.checksParts = verdict
	}
	if f.asking == asked {
		f.asking = nil
	}
	f.mu.Unlock()
	close(asked)
}

// awaitAnswer waits for the answer of the probe out for this endpoint, if any (its create and
// part are bounded by probeTimeout), or for ctx's end.
func (f *endpointFacts) awaitAnswer(ctx context.Context) {
	f.mu.Lock()
	asking := f.asking
	f.mu.Unlock()
	if asking == nil {
		return
	}
	select {
	case <-asking:
	case <-ctx.Done():
	}
}

// refusedAccess: a Permanent 403, the store refusing the write's credentials or rights
// (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, ...), whatever request it answered.
func refusedAccess(err error) bool {
	e := asError(err)
	return e != nil && e.Kind == sperrors.Permanent && e.StatusCode == 403
}

// sendOnce makes a policy send its request once, whatever the answer: throttled or refused too
// (the probe).
func sendOnce(o *retry.Options) { o.MaxAttempts, o.ThrottleMaxAttempts, o.OutageMaxElapsed = 1, 1, 0 }
