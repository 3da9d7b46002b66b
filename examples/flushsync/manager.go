// Package flushsync is a small sync manager in the shape storage engines use for flushing
// (Milvus's syncmgr): two-phase tasks run by a bounded pool, with one error handler that maps
// safeput's error kinds to retry, terminal or canceled instead of panicking.
//
//   - Prepare writes a segment's files through safeput with create-only writes to deterministic
//     keys, so running it again after a lost answer is an idempotent success
//     (writer.Result.AlreadyExisted), never a duplicate or an orphan.
//   - Commit publishes the file list to a manifest object, only after every file landed verified.
//   - A failed task is re-driven from its own buffer with backoff (DecisionRetry), or marks its
//     channel unhealthy and stops the channel's other tasks (DecisionTerminal), or stops quietly
//     (DecisionCanceled). A panic anywhere in a task becomes an Internal (terminal) error.
package flushsync

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/writer"
)

// Task is the two-phase contract (Milvus syncmgr.Task, reduced): both phases must tolerate being
// run again after a failure, and must keep their payload until the task is finished.
type Task interface {
	// Channel is the unit of health: a terminal failure stops every task of the channel.
	Channel() string
	// Name identifies the task in reports (e.g. "ch0/segment-3").
	Name() string
	Prepare(ctx context.Context) error
	Commit(ctx context.Context) error
}

// Config tunes a Manager. The zero value works.
type Config struct {
	// Workers bounds how many tasks run at once (default 4).
	Workers int
	// MaxAttempts bounds how many times one task is driven (default 8); past it a retryable
	// failure becomes terminal. Milvus retries forever; a bound keeps a dead store from
	// holding buffers without end.
	MaxAttempts int
	// RetryBase and RetryMax shape the re-drive backoff (defaults 50ms and 2s, full jitter).
	RetryBase, RetryMax time.Duration
	// OnTerminal is called once per task that failed terminally (after the channel is marked
	// unhealthy). A panic in it is recovered.
	OnTerminal func(t Task, err error)
	// Recovery, when set, settles the uploads a dead predecessor left in its journal before the
	// first task runs (recovery.go).
	Recovery *Recovery
	// Tracer, when set, runs each attempt of a task under a span (flushsync.task), so the
	// spans of its writes (an Uploader made with writer.Options.Instrumentation of
	// github.com/safeput/safeput/otel) sit under the flush that made them.
	Tracer trace.Tracer
}

// Stats counts what the manager did.
type Stats struct {
	Submitted int
	Done      int
	// Retried counts re-drives (a task retried twice counts 2).
	Retried int
	// Terminal counts tasks that failed terminally.
	Terminal int
	// Stopped counts tasks that did not finish because their channel went unhealthy or the
	// manager's context ended.
	Stopped int
	// Panics counts panics recovered from tasks.
	Panics int
}

// Outcome is how one task ended.
type Outcome struct {
	Task     Task
	Decision Decision // DecisionNone when it succeeded
	Attempts int
	Err      error
}

// Manager runs tasks on a bounded pool. It is safe for concurrent use.
type Manager struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan *run
	wg     sync.WaitGroup // worker goroutines
	tasks  sync.WaitGroup // tasks not yet finished

	mu       sync.Mutex
	channels map[string]*channel
	stats    Stats
	outcomes []Outcome
	closed   bool
	// recovered and recoverErr: what the start-up recovery did (Recovered).
	recovered  *writer.RecoverReport
	recoverErr error
}

type channel struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	err    error // the terminal error that made it unhealthy
}

type run struct {
	task     Task
	attempts int
	ch       *channel
}

// ErrChannelUnhealthy is the cause of the cancellation of a channel's tasks after a terminal
// failure, and the error for tasks submitted to it afterwards.
var ErrChannelUnhealthy = fmt.Errorf("flushsync: channel is unhealthy")

// NewManager starts the workers, after settling the journal of Config.Recovery when set. ctx
// ends them all; Close waits for them.
func NewManager(ctx context.Context, cfg Config) *Manager {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 50 * time.Millisecond
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 2 * time.Second
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &Manager{cfg: cfg, ctx: mctx, cancel: cancel, queue: make(chan *run), channels: map[string]*channel{}}
	m.recoverJournal(mctx)
	for range cfg.Workers {
		m.wg.Add(1)
		go m.worker()
	}
	return m
}

// Submit queues t. It blocks while every worker is busy (back-pressure, like a bounded pool)
// and returns an error when the manager is closed or t's channel is already unhealthy.
func (m *Manager) Submit(t Task) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("flushsync: manager is closed")
	}
	ch := m.channelLocked(t.Channel())
	if ch.err != nil {
		m.mu.Unlock()
		return fmt.Errorf("%w: %s: %w", ErrChannelUnhealthy, t.Channel(), ch.err)
	}
	m.stats.Submitted++
	m.tasks.Add(1)
	m.mu.Unlock()
	m.enqueue(&run{task: t, ch: ch})
	return nil
}

func (m *Manager) channelLocked(name string) *channel {
	ch, ok := m.channels[name]
	if !ok {
		ctx, cancel := context.WithCancelCause(m.ctx)
		ch = &channel{ctx: ctx, cancel: cancel}
		m.channels[name] = ch
	}
	return ch
}

func (m *Manager) enqueue(r *run) {
	select {
	case m.queue <- r:
	case <-m.ctx.Done():
		m.finish(r, DecisionCanceled, m.ctx.Err())
	}
}

// Wait blocks until every submitted task has finished (done, terminal or stopped).
func (m *Manager) Wait() { m.tasks.Wait() }

// Close waits for the submitted tasks, then stops the workers.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.tasks.Wait()
	m.cancel()
	m.wg.Wait()
	m.mu.Lock()
	for _, ch := range m.channels {
		ch.cancel(nil)
	}
	m.mu.Unlock()
}

// Stats returns a snapshot of the counters.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Outcomes returns how every finished task ended, in the order they finished.
func (m *Manager) Outcomes() []Outcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Outcome(nil), m.outcomes...)
}

// Unhealthy returns the channels marked unhealthy, with the error that did it.
func (m *Manager) Unhealthy() map[string]error {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]error{}
	for name, ch := range m.channels {
		if ch.err != nil {
			out[name] = ch.err
		}
	}
	return out
}

func (m *Manager) worker() {
	defer m.wg.Done()
	for {
		select {
		case <-m.ctx.Done():
			return
		case r := <-m.queue:
			m.drive(r)
		}
	}
}

// drive runs one attempt of a task and hands the result to the error handler.
func (m *Manager) drive(r *run) {
	r.attempts++
	ctx := r.ch.ctx
	var span trace.Span
	if m.cfg.Tracer != nil {
		ctx, span = m.cfg.Tracer.Start(ctx, "flushsync.task", trace.WithAttributes(
			attribute.String("flushsync.channel", r.task.Channel()), attribute.String("flushsync.task", r.task.Name()),
			attribute.Int("flushsync.attempt", r.attempts)))
	}
	err := m.attempt(ctx, r)
	if span != nil {
		endTaskSpan(span, err)
	}
	m.handle(r, err)
}

// attempt runs Prepare then Commit, turning a panic into an Internal error: a bug in one task
// must not take the process (and every other channel) down, as Milvus's default handler does.
func (m *Manager) attempt(ctx context.Context, r *run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			m.mu.Lock()
			m.stats.Panics++
			m.mu.Unlock()
			err = sperrors.FromPanic("Task "+r.task.Name(), p)
		}
	}()
	if err := ctx.Err(); err != nil {
		// Do not start a phase for a channel that is already stopped.
		return canceledError(ctx)
	}
	if err := r.task.Prepare(ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return canceledError(ctx)
	}
	return r.task.Commit(ctx)
}

// endTaskSpan ends a task attempt's span, an error one when the attempt failed (a panic in a
// task is an Internal error by then).
func endTaskSpan(span trace.Span, err error) {
	if err != nil {
		span.SetAttributes(attribute.String("error.type", sperrors.KindOf(err).String()))
		span.SetStatus(codes.Error, sperrors.Redact(err.Error()))
	}
	span.End()
}

func canceledError(ctx context.Context) error {
	return &sperrors.Error{Kind: sperrors.Canceled, Op: "Task", Message: "stopped before the phase started", Err: context.Cause(ctx)}
}

// handle is the error handler: safeput's classification decides, nothing panics.
func (m *Manager) handle(r *run, err error) {
	if err == nil {
		m.finish(r, DecisionNone, nil)
		return
	}
	decision := decide(err)
	if decision == DecisionRetry && r.ch.ctx.Err() != nil {
		// A task of a channel that was just stopped may fail with a transport error instead of
		// context.Canceled; it must not be re-driven either way.
		decision = DecisionCanceled
	}
	switch decision {
	case DecisionRetry:
		if r.attempts >= m.cfg.MaxAttempts {
			err = fmt.Errorf("flushsync: %s: gave up after %d attempts: %w", r.task.Name(), r.attempts, err)
			m.terminal(r, err)
			return
		}
		m.mu.Lock()
		m.stats.Retried++
		m.mu.Unlock()
		// Re-drive later from the task's own buffer, without holding a worker while waiting.
		delay := m.backoff(r.attempts)
		time.AfterFunc(delay, func() {
			if r.ch.ctx.Err() != nil {
				m.finish(r, DecisionCanceled, canceledError(r.ch.ctx))
				return
			}
			m.enqueue(r)
		})
	case DecisionCanceled:
		m.finish(r, DecisionCanceled, err)
	default: // DecisionTerminal
		m.terminal(r, err)
	}
}

// terminal marks the channel unhealthy (first error wins), stops its other tasks, reports.
func (m *Manager) terminal(r *run, err error) {
	m.mu.Lock()
	if r.ch.err == nil {
		r.ch.err = err
	}
	m.mu.Unlock()
	r.ch.cancel(fmt.Errorf("%w: %s", ErrChannelUnhealthy, r.task.Channel()))
	m.finish(r, DecisionTerminal, err)
	if m.cfg.OnTerminal != nil {
		func() {
			defer func() { _ = recover() }() // a reporting callback must not crash the pool
			m.cfg.OnTerminal(r.task, err)
		}()
	}
}

func (m *Manager) finish(r *run, d Decision, err error) {
	m.mu.Lock()
	switch d {
	case DecisionNone:
		m.stats.Done++
	case DecisionTerminal:
		m.stats.Terminal++
	default:
		m.stats.Stopped++
	}
	m.outcomes = append(m.outcomes, Outcome{Task: r.task, Decision: d, Attempts: r.attempts, Err: err})
	m.mu.Unlock()
	m.tasks.Done()
}

// backoff is exponential with full jitter, so re-driven tasks of many channels do not retry in
// lock-step against a store that is throttling them.
func (m *Manager) backoff(attempt int) time.Duration {
	d := m.cfg.RetryBase << min(attempt-1, 20)
	if d <= 0 || d > m.cfg.RetryMax {
		d = m.cfg.RetryMax
	}
	return time.Duration(rand.Int64N(int64(d)) + 1) //nolint:gosec // jitter, not security
}

// Decision is what the manager does with a task's outcome.
type Decision int

// The decisions. DecisionNone is a task that succeeded.
const (
	DecisionNone     Decision = iota
	DecisionRetry             // run the task again later, from its own buffer
	DecisionTerminal          // running it again cannot help: the channel becomes unhealthy
	DecisionCanceled          // the channel or the manager stopped: neither retry nor report
)

func (d Decision) String() string {
	switch d {
	case DecisionRetry:
		return "retry"
	case DecisionTerminal:
		return "terminal"
	case DecisionCanceled:
		return "canceled"
	}
	return "none"
}

// decide reads safeput's classification: Retryable once safeput's own retries are spent, Canceled
// for a stop, terminal for the rest.
func decide(err error) Decision {
	switch e := sperrors.Classify(err); {
	case err == nil:
		return DecisionNone
	case e.Kind == sperrors.Canceled:
		return DecisionCanceled
	case e.Retryable():
		return DecisionRetry
	}
	return DecisionTerminal
}
