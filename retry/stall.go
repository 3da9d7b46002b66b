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
	done   chan struct{}
	once   sync.Once
}

func startWatchdog(parent context.Context, window time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watchdog{window: window, start: time.Now(), cancel: cancel, done: make(chan struct{})}
	go w.run()
	return progress.With(ctx, w.progress), w
}

func (w *watchdog) progress() { w.last.Store(int64(time.Since(w.start))) }

func (w *watchdog) run() {
	t := time.NewTimer(w.window)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			idle := time.Since(w.start) - time.Duration(w.last.Load())
			if idle >= w.window {
				w.fired.Store(true)
				w.cancel(errStallCut)
				return
			}
			t.Reset(w.window - idle)
		}
	}
}

// stop ends the watchdog and releases the attempt context.
func (w *watchdog) stop() {
	w.once.Do(func() {
		close(w.done)
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
