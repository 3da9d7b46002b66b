package retry

import (
	"context"
	"time"

	"github.com/safeput/safeput/errors"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"
)

// Defaults. The bases follow the AWS SDKs' 2026 retry behaviour: 50 ms for transient failures,
// 1 s for throttling, doubling, capped at 20 s, full jitter; 3 attempts (the SDK default: the
// caller, e.g. a sync manager, re-drives on top of this). The budget is the SDK standard mode's.
//
// Throttling gets more patience than a generic failure: a throttled request is tried up to
// 10 times (Options.ThrottleMaxAttempts) while the retries fit in DefaultThrottleMaxElapsed, so a
// storm in which a third of all requests are throttled does not fail an upload on one unlucky
// request, while a store that throttles everything fails the request within about that
// allowance. The shared retry budget still bounds the extra load of an outage.
//
// The bound of a write that can never succeed: a store that throttles every request of one of
// its steps (every PutObject, or every UploadPart of a multipart write, whose parts are retried
// side by side) ends the write in Throttled once that step's allowance is spent: within
// DefaultThrottleMaxElapsed plus its last attempt, then the clean-up (the abort, bounded by the
// writer's abort timeout). No step beside it spends an allowance of its own on throttling (the
// writer's checksum probe sends each of its requests once, whatever the answer), so a multipart write and a single
// PUT share that bound; writer's TestWireThrottledForever measures both at these defaults.
//
// A request that makes no progress for DefaultStallTimeout (no request-body byte taken by the
// connection and no response byte received) is cut and retried as Transient, code "Stalled".
//
// A store that does not take requests at all (a restart, a rolling upgrade, a balancer with no
// backend: the connection refused or reset, 502, 503 or 504) gets more patience than a generic
// failure: past its MaxAttempts a request is retried while its next sleep ends within 60 s of its
// first attempt (Options.OutageMaxElapsed), those sleeps drawn from the throttling steps (1 s
// base, doubling, 20 s cap, full jitter). An outage that ends within 40 s of a request's first
// attempt (the allowance less the longest sleep) is so ridden out, the request sent again at most
// 20 s after the store is back; a longer one fails the request within the allowance plus its
// last attempt. The retry budget still bounds what all users of the policy spend on it. A request
// marked Op.FirstContact (its store has answered nothing yet) gets MaxAttempts alone.
const (
	DefaultMaxAttempts         = 3
	defaultThrottleMaxAttempts = 10
	DefaultThrottleMaxElapsed  = 45 * time.Second
	DefaultStallTimeout        = 20 * time.Second
	defaultInitialInterval     = 50 * time.Millisecond
	DefaultThrottleInterval    = time.Second
	defaultMaxInterval         = 20 * time.Second
	defaultMultiplier          = 2.0
	defaultIntegrityRetries    = 2
	defaultRetryAfterCap       = 20 * time.Second
	defaultBudget              = 500
	defaultOutageMaxElapsed    = 60 * time.Second
)

// retryCost is what one retry takes from the budget; timeoutCost is for a retry after a timeout,
// which held a connection for the whole timeout. A success after a retry refunds that retry's
// cost; a success at the first attempt adds noRetryIncrement. Options.RetryBudget documents them.
const (
	retryCost        = 5
	timeoutCost      = 10
	noRetryIncrement = 1
)

// option configures a Policy inside the package: New and With turn Options into them, and the
// tests inject clocks, jitter and schedules with the unexported ones.
type option func(*Policy)

// Options are a Policy's settings. New starts from the defaults and With from the parent's
// settings; each then applies the caller's functions, as aws-sdk-go-v2's retryers do:
//
//	p := retry.New(func(o *retry.Options) { o.MaxAttempts = 5 })
type Options struct {
	// MaxAttempts bounds the attempts, the first included (default 3, DefaultMaxAttempts;
	// minimum 1). A throttled request still gets ThrottleMaxAttempts, and one the store did not
	// take the outage allowance: for one attempt whatever the answer, set both to 1 and
	// OutageMaxElapsed to 0.
	MaxAttempts int
	// ThrottleMaxAttempts bounds the attempts when the latest failure was Throttled (default 10;
	// never fewer than MaxAttempts).
	ThrottleMaxAttempts int
	// ThrottleMaxElapsed stops retrying a throttled request when the next sleep would end more
	// than this after Do began (default 45 s, DefaultThrottleMaxElapsed; 0: only the attempts and
	// MaxElapsedTime bound it).
	ThrottleMaxElapsed time.Duration
	// OutageMaxElapsed is the patience for a store that does not take requests at all: a request
	// whose latest failure is a refused, reset or closed connection, a dial that failed, or a 502,
	// 503 or 504 without a throttling code is retried past MaxAttempts while its next sleep ends
	// within this of its first attempt, the sleeps drawn from the throttling steps
	// (ThrottleInterval) (default 60 s; 0: such a failure gets MaxAttempts like any other). The
	// attempts and sleeps of the request all count toward it; MaxElapsedTime and the retry budget
	// still apply. A request marked Op.FirstContact does not get it.
	OutageMaxElapsed time.Duration
	// StallTimeout is the stall window (default 20 s, DefaultStallTimeout; 0 turns stall
	// detection off): an attempt whose request takes no body byte and receives no response byte
	// for this long is cancelled and fails Transient with Code "Stalled" (errors.CodeStalled),
	// then is retried like any transient failure. Progress is what the adapters report through
	// store.ReportProgress; a store that reports none is cut this long after the attempt began,
	// as by a per-attempt timeout. A body byte counts when the connection takes it, and a
	// socket's send buffer (up to net.ipv4.tcp_wmem's maximum on Linux) takes bytes before the
	// link carries them: the window must outlast the time the link needs to drain the send
	// buffers of every connection in flight, or a slow link is cut while still moving.
	StallTimeout time.Duration
	// MaxElapsedTime stops retrying when the next sleep would end more than this after Do began
	// (0: no limit, the default; attempts and the budget bound Do anyway).
	MaxElapsedTime time.Duration
	// InitialInterval is the base delay of Transient and Integrity retries (default 50 ms),
	// ThrottleInterval that of Throttled retries (default 1 s, DefaultThrottleInterval), and
	// MaxInterval caps one computed delay before jitter (default 20 s). Delays double per attempt,
	// with full jitter; a value of 0 or less keeps the previous one.
	InitialInterval  time.Duration
	ThrottleInterval time.Duration
	MaxInterval      time.Duration
	// AttemptTimeout gives each attempt a context with this timeout (0: none, the default). An
	// attempt that fails because of it is Transient, not Canceled.
	AttemptTimeout time.Duration
	// IntegrityRetries caps the retries after Integrity failures (default 2; 0: none). Each such
	// retry must send the clean source bytes again: Do's fn must re-read them, not reuse a buffer
	// that a failed attempt may have consumed or that may be the corrupt copy.
	IntegrityRetries int
	// RetryBudget is the capacity of the retry budget in tokens (default 500; 0 or less turns the
	// budget off). A retry takes 5 tokens (10 after a timeout, which held a connection for the
	// whole timeout); a success after a retry refunds that retry's tokens, a success at the first
	// attempt adds 1. Changed in With, it gives the derived policy a budget of its own.
	RetryBudget int
	// Logger logs each retry (Info) and each give-up for an empty budget (Warn); nil: none.
	Logger *zap.Logger
}

// New returns a policy with the defaults changed by optFns, and a retry budget of its own.
func New(optFns ...func(*Options)) *Policy {
	def := defaultConfig().options()
	o := def
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	return newPolicy(o.apply(def)...)
}

// With returns a policy with p's settings changed by optFns that shares p's retry budget (unless
// optFns change RetryBudget), e.g. a shorter stall window for one kind of request.
func (p *Policy) With(optFns ...func(*Options)) *Policy {
	if p == nil {
		return New(optFns...) // nothing to share
	}
	p.init()
	was := p.cfg.options()
	o := was
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	return p.with(o.apply(was)...)
}

// options reads c back as Options.
func (c config) options() Options {
	return Options{
		MaxAttempts: c.maxAttempts, ThrottleMaxAttempts: c.throttleAttempts, ThrottleMaxElapsed: c.throttleMaxElapsed,
		OutageMaxElapsed: c.outageMaxElapsed, StallTimeout: c.stallTimeout, MaxElapsedTime: c.maxElapsed, InitialInterval: c.initial,
		ThrottleInterval: c.throttleInitial, MaxInterval: c.maxInterval, AttemptTimeout: c.attemptTimeout,
		IntegrityRetries: c.integrityRetries, RetryBudget: c.budgetCap, Logger: c.logger,
	}
}

// apply turns o into options; the budget is replaced only when o changes it from was, so a
// derived policy keeps sharing its parent's.
func (o Options) apply(was Options) []option {
	opts := []option{
		withMaxAttempts(o.MaxAttempts), withThrottleMaxAttempts(o.ThrottleMaxAttempts),
		withThrottleMaxElapsed(o.ThrottleMaxElapsed), withOutageMaxElapsed(o.OutageMaxElapsed), withStallTimeout(o.StallTimeout),
		withMaxElapsedTime(o.MaxElapsedTime), withInitialInterval(o.InitialInterval),
		withThrottleInterval(o.ThrottleInterval), withMaxInterval(o.MaxInterval),
		withAttemptTimeout(o.AttemptTimeout), withIntegrityRetries(o.IntegrityRetries), withLogger(o.Logger),
	}
	if o.RetryBudget != was.RetryBudget {
		opts = append(opts, withRetryBudget(o.RetryBudget))
	}
	return opts
}

type config struct {
	maxAttempts        int
	throttleAttempts   int
	throttleMaxElapsed time.Duration
	outageMaxElapsed   time.Duration
	stallTimeout       time.Duration
	maxElapsed         time.Duration
	initial            time.Duration
	throttleInitial    time.Duration
	maxInterval        time.Duration
	multiplier         float64
	attemptTimeout     time.Duration
	integrityRetries   int
	retryAfterCap      time.Duration
	budgetCap          int
	transientBackOff   func() backoff.BackOff
	throttleBackOff    func() backoff.BackOff
	logger             *zap.Logger

	// Injected for deterministic tests.
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	rand  func() float64

	set bool // false in a zero Policy: init fills the defaults
}

func defaultConfig() config {
	return config{
		maxAttempts:        DefaultMaxAttempts,
		throttleAttempts:   defaultThrottleMaxAttempts,
		throttleMaxElapsed: DefaultThrottleMaxElapsed,
		outageMaxElapsed:   defaultOutageMaxElapsed,
		stallTimeout:       DefaultStallTimeout,
		initial:            defaultInitialInterval,
		throttleInitial:    DefaultThrottleInterval,
		maxInterval:        defaultMaxInterval,
		multiplier:         defaultMultiplier,
		integrityRetries:   defaultIntegrityRetries,
		retryAfterCap:      defaultRetryAfterCap,
		budgetCap:          defaultBudget,
		now:                time.Now,
		sleep:              sleepCtx,
		set:                true,
	}
}

// withMaxAttempts sets Options.MaxAttempts.
func withMaxAttempts(n int) option { return func(p *Policy) { p.cfg.maxAttempts = max(n, 1) } }

// attemptsFor is the attempt limit for a failure of kind k.
func (c *config) attemptsFor(k errors.Kind) int {
	if k == errors.Throttled {
		return max(c.maxAttempts, c.throttleAttempts)
	}
	return c.maxAttempts
}

// withThrottleMaxAttempts sets Options.ThrottleMaxAttempts.
func withThrottleMaxAttempts(n int) option {
	return func(p *Policy) { p.cfg.throttleAttempts = max(n, 1) }
}

// withThrottleMaxElapsed sets Options.ThrottleMaxElapsed.
func withThrottleMaxElapsed(d time.Duration) option {
	return func(p *Policy) { p.cfg.throttleMaxElapsed = max(d, 0) }
}

// withOutageMaxElapsed sets Options.OutageMaxElapsed.
func withOutageMaxElapsed(d time.Duration) option {
	return func(p *Policy) { p.cfg.outageMaxElapsed = max(d, 0) }
}

// withStallTimeout sets Options.StallTimeout.
func withStallTimeout(d time.Duration) option {
	return func(p *Policy) { p.cfg.stallTimeout = max(d, 0) }
}

// withMaxElapsedTime sets Options.MaxElapsedTime.
func withMaxElapsedTime(d time.Duration) option {
	return func(p *Policy) { p.cfg.maxElapsed = max(d, 0) }
}

// withInitialInterval sets Options.InitialInterval.
func withInitialInterval(d time.Duration) option {
	return func(p *Policy) {
		if d > 0 {
			p.cfg.initial = d
		}
	}
}

// withThrottleInterval sets Options.ThrottleInterval.
func withThrottleInterval(d time.Duration) option {
	return func(p *Policy) {
		if d > 0 {
			p.cfg.throttleInitial = d
		}
	}
}

// withMaxInterval sets Options.MaxInterval.
func withMaxInterval(d time.Duration) option {
	return func(p *Policy) {
		if d > 0 {
			p.cfg.maxInterval = d
		}
	}
}

// withMultiplier sets the growth of the delay per attempt (minimum 1).
func withMultiplier(m float64) option {
	return func(p *Policy) {
		if m >= 1 {
			p.cfg.multiplier = m
		}
	}
}

// withAttemptTimeout sets Options.AttemptTimeout.
func withAttemptTimeout(d time.Duration) option {
	return func(p *Policy) { p.cfg.attemptTimeout = max(d, 0) }
}

// withIntegrityRetries sets Options.IntegrityRetries.
func withIntegrityRetries(n int) option {
	return func(p *Policy) { p.cfg.integrityRetries = max(n, 0) }
}

// withRetryAfterCap caps how long a store's Retry-After / x-amz-retry-after hint can make one
// sleep. The hint never shortens the computed delay.
func withRetryAfterCap(d time.Duration) option {
	return func(p *Policy) { p.cfg.retryAfterCap = max(d, 0) }
}

// withRetryBudget sets Options.RetryBudget.
func withRetryBudget(capacity int) option {
	return func(p *Policy) {
		p.cfg.budgetCap = max(capacity, 0)
		p.budget = nil
	}
}

// withAdaptiveRate turns on client-side rate limiting: a Throttled answer halves the request
// rate of everything sharing the policy, successes raise it back until limiting switches off. It
// is not offered yet (no caller has asked for it; adding an option later costs nothing, removing
// one does); its tests keep it working.
func withAdaptiveRate(on bool) option {
	return func(p *Policy) {
		p.limiter = nil
		if on {
			p.limiter = &limiter{}
		}
	}
}

// withLogger sets Options.Logger.
func withLogger(l *zap.Logger) option { return func(p *Policy) { p.cfg.logger = l } }

// withBackOff replaces the delays for Transient and Integrity retries, for tests: f is called
// once per Do and its NextBackOff once per retry; backoff.Stop ends the retries. Not exported:
// the schedule is the options above, and a public backoff.BackOff would tie every caller to
// cenkalti/backoff's major version.
func withBackOff(f func() backoff.BackOff) option {
	return func(p *Policy) { p.cfg.transientBackOff = f }
}

// withThrottleBackOff is withBackOff for Throttled retries.
func withThrottleBackOff(f func() backoff.BackOff) option {
	return func(p *Policy) { p.cfg.throttleBackOff = f }
}

// withClock injects time for tests: now for elapsed time and the limiter, sleep for every wait.
func withClock(now func() time.Time, sleep func(context.Context, time.Duration) error) option {
	return func(p *Policy) {
		p.cfg.now = now
		p.cfg.sleep = sleep
	}
}

// withRand injects the jitter source for tests: delays are rand() × the computed delay.
func withRand(f func() float64) option { return func(p *Policy) { p.cfg.rand = f } }

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
