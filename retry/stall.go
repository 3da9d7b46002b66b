package retry

import (
	"context"
	stderrors "errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/progress"
)

// errStallCut is the cause of an attempt context cut by its watchdog.
var errStallCut = stderrors.New("stall window passed without progress")

// watchdog cancels an attempt's context when its request makes no progress for window. Progress
// is reported through store.ReportProgress on the attempt's context (the adapters' transports
// call it as request-body bytes are taken and response bytes arrive), so a slow transfer that
// keeps moving is never cut, and a store that keeps a long Complete alive by streaming
// whitespace is progressing.
type watchdog struct {
	window time.Duration
	start  time.Time
	last   atomic.Int64 // nanoseconds after start of the latest progress
	fired  atomic.Bool
	cancel context.CancelCauseFunc
	once   sync.Once

	// The timer's function looks at the attempt each window (no goroutine of its own per
	// attempt: a flush of small objects makes one attempt per object). mu orders its re-arming
	// against stop.
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
}

func startWatchdog(parent context.Context, window time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watchdog{window: window, start: time.Now(), cancel: cancel}
	w.mu.Lock() // the timer's function may run before w.timer is set
	w.timer = time.AfterFunc(window, w.look)
	w.mu.Unlock()
	return progress.With(ctx, w.progress), w
}

func (w *watchdog) progress() { w.last.Store(int64(time.Since(w.start))) }

// look cuts the attempt if the window passed without progress, or looks again when it will have.
func (w *watchdog) look() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	idle := time.Since(w.start) - time.Duration(w.last.Load())
	if idle >= w.window {
		w.fired.Store(true)
		w.cancel(errStallCut)
		return
	}
	w.timer.Reset(w.window - idle)
}

// stop ends the watchdog and releases the attempt context.
func (w *watchdog) stop() {
	w.once.Do(func() {
		w.mu.Lock()
		w.stopped = true
		w.timer.Stop()
		w.mu.Unlock()
		w.cancel(context.Canceled)
	})
}

// stalled turns the error of an attempt the watchdog cut into a stallError, which classifies as
// Transient with Code errors.CodeStalled (the cut surfaces inside the SDK as a context
// cancellation, which would otherwise read as the caller's).
func (w *watchdog) stalled(err error) error {
	if err == nil || !w.fired.Load() {
		return err
	}
	return &stallError{window: w.window, detail: errors.Redact(err.Error())}
}

// stallError is the error of an attempt cut after window without progress; detail is the text of
// the error the SDK returned after the cut. It does not wrap that context error, so that it
// classifies as Transient with Code errors.CodeStalled rather than as the caller's cancellation,
// and it counts as a timeout (errors.IsTimeout): the attempt held its connection for the whole
// window.
type stallError struct {
	window time.Duration
	detail string
}

func (e *stallError) Error() string {
	if e.detail == "" {
		return fmt.Sprintf("stalled: no progress for %v", e.window)
	}
	return fmt.Sprintf("stalled: no progress for %v (%s)", e.window, e.detail)
}

// ErrorCode makes errors.Classify find errors.CodeStalled in the code table.
func (e *stallError) ErrorCode() string { return errors.CodeStalled }

// ErrorMessage is the Message errors.Classify copies.
func (e *stallError) ErrorMessage() string {
	return fmt.Sprintf("no request-body byte taken and no response byte received for %v", e.window)
}

// Timeout reports true: a retry budget charges a stalled attempt as a timeout.
func (e *stallError) Timeout() bool { return true }
