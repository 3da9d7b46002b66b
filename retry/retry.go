// Package retry runs one store request with bounded, classified retries.
//
// A Policy decides from the errors package's Kind: Transient and Throttled failures are retried
// with exponential backoff and full jitter (Throttled from a longer base), Integrity failures a
// small number of times, and Permanent, Compatibility, Precondition, Canceled and Internal
// failures never. Everything that shares one *Policy (and the policies derived from it with With)
// shares its retry budget, so a long outage makes every writer give up soon instead of
// multiplying the load. A store that takes no request at all (a restart: connections refused or
// reset, 502, 503, 504) is waited for past MaxAttempts within Options.OutageMaxElapsed, unless it
// has answered nothing yet (Op.FirstContact). New and With take functions that set Options, as
// aws-sdk-go-v2's retryers do.
//
// There is no process-wide policy: a writer.Uploader owns one, shared by its writes. A zero Policy
// is newPolicy()'s; a nil *Policy acts as a fresh newPolicy() at each call, so it shares no retry budget with
// anything. A Policy must not be copied after use.
package retry

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/logredact"
	"github.com/safeput/safeput/store"
)

// Op names the request being retried: the fields go into every log line and the returned error.
type Op struct {
	Name, Bucket, Key, UploadID string
	PartNumber                  int32
	// Size is the request body's length (the part or object), 0 when there is none.
	Size int64
	// FirstContact: no request to this store has been answered yet, so a store that takes no
	// request (refused, reset, 502, 503, 504) may never have been there (a wrong endpoint, a
	// store not started): the request gets MaxAttempts, not the outage allowance.
	FirstContact bool
}

// Stats reports what Do spent.
type Stats struct {
	// Attempts made, the successful one included.
	Attempts int
	// ByKind counts the failed attempts by their Kind; nil when none failed.
	ByKind map[errors.Kind]int
	// Slept is the time spent waiting: backoff sleeps and adaptive-rate waits.
	Slept time.Duration
}

// Add merges o into s, e.g. to total the stats of every part of an upload.
func (s *Stats) Add(o Stats) {
	s.Attempts += o.Attempts
	s.Slept += o.Slept
	if len(o.ByKind) == 0 {
		return
	}
	if s.ByKind == nil {
		s.ByKind = make(map[errors.Kind]int, len(o.ByKind))
	}
	for k, n := range o.ByKind {
		s.ByKind[k] += n
	}
}

// Policy retries requests. It is safe for concurrent use.
type Policy struct {
	once    sync.Once
	cfg     config
	budget  *budget
	limiter *limiter
	log     *zap.Logger
}

// newPolicy returns a policy with the defaults changed by opts, and a budget of its own.
func newPolicy(opts ...option) *Policy {
	p := &Policy{cfg: defaultConfig()}
	for _, o := range opts {
		o(p)
	}
	p.init()
	return p
}

// with returns a policy with p's settings changed by opts that shares p's retry budget and rate
// limiter (unless opts replace them).
func (p *Policy) with(opts ...option) *Policy {
	if p == nil {
		return newPolicy(opts...) // nothing to share
	}
	p.init()
	c := &Policy{cfg: p.cfg, budget: p.budget, limiter: p.limiter}
	for _, o := range opts {
		o(c)
	}
	c.init()
	return c
}

// Budget returns the tokens left in the retry budget, or -1 when the policy has none.
func (p *Policy) Budget() int {
	if p == nil {
		p = newPolicy()
	}
	p.init()
	if p.budget == nil {
		return -1
	}
	return p.budget.available()
}

func (p *Policy) init() {
	p.once.Do(func() {
		if !p.cfg.set {
			p.cfg = defaultConfig()
		}
		if p.cfg.now == nil {
			p.cfg.now = time.Now
		}
		if p.cfg.sleep == nil {
			p.cfg.sleep = sleepCtx
		}
		if p.cfg.rand == nil {
			p.cfg.rand = rand.Float64
		}
		if p.budget == nil && p.cfg.budgetCap > 0 {
			p.budget = newBudget(p.cfg.budgetCap)
		}
		if p.limiter != nil {
			p.limiter.init(p.cfg.now)
		}
		p.log = logredact.Logger(p.cfg.logger)
	})
}

// Do calls fn until it succeeds, fails in a way a retry cannot fix, or the attempts, the
// integrity cap, the elapsed time or the budget run out. fn gets ctx with the per-attempt
// timeout and the attempt number (1, 2, ...); a retry after an Integrity failure must send the
// clean source bytes again, which fn must re-read.
//
// The error is an *errors.Error with Op's fields, Attempts and the Kind, its cause the last
// attempt's error; when the caller's ctx ends (also during a sleep, which ends at once) its Kind
// is Canceled and its cause wraps both ctx's error and the last attempt's. A panic in fn is
// recovered as Internal.
func (p *Policy) Do(ctx context.Context, op Op, fn func(ctx context.Context, attempt int) error) (Stats, error) {
	if p == nil {
		p = newPolicy()
	}
	p.init()
	if ctx == nil {
		ctx = context.Background()
	}
	var stats Stats
	if fn == nil {
		e := p.newError(op, errors.Internal, nil)
		e.Message = "retry.Do called with a nil func"
		return stats, e
	}
	c := &p.cfg
	start := c.now()
	// Most calls succeed at once: the backoffs and the failure counts are made at the first
	// failure, not per call (a flush of small objects makes several calls per object).
	var transient, throttle backoff.BackOff
	var (
		last      *errors.Error
		integrity int // retries spent on Integrity failures
		lastCost  int // budget cost of the retry that led to this attempt
	)
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return stats, p.canceled(ctx, op, stats, last, nil)
		}
		if p.limiter != nil {
			if wait := p.limiter.reserve(); wait > 0 {
				if err := c.sleep(ctx, wait); err != nil {
					return stats, p.canceled(ctx, op, stats, last, err)
				}
				stats.Slept += wait
			}
		}
		err := p.attempt(ctx, op, attempt, fn)
		stats.Attempts++
		if err == nil {
			if p.budget != nil {
				if lastCost > 0 {
					p.budget.put(lastCost)
				} else {
					p.budget.put(noRetryIncrement)
				}
			}
			if p.limiter != nil {
				p.limiter.succeeded()
			}
			return stats, nil
		}
		e := p.classify(ctx, op, err, stats.Attempts)
		if stats.ByKind == nil {
			stats.ByKind = make(map[errors.Kind]int)
			transient, throttle = p.backOffs()
		}
		stats.ByKind[e.Kind]++
		last = e
		if e.Kind == errors.Throttled && p.limiter != nil {
			p.limiter.throttled()
		}
		f := failure{err: e, attempt: attempt, integritySpent: integrity, elapsed: c.now().Sub(start), unavailable: unavailable(e) && !op.FirstContact}
		f.delay, f.delayOK = p.delay(e, c.outage(f), transient, throttle)
		delay := f.delay
		step := c.afterFailure(f)
		if step.giveUp {
			if step.why != "" {
				return stats, note(e, step.why)
			}
			return stats, e
		}
		if step.integrity {
			integrity++
		}
		if ctx.Err() != nil {
			// The caller gave up while the attempt failed: spend no budget on a retry that
			// will not happen.
			return stats, p.canceled(ctx, op, stats, last, nil)
		}
		cost := step.cost
		if p.budget != nil && !p.budget.take(cost) {
			p.log.Warn("retry budget exhausted", append(p.fields(op, attempt, e), zap.Error(e))...)
			return stats, note(e, "retry budget exhausted")
		}
		lastCost = cost
		p.log.Info("retrying", append(p.fields(op, attempt, e), zap.Duration("delay", delay), zap.Error(e))...)
		if err := c.sleep(ctx, delay); err != nil {
			return stats, p.canceled(ctx, op, stats, last, err)
		}
		stats.Slept += delay
	}
}

// attempt runs fn once under the per-attempt timeout and turns a panic into an Internal error.
func (p *Policy) attempt(ctx context.Context, op Op, attempt int, fn func(context.Context, int) error) (err error) {
	actx := ctx
	if attempt > 1 { // only a resend pays for the context value: the first attempt is the common case
		actx = context.WithValue(actx, attemptKey{}, attempt)
	}
	if p.cfg.attemptTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, p.cfg.attemptTimeout)
		defer cancel()
	}
	var wd *watchdog
	if p.cfg.stallTimeout > 0 {
		actx, wd = startWatchdog(actx, p.cfg.stallTimeout)
		defer wd.stop()
	}
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("panic in retried function", append(p.fields(op, attempt, nil), zap.Any("panic", r), zap.StackSkip("stack", 1))...)
			err = errors.FromPanic(op.Name, r)
		}
	}()
	err = fn(actx, attempt)
	if wd != nil {
		err = wd.stalled(err)
	}
	return err
}

type attemptKey struct{}

// AttemptFromContext returns the attempt number (1, 2, ...) of the request whose context ctx is,
// as Do numbers them; 1 for a context Do did not make. A store wrapper reads it to tell a resend
// (tracing's http.request.resend_count is the attempt minus one).
func AttemptFromContext(ctx context.Context) int {
	if ctx == nil {
		return 1
	}
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		return n
	}
	return 1
}

// classify returns a fresh *Error (Classify copies a template), so setting Attempts is safe.
func (p *Policy) classify(ctx context.Context, op Op, err error, attempts int) *errors.Error {
	e := errors.ClassifyContext(ctx, &errors.Error{Op: op.Name, Bucket: op.Bucket, Key: op.Key, UploadID: op.UploadID, PartNumber: op.PartNumber, Err: err})
	e.Attempts = attempts
	return e
}

func (p *Policy) newError(op Op, k errors.Kind, cause error) *errors.Error {
	return &errors.Error{Kind: k, Op: op.Name, Bucket: op.Bucket, Key: op.Key, UploadID: op.UploadID, PartNumber: op.PartNumber, Err: cause}
}

// canceled builds the Canceled error for a caller's ctx that ended. Its cause wraps ctx's cause
// and the last attempt's cause (not the last *Error, so errors.Is matches one Kind only).
func (p *Policy) canceled(ctx context.Context, op Op, stats Stats, last *errors.Error, sleepErr error) *errors.Error {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = sleepErr
	}
	if cause == nil {
		cause = context.Canceled
	}
	e := p.newError(op, errors.Canceled, cause)
	e.Attempts = stats.Attempts
	if last != nil {
		e.Code, e.StatusCode, e.RequestID = last.Code, last.StatusCode, last.RequestID
		e.Message = "canceled while retrying a " + last.Kind.String() + " failure"
		var lastCause error = last
		if last.Err != nil {
			lastCause = last.Err
		}
		e.Err = fmt.Errorf("%w; last attempt: %w", cause, lastCause)
	}
	return e
}

// note prefixes why Do gave up to e's message.
func note(e *errors.Error, why string) *errors.Error {
	if e.Message == "" {
		e.Message = why
	} else {
		e.Message = why + ": " + e.Message
	}
	return e
}

// backOffs returns this Do call's delay sequences. Both advance on every retry, so the n-th retry
// waits the n-th step of whichever sequence its failure's kind selects, as the AWS SDK does.
func (p *Policy) backOffs() (transient, throttle backoff.BackOff) {
	c := &p.cfg
	if c.transientBackOff != nil {
		transient = c.transientBackOff()
	}
	if transient == nil {
		transient = withFullJitter(p.exponential(c.initial), c.rand)
	}
	if c.throttleBackOff != nil {
		throttle = c.throttleBackOff()
	}
	if throttle == nil {
		throttle = withFullJitter(p.exponential(c.throttleInitial), c.rand)
	}
	transient.Reset()
	throttle.Reset()
	return transient, throttle
}

func (p *Policy) exponential(initial time.Duration) *backoff.ExponentialBackOff {
	c := &p.cfg
	return &backoff.ExponentialBackOff{
		InitialInterval:     initial,
		RandomizationFactor: 0, // withFullJitter adds the jitter
		Multiplier:          c.multiplier,
		MaxInterval:         c.maxInterval,
		MaxElapsedTime:      0, // Do checks the elapsed time itself, with the jittered delay
		Stop:                backoff.Stop,
		Clock:               clockFunc(c.now),
	}
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// delay returns the sleep before the next attempt, and false when a custom backoff says stop. A
// throttled request, and one retried on the outage allowance (outage), sleeps the throttling step.
func (p *Policy) delay(e *errors.Error, outage bool, transient, throttle backoff.BackOff) (time.Duration, bool) {
	a, b := transient.NextBackOff(), throttle.NextBackOff()
	d := a
	if e.Kind == errors.Throttled || outage {
		d = b
	}
	if d == backoff.Stop {
		return 0, false
	}
	d = max(d, 0)
	var re *store.ResponseError
	if stderrors.As(e, &re) {
		if hint := min(re.RetryAfter, p.cfg.retryAfterCap); hint > d {
			d = hint
		}
	}
	return d, true
}

func (p *Policy) fields(op Op, attempt int, e *errors.Error) []zap.Field {
	f := []zap.Field{
		zap.String("op", op.Name),
		zap.String("bucket", op.Bucket),
		zap.String("key", op.Key),
		zap.Int32("part", op.PartNumber),
		zap.String("upload_id", op.UploadID),
		zap.Int64("size", op.Size),
		zap.Int("attempt", attempt),
	}
	if e != nil {
		f = append(f, zap.Stringer("kind", e.Kind), zap.String("code", e.Code), zap.Int("status", e.StatusCode))
	}
	return f
}

// fullJitter wraps b so each delay is uniform in [0, b's delay): the "full jitter" of the AWS
// architecture blog, which spreads retries of many clients best. rnd returns [0, 1); nil uses
// math/rand/v2.
func withFullJitter(b backoff.BackOff, rnd func() float64) backoff.BackOff {
	if rnd == nil {
		rnd = rand.Float64
	}
	return &fullJitter{b: b, rand: rnd}
}

type fullJitter struct {
	b    backoff.BackOff
	rand func() float64
}

func (j *fullJitter) Reset() { j.b.Reset() }

func (j *fullJitter) NextBackOff() time.Duration {
	d := j.b.NextBackOff()
	if d <= 0 {
		return d
	}
	return time.Duration(j.rand() * float64(d))
}

// unavailable reports a failure that says the store is not taking requests at all, as during a
// restart, a rolling upgrade or with no backend behind its balancer: a connection refused, reset,
// aborted or closed before an answer, a dial that failed, or a 502, 503 or 504 that is not a
// throttling answer (SlowDown is Throttled) nor a full store. A request cut for a stall is not one:
// the store took it and went silent, which the stall window already bounds.
func unavailable(e *errors.Error) bool {
	if e.Kind != errors.Transient || e.UploadGone || e.StoreFull || e.Code == errors.CodeStalled {
		return false
	}
	switch e.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case 0:
	default:
		return false
	}
	var op *net.OpError
	if stderrors.As(e, &op) && op.Op == "dial" {
		return true
	}
	for _, errno := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE} {
		if stderrors.Is(e, errno) {
			return true
		}
	}
	// A write to a connection the transport closed on seeing the peer's reset: net.ErrClosed.
	return stderrors.Is(e, io.EOF) || stderrors.Is(e, io.ErrUnexpectedEOF) || stderrors.Is(e, net.ErrClosed)
}

// resendable reports whether re-sending the same request may succeed: Transient, Throttled and
// Integrity (from the caller's clean bytes), but not a request whose upload the store dropped,
// which only a new upload can fix. It differs from errors.Error.Retryable, which is about running
// the whole write again once these retries are spent.
func resendable(e *errors.Error) bool {
	if e.UploadGone {
		return false
	}
	return e.Kind == errors.Transient || e.Kind == errors.Throttled || e.Kind == errors.Integrity
}
