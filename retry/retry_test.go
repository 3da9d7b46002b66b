package retry

import (
	"context"
	stderrors "errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// fakeClock records sleeps and advances time by them, so delays are exact and tests instant.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return nil
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// testPolicy has a fake clock and no jitter (rand() = 1: each delay is the full computed one).
func testPolicy(opts ...option) (*Policy, *fakeClock) {
	c := newFakeClock()
	return newPolicy(append([]option{withClock(c.now, c.sleep), withRand(func() float64 { return 1 })}, opts...)...), c
}

func resp(status int, code string) error {
	return &store.ResponseError{Op: "UploadPart", StatusCode: status, Code: code, Message: "msg", RequestID: "RID"}
}

var (
	e503        = resp(503, "")
	e500        = resp(500, "InternalError")
	eSlowDown   = resp(503, "SlowDown")
	eBadDigest  = resp(400, "BadDigest")
	eDenied     = resp(403, "AccessDenied")
	eTooSmall   = resp(400, "EntityTooSmall")
	ePrecond    = resp(412, "PreconditionFailed")
	eNoUpload   = resp(404, "NoSuchUpload")
	eRefused    = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	eReset      = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	errPanicked = stderrors.New("panic marker")
)

// seq returns a fn failing with errs in order, then succeeding; it records the attempt numbers.
func seq(errs ...error) (func(context.Context, int) error, *[]int) {
	var mu sync.Mutex
	var seen []int
	return func(_ context.Context, attempt int) error {
		mu.Lock()
		seen = append(seen, attempt)
		mu.Unlock()
		if attempt > len(errs) {
			return nil
		}
		if stderrors.Is(errs[attempt-1], errPanicked) {
			panic("boom")
		}
		return errs[attempt-1]
	}, &seen
}

var testOp = Op{Name: "UploadPart", Bucket: "bkt", Key: "a/b", UploadID: "U1", PartNumber: 7}

const ms = time.Millisecond

func TestSequences(t *testing.T) {
	cases := []struct {
		name     string
		opts     []option
		errs     []error
		sleeps   []time.Duration
		attempts int
		want     errors.Kind // Unknown: success
		byKind   map[errors.Kind]int
	}{
		{"success", nil, nil, nil, 1, errors.Unknown, map[errors.Kind]int{}},
		{"transient then success", nil, []error{e503}, []time.Duration{50 * ms}, 2, errors.Unknown, map[errors.Kind]int{errors.Transient: 1}},
		{"two transient then success", nil, []error{e503, e500}, []time.Duration{50 * ms, 100 * ms}, 3, errors.Unknown, map[errors.Kind]int{errors.Transient: 2}},
		{"throttled", nil, []error{eSlowDown, eSlowDown}, []time.Duration{time.Second, 2 * time.Second}, 3, errors.Unknown, map[errors.Kind]int{errors.Throttled: 2}},
		{"transient then throttled", nil, []error{e503, eSlowDown}, []time.Duration{50 * ms, 2 * time.Second}, 3, errors.Unknown, map[errors.Kind]int{errors.Transient: 1, errors.Throttled: 1}},
		{"attempts run out", nil, []error{e500, e500, e500}, []time.Duration{50 * ms, 100 * ms}, 3, errors.Transient, map[errors.Kind]int{errors.Transient: 3}},
		{"a store down: retried past the attempts, on the throttling steps", nil, []error{eRefused, eRefused, eRefused, e503, eReset},
			[]time.Duration{50 * ms, 100 * ms, 4 * time.Second, 8 * time.Second, 16 * time.Second}, 6, errors.Unknown, map[errors.Kind]int{errors.Transient: 5}},
		{"the outage allowance ends an outage", nil, []error{e503, e503, e503, e503, e503, e503, e503, e503, e503},
			// 0.05+0.1+4+8+16+20 = 48.15 s; the next 20 s sleep would end past the 60 s allowance.
			[]time.Duration{50 * ms, 100 * ms, 4 * time.Second, 8 * time.Second, 16 * time.Second, 20 * time.Second}, 7, errors.Transient, map[errors.Kind]int{errors.Transient: 7}},
		{"no outage allowance: attempts as any transient failure", []option{withOutageMaxElapsed(0)}, []error{eRefused, eRefused, eRefused},
			[]time.Duration{50 * ms, 100 * ms}, 3, errors.Transient, map[errors.Kind]int{errors.Transient: 3}},
		{"integrity then success", nil, []error{eBadDigest}, []time.Duration{50 * ms}, 2, errors.Unknown, map[errors.Kind]int{errors.Integrity: 1}},
		{"permanent", nil, []error{eDenied}, nil, 1, errors.Permanent, map[errors.Kind]int{errors.Permanent: 1}},
		{"compatibility", nil, []error{eTooSmall}, nil, 1, errors.Compatibility, map[errors.Kind]int{errors.Compatibility: 1}},
		{"precondition", nil, []error{ePrecond}, nil, 1, errors.Precondition, map[errors.Kind]int{errors.Precondition: 1}},
		{"upload gone", nil, []error{eNoUpload}, nil, 1, errors.Transient, map[errors.Kind]int{errors.Transient: 1}},
		{"panic is internal", nil, []error{errPanicked}, nil, 1, errors.Internal, map[errors.Kind]int{errors.Internal: 1}},
		{"already classified internal", nil, []error{errors.New(errors.Internal, "Verify", "invariant")}, nil, 1, errors.Internal, map[errors.Kind]int{errors.Internal: 1}},
		{"throttle allowance ends a storm", nil, []error{eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown},
			// 1+2+4+8+16 = 31 s; the next 20 s sleep would end past the 45 s allowance.
			[]time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}, 6, errors.Throttled, map[errors.Kind]int{errors.Throttled: 6}},
		{"throttled gets more attempts than transient", nil, []error{eSlowDown, eSlowDown, eSlowDown, eSlowDown},
			[]time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, 5, errors.Unknown, map[errors.Kind]int{errors.Throttled: 4}},
		{"throttle attempts cap", []option{withThrottleMaxElapsed(0)}, []error{eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown},
			[]time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 20 * time.Second, 20 * time.Second, 20 * time.Second, 20 * time.Second}, 10, errors.Throttled, map[errors.Kind]int{errors.Throttled: 10}},
		{"max interval caps", []option{withMaxAttempts(8), withThrottleMaxElapsed(0)}, []error{eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown, eSlowDown},
			[]time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 20 * time.Second, 20 * time.Second}, 8, errors.Unknown, map[errors.Kind]int{errors.Throttled: 7}},
		{"custom intervals", []option{withInitialInterval(10 * ms), withMultiplier(3), withMaxAttempts(4)}, []error{e503, e503, e503},
			[]time.Duration{10 * ms, 30 * ms, 90 * ms}, 4, errors.Unknown, map[errors.Kind]int{errors.Transient: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, clock := testPolicy(c.opts...)
			fn, seen := seq(c.errs...)
			st, err := p.Do(context.Background(), testOp, fn)
			if got := clock.slept(); fmt.Sprint(got) != fmt.Sprint(c.sleeps) {
				t.Errorf("sleeps %v, want %v", got, c.sleeps)
			}
			if st.Attempts != c.attempts || len(*seen) != c.attempts {
				t.Errorf("attempts %d (fn saw %v), want %d", st.Attempts, *seen, c.attempts)
			}
			for i, a := range *seen {
				if a != i+1 {
					t.Errorf("attempt numbers %v", *seen)
				}
			}
			if fmt.Sprint(st.ByKind) != fmt.Sprint(c.byKind) {
				t.Errorf("ByKind %v, want %v", st.ByKind, c.byKind)
			}
			var total time.Duration
			for _, d := range c.sleeps {
				total += d
			}
			if st.Slept != total {
				t.Errorf("Slept %v, want %v", st.Slept, total)
			}
			if c.want == errors.Unknown {
				if err != nil {
					t.Fatalf("err %v", err)
				}
				return
			}
			var e *errors.Error
			if !stderrors.As(err, &e) || e.Kind != c.want {
				t.Fatalf("err %v, want kind %s", err, c.want)
			}
			if e.Op != "UploadPart" || e.Bucket != "bkt" || e.Key != "a/b" || e.UploadID != "U1" || e.PartNumber != 7 || e.Attempts != c.attempts {
				t.Errorf("fields not filled: %+v", e)
			}
		})
	}
}

func TestReturnedErrorKeepsCause(t *testing.T) {
	p, _ := testPolicy(withThrottleMaxAttempts(3))
	fn, _ := seq(e503, e503, eSlowDown)
	_, err := p.Do(context.Background(), testOp, fn)
	var re *store.ResponseError
	if !stderrors.As(err, &re) || re.Code != "SlowDown" {
		t.Fatalf("cause not reachable: %v", err)
	}
	if !stderrors.Is(err, errors.Throttled) || stderrors.Is(err, errors.Transient) {
		t.Errorf("kind sentinels: %v", err)
	}
	want := "safeput: UploadPart bkt/a/b part 7 throttled code=SlowDown status=503 attempts=3 upload=U1 request=RID: "
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%s\nwant prefix %s", err, want)
	}
}

func TestFullJitter(t *testing.T) {
	c := newFakeClock()
	p := newPolicy(withClock(c.now, c.sleep), withRand(func() float64 { return 0.5 }))
	fn, _ := seq(e503, eSlowDown)
	if _, err := p.Do(context.Background(), testOp, fn); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(c.slept()); got != fmt.Sprint([]time.Duration{25 * ms, time.Second}) {
		t.Errorf("sleeps %s", got)
	}
	// The default source stays inside [0, delay).
	b := withFullJitter(backoff.NewConstantBackOff(time.Second), nil)
	for range 100 {
		if d := b.NextBackOff(); d < 0 || d >= time.Second {
			t.Fatal(d)
		}
	}
}

func TestBudget(t *testing.T) {
	p, _ := testPolicy(withRetryBudget(12), withMaxAttempts(5))
	fn, _ := seq(e503, e503, e503, e503)
	st, err := p.Do(context.Background(), testOp, fn)
	// Two retries take 5 each; the third finds 2 tokens.
	if st.Attempts != 3 || p.Budget() != 2 {
		t.Fatalf("attempts %d budget %d", st.Attempts, p.Budget())
	}
	var e *errors.Error
	if !stderrors.As(err, &e) || e.Kind != errors.Transient || !strings.Contains(e.Error(), "retry budget exhausted") {
		t.Fatalf("%v", err)
	}
	// Empty: the next failure is returned at once.
	fn, _ = seq(eSlowDown)
	if st, err = p.Do(context.Background(), testOp, fn); st.Attempts != 1 || !strings.Contains(err.Error(), "retry budget exhausted") || !stderrors.Is(err, errors.Throttled) {
		t.Fatalf("%d %v", st.Attempts, err)
	}
	// A success without retry adds 1 token.
	fn, _ = seq()
	for range 3 {
		if _, err := p.Do(context.Background(), testOp, fn); err != nil {
			t.Fatal(err)
		}
	}
	if p.Budget() != 5 {
		t.Fatalf("budget %d, want 5", p.Budget())
	}
	// A success after a retry refunds that retry.
	fn, _ = seq(e503)
	if _, err := p.Do(context.Background(), testOp, fn); err != nil || p.Budget() != 5 {
		t.Fatalf("budget %d after a refunded retry: %v", p.Budget(), err)
	}
	// Refills never exceed the capacity.
	fn, _ = seq()
	for range 20 {
		_, _ = p.Do(context.Background(), testOp, fn)
	}
	if p.Budget() != 12 {
		t.Fatalf("budget %d, want 12", p.Budget())
	}
	if newPolicy(withRetryBudget(0)).Budget() != -1 {
		t.Error("a disabled budget reports -1")
	}
	if newPolicy().Budget() != defaultBudget {
		t.Error("default budget")
	}
}

func TestBudgetTimeoutCost(t *testing.T) {
	p, _ := testPolicy(withMaxAttempts(2), withAttemptTimeout(5*ms))
	st, err := p.Do(context.Background(), testOp, func(ctx context.Context, _ int) error {
		<-ctx.Done() // a request that hangs until the per-attempt timeout
		return fmt.Errorf("put: %w", ctx.Err())
	})
	var e *errors.Error
	if !stderrors.As(err, &e) || e.Kind != errors.Transient || !errors.IsTimeout(e) || !stderrors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("per-attempt timeout: %v", err)
	}
	if st.Attempts != 2 || p.Budget() != defaultBudget-timeoutCost {
		t.Fatalf("attempts %d budget %d", st.Attempts, p.Budget())
	}
}

func TestSharedBudgetConcurrent(t *testing.T) {
	p, _ := testPolicy(withRetryBudget(100), withMaxAttempts(3))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				fn, _ := seq(e503, e503)
				if (g+i)%3 == 0 {
					fn, _ = seq()
				}
				_, _ = p.Do(context.Background(), testOp, fn)
			}
		}()
	}
	wg.Wait()
	if b := p.Budget(); b < 0 || b > 100 {
		t.Fatalf("budget %d", b)
	}
}

func TestRetryAfter(t *testing.T) {
	hint := func(d time.Duration) error {
		return &store.ResponseError{Op: "PutObject", StatusCode: 503, Code: "SlowDown", RetryAfter: d}
	}
	hintT := func(d time.Duration) error {
		return &store.ResponseError{Op: "PutObject", StatusCode: 500, RetryAfter: d}
	}
	cases := []struct {
		name string
		opts []option
		err  error
		want time.Duration
	}{
		{"honoured", nil, hintT(3 * time.Second), 3 * time.Second},
		{"clamped", nil, hintT(time.Hour), defaultRetryAfterCap},
		{"custom cap", []option{withRetryAfterCap(5 * time.Second)}, hintT(time.Hour), 5 * time.Second},
		{"never shortens", nil, hint(10 * ms), time.Second},
		{"throttled longer", nil, hint(4 * time.Second), 4 * time.Second},
		{"cap 0 ignores hints", []option{withRetryAfterCap(0)}, hintT(3 * time.Second), 50 * ms},
		{"wrapped", nil, fmt.Errorf("x: %w", hintT(2*time.Second)), 2 * time.Second},
	}
	for _, c := range cases {
		p, clock := testPolicy(c.opts...)
		fn, _ := seq(c.err)
		if _, err := p.Do(context.Background(), testOp, fn); err != nil {
			t.Fatal(err)
		}
		if got := clock.slept(); len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: slept %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCancelDuringLongSleep(t *testing.T) {
	// The real sleep (sleepCtx), which must end at once on cancel; the test cancels when the
	// policy reports that the hour-long sleep has begun, not after a guessed delay.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sleeping := make(chan time.Duration, 1)
	p := newPolicy(withInitialInterval(time.Hour), withMaxInterval(time.Hour), withRand(func() float64 { return 1 }),
		withClock(time.Now, func(ctx context.Context, d time.Duration) error {
			sleeping <- d
			return sleepCtx(ctx, d)
		}))
	go func() {
		<-sleeping
		cancel()
	}()
	start := time.Now()
	st, err := p.Do(ctx, testOp, func(context.Context, int) error { return e503 })
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("took %v", el)
	}
	var e *errors.Error
	if !stderrors.As(err, &e) || e.Kind != errors.Canceled || e.Attempts != 1 || st.Attempts != 1 {
		t.Fatalf("%v", err)
	}
	if !stderrors.Is(err, context.Canceled) || stderrors.Is(err, errors.Transient) {
		t.Errorf("chain: Is(Canceled)=%v Is(Transient)=%v", stderrors.Is(err, context.Canceled), stderrors.Is(err, errors.Transient))
	}
	var re *store.ResponseError
	if !stderrors.As(err, &re) || e.StatusCode != 503 || e.Op != "UploadPart" {
		t.Errorf("last error lost: %v", err)
	}
	if k := errors.KindOf(err); k != errors.Canceled {
		t.Error(k)
	}
}

func TestCanceledContext(t *testing.T) {
	p, _ := testPolicy()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	st, err := p.Do(ctx, testOp, func(context.Context, int) error { called = true; return nil })
	if called || st.Attempts != 0 || !stderrors.Is(err, errors.Canceled) || !stderrors.Is(err, context.Canceled) {
		t.Fatalf("%v %v", called, err)
	}
	// fn sees the caller's ctx end mid-attempt: Canceled, not retried.
	ctx, cancel = context.WithCancel(context.Background())
	st, err = p.Do(ctx, testOp, func(ctx context.Context, _ int) error {
		cancel()
		return fmt.Errorf("put: %w", ctx.Err())
	})
	if st.Attempts != 1 || !stderrors.Is(err, errors.Canceled) || st.ByKind[errors.Canceled] != 1 {
		t.Fatalf("%d %v", st.Attempts, err)
	}
	// The caller gives up while a retryable attempt fails: Canceled, and no budget is spent.
	ctx, cancel = context.WithCancel(context.Background())
	st, err = p.Do(ctx, testOp, func(context.Context, int) error {
		cancel()
		return e503
	})
	if st.Attempts != 1 || !stderrors.Is(err, errors.Canceled) || !stderrors.Is(err, context.Canceled) || p.Budget() != defaultBudget {
		t.Fatalf("%d %v budget %d", st.Attempts, err, p.Budget())
	}
}

func TestIntegrityCap(t *testing.T) {
	p, _ := testPolicy(withMaxAttempts(10))
	fn, seen := seq(eBadDigest, eBadDigest, eBadDigest, eBadDigest, eBadDigest)
	st, err := p.Do(context.Background(), testOp, fn)
	if st.Attempts != 1+defaultIntegrityRetries || fmt.Sprint(*seen) != "[1 2 3]" {
		t.Fatalf("attempts %d %v", st.Attempts, *seen)
	}
	if !stderrors.Is(err, errors.Integrity) || !strings.Contains(err.Error(), "integrity retry cap (2) reached") {
		t.Fatal(err)
	}
	// Integrity retries do not eat the transient ones.
	fn, _ = seq(eBadDigest, eBadDigest, e503, e503)
	if st, err = p.Do(context.Background(), testOp, fn); err != nil || st.Attempts != 5 {
		t.Fatalf("%d %v", st.Attempts, err)
	}
	p, _ = testPolicy(withIntegrityRetries(0))
	fn, _ = seq(eBadDigest)
	if st, _ = p.Do(context.Background(), testOp, fn); st.Attempts != 1 {
		t.Fatal(st.Attempts)
	}
}

func TestMaxElapsed(t *testing.T) {
	p, clock := testPolicy(withMaxElapsedTime(1500*ms), withMaxAttempts(10))
	fn, _ := seq(eSlowDown, eSlowDown, eSlowDown)
	st, err := p.Do(context.Background(), testOp, fn)
	if st.Attempts != 2 || fmt.Sprint(clock.slept()) != "[1s]" || !strings.Contains(err.Error(), "max elapsed time 1.5s reached") {
		t.Fatalf("%d %v %v", st.Attempts, clock.slept(), err)
	}
}

func TestCustomBackOff(t *testing.T) {
	p, clock := testPolicy(withMaxAttempts(10), withBackOff(func() backoff.BackOff {
		return backoff.WithMaxRetries(backoff.NewConstantBackOff(7*ms), 2)
	}))
	fn, _ := seq(e503, e503, e503, e503)
	st, err := p.Do(context.Background(), testOp, fn)
	if st.Attempts != 3 || fmt.Sprint(clock.slept()) != "[7ms 7ms]" || !strings.Contains(err.Error(), "backoff stopped") {
		t.Fatalf("%d %v %v", st.Attempts, clock.slept(), err)
	}
	p, clock = testPolicy(withThrottleBackOff(func() backoff.BackOff { return &backoff.ZeroBackOff{} }))
	fn, _ = seq(eSlowDown)
	if _, err := p.Do(context.Background(), testOp, fn); err != nil || fmt.Sprint(clock.slept()) != "[0s]" {
		t.Fatal(err, clock.slept())
	}
}

func TestNilAndZeroPolicy(t *testing.T) {
	var nilP *Policy
	fn, _ := seq()
	if st, err := nilP.Do(context.Background(), testOp, fn); err != nil || st.Attempts != 1 {
		t.Fatal(err)
	}
	if nilP.Budget() != defaultBudget {
		t.Error("nil policy is not a fresh default one")
	}
	if q := nilP.with(withMaxAttempts(2)); q == nil || q.Budget() != defaultBudget {
		t.Error("With on a nil policy is not a fresh default one")
	}
	var zero Policy
	fn, _ = seq(e503) // real sleep of at most 50 ms
	if st, err := zero.Do(context.Background(), testOp, fn); err != nil || st.Attempts != 2 {
		t.Fatal(err)
	}
	if zero.Budget() != defaultBudget {
		t.Errorf("zero policy budget %d", zero.Budget())
	}
	if _, err := zero.Do(context.Background(), testOp, nil); !stderrors.Is(err, errors.Internal) {
		t.Error("nil fn")
	}
	//nolint:staticcheck // a nil ctx is tolerated
	if _, err := zero.Do(nil, testOp, func(context.Context, int) error { return nil }); err != nil {
		t.Error(err)
	}
}

func TestWithSharesBudget(t *testing.T) {
	p, _ := testPolicy(withRetryBudget(50))
	child := p.with(withMaxAttempts(5), withAttemptTimeout(time.Minute))
	fn, _ := seq(e503, e503)
	if _, err := child.Do(context.Background(), testOp, fn); err != nil {
		t.Fatal(err)
	}
	if p.Budget() != 45 || child.Budget() != 45 {
		t.Fatalf("parent %d child %d", p.Budget(), child.Budget())
	}
	own := p.with(withRetryBudget(10))
	if own.Budget() != 10 || p.Budget() != 45 {
		t.Fatal("a RetryBudget in With gives a budget of its own")
	}
	if child.cfg.maxAttempts != 5 || p.cfg.maxAttempts != DefaultMaxAttempts {
		t.Fatal("With changed the parent")
	}
}

func TestLogging(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	p, _ := testPolicy(withLogger(zap.New(core)), withRetryBudget(5))
	fn, _ := seq(eSlowDown, e503)
	_, _ = p.Do(context.Background(), testOp, fn)
	retries := logs.FilterMessage("retrying").All()
	if len(retries) != 1 {
		t.Fatalf("%d retry logs", len(retries))
	}
	f := retries[0].ContextMap()
	for k, want := range map[string]any{"op": "UploadPart", "bucket": "bkt", "key": "a/b", "part": int32(7), "upload_id": "U1", "attempt": int64(1), "kind": "throttled", "delay": time.Second, "code": "SlowDown", "status": int64(503)} {
		if fmt.Sprint(f[k]) != fmt.Sprint(want) {
			t.Errorf("field %s = %v, want %v", k, f[k], want)
		}
	}
	if logs.FilterMessage("retry budget exhausted").Len() != 1 {
		t.Error("budget give-up not logged")
	}
	fn, _ = seq(errPanicked)
	_, _ = p.Do(context.Background(), testOp, fn)
	if logs.FilterMessage("panic in retried function").Len() != 1 {
		t.Error("panic not logged")
	}
}

func TestStatsAdd(t *testing.T) {
	var total Stats
	total.Add(Stats{Attempts: 2, ByKind: map[errors.Kind]int{errors.Transient: 1}, Slept: ms})
	total.Add(Stats{Attempts: 3, ByKind: map[errors.Kind]int{errors.Transient: 1, errors.Throttled: 1}, Slept: 2 * ms})
	total.Add(Stats{})
	if total.Attempts != 5 || total.Slept != 3*ms || total.ByKind[errors.Transient] != 2 || total.ByKind[errors.Throttled] != 1 {
		t.Fatalf("%+v", total)
	}
}

func TestAdaptiveRateLimiter(t *testing.T) {
	c := newFakeClock()
	l := &limiter{}
	l.init(c.now)
	// Off until throttled: 20 requests over 2 s (10/s) pass freely.
	for range 20 {
		if w := l.reserve(); w != 0 {
			t.Fatal(w)
		}
		c.advance(100 * ms)
	}
	l.throttled()
	if r := l.currentRate(); r != 5 {
		t.Fatalf("rate %v after throttle, want 5", r)
	}
	// At 5/s, back-to-back requests are spaced 200 ms apart.
	for i := 1; i <= 3; i++ {
		if w := l.reserve(); w != time.Duration(i)*200*ms {
			t.Fatalf("wait %v, want %v", w, time.Duration(i)*200*ms)
		}
	}
	// Another throttle halves again; the floor holds.
	for range 10 {
		l.throttled()
	}
	if r := l.currentRate(); r != minRate {
		t.Fatalf("rate %v, want floor %v", r, minRate)
	}
	// Successes recover until limiting turns off at the first throttled rate (10/s).
	n := 0
	for l.currentRate() != 0 {
		l.succeeded()
		n++
		if n > 1000 {
			t.Fatal("never recovers")
		}
	}
	if n < 10 {
		t.Fatalf("recovered after only %d successes", n)
	}
	if w := l.reserve(); w != 0 {
		t.Fatal("still limiting", w)
	}
}

func TestAdaptiveRatePolicy(t *testing.T) {
	p, clock := testPolicy(withAdaptiveRate(true), withMaxAttempts(5))
	fn, _ := seq(eSlowDown, eSlowDown)
	st, err := p.Do(context.Background(), testOp, fn)
	if err != nil {
		t.Fatal(err)
	}
	if p.limiter.currentRate() == 0 {
		t.Fatal("throttling did not enable the limiter")
	}
	// Backoff sleeps (1 s, 2 s) and limiter waits all count as Slept.
	var total time.Duration
	for _, d := range clock.slept() {
		total += d
	}
	if st.Slept != total || total < 3*time.Second {
		t.Fatalf("slept %v, sleeps %v", st.Slept, clock.slept())
	}
	// A derived policy shares the limiter.
	if p.with(withMaxAttempts(2)).limiter != p.limiter || p.with(withAdaptiveRate(false)).limiter != nil {
		t.Fatal("With and the limiter")
	}
}

// TestFirstContactGetsNoOutageAllowance: a store that refuses the very first request is not
// waited for past MaxAttempts: it may never have been there.
func TestFirstContactGetsNoOutageAllowance(t *testing.T) {
	p, clock := testPolicy()
	fn, seen := seq(eRefused, eRefused, eRefused, eRefused)
	op := testOp
	op.FirstContact = true
	_, err := p.Do(context.Background(), op, fn)
	if len(*seen) != 3 || !stderrors.Is(err, errors.Transient) {
		t.Fatalf("attempts %v, err %v; want 3 attempts, Transient", *seen, err)
	}
	if got := clock.slept(); fmt.Sprint(got) != fmt.Sprint([]time.Duration{50 * ms, 100 * ms}) {
		t.Fatalf("sleeps %v", got)
	}
}

// AttemptFromContext tells a resend by its attempt's context, with an attempt timeout and a stall
// window on or off: a store wrapper reads it there (tracing's resend count).
func TestAttemptFromContextNumbersEveryAttempt(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []option
	}{
		{"defaults", nil},
		{"attempt timeout", []option{withAttemptTimeout(time.Minute)}},
		{"no stall window", []option{withStallTimeout(0)}},
		{"attempt timeout, no stall window", []option{withAttemptTimeout(time.Minute), withStallTimeout(0)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPolicy(append([]option{withInitialInterval(time.Millisecond), withMaxInterval(time.Millisecond)}, c.opts...)...)
			var seen []int
			_, err := p.Do(context.Background(), Op{Name: "PutObject"}, func(ctx context.Context, attempt int) error {
				seen = append(seen, AttemptFromContext(ctx))
				if attempt < 3 {
					return e503
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(seen) != "[1 2 3]" {
				t.Errorf("AttemptFromContext over the attempts: %v, want [1 2 3]", seen)
			}
		})
	}
}
