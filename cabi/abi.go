package cabi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/writer"
)

// Version is the ABI's version: the major number changes only with an incompatible change to
// the functions in safeput.h or the meaning of a status code.
const Version = "1.0.0"

// Status codes: the CLI's exit codes.
const (
	StatusOK            = frontend.ExitOK
	StatusInternal      = frontend.ExitInternal
	StatusBadInput      = frontend.ExitUsage
	StatusTransient     = frontend.ExitTransient
	StatusPermanent     = frontend.ExitPermanent
	StatusIntegrity     = frontend.ExitIntegrity
	StatusCompatibility = frontend.ExitCompatibility
	StatusPrecondition  = frontend.ExitPrecondition
	StatusCanceled      = frontend.ExitCanceled
)

// Handle states. A handle moves open → closing → done (close) or open → aborted (abort), never
// back; only open accepts writes.
const (
	stateOpen int32 = iota
	stateClosing
	stateDone
	stateAborted
)

type entry struct {
	w      *writer.Writer
	cancel context.CancelFunc
	// mu serialises Write and Close on this handle, as writer.Writer requires; Abort does not
	// take it, so it can stop a Write blocked on the network.
	mu    sync.Mutex
	state atomic.Int32
	// abortedClose: an abort cancelled the close running on another thread, so the handle ends
	// as aborted.
	abortedClose atomic.Bool
	// warnings are what the config chose that weakens the transport (frontend/warn.go), for the
	// close JSON: the library's log line is dropped by the default logger.
	warnings []string
}

var (
	handles    sync.Map // int64 → *entry
	lastHandle atomic.Int64
)

// abortedKept is how many aborted handles are remembered, so that a thread still using one
// learns it was cancelled (8), not that it is unknown (2), the mark of a programming error. All
// share one tombstone, so each costs only its map entry.
const abortedKept = 4096

var (
	tombstone = func() *entry { e := &entry{}; e.state.Store(stateAborted); return e }()
	abortedMu sync.Mutex
	aborted   []int64 // the handles replaced by tombstone, oldest first
)

// bury replaces h's entry by the tombstone, forgetting the oldest one beyond abortedKept.
func bury(h int64) {
	abortedMu.Lock()
	defer abortedMu.Unlock()
	handles.Store(h, tombstone)
	aborted = append(aborted, h)
	if len(aborted) > abortedKept {
		handles.Delete(aborted[0])
		aborted = aborted[1:]
	}
}

func canceledHandle(op string, h int64) outcome {
	err := fmt.Errorf("%s: handle %d was aborted (safeput_abort)", op, h)
	return outcome{StatusCanceled, marshal(frontend.ErrorJSON(StatusCanceled, err))}
}

// Handles are never reused: a stale handle from a finished writer can only be unknown.
func register(e *entry) int64 {
	h := lastHandle.Add(1)
	handles.Store(h, e)
	return h
}

func lookup(h int64) (*entry, bool) {
	v, ok := handles.Load(h)
	if !ok {
		return nil, false
	}
	return v.(*entry), true
}

// outcome is a status with the JSON for the caller (empty: none).
type outcome struct {
	status int
	json   string
}

func badInput(format string, args ...any) outcome {
	err := fmt.Errorf(format, args...)
	return outcome{StatusBadInput, marshal(frontend.ErrorJSON(StatusBadInput, err))}
}

func failed(err error) outcome { return failedWarning(err, nil) }

// failedWarning is failed with the handle's warnings in the JSON.
func failedWarning(err error, warnings []string) outcome {
	code := frontend.KindExit(sperrors.KindOf(err))
	je := frontend.ErrorJSON(code, err)
	je.Warnings = warnings
	return outcome{code, marshal(je)}
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"status":"failed","exit_code":1,"kind":"internal","error":"cannot encode the JSON answer"}`
	}
	return string(b)
}

// guard turns a panic into StatusInternal, so no Go panic ever unwinds into C.
func guard(op string, out *outcome) {
	if r := recover(); r != nil {
		err := fmt.Errorf("internal error in %s: %v\n%s", op, r, debug.Stack())
		je := frontend.ErrorJSON(StatusInternal, err)
		je.Kind = sperrors.Internal.String()
		*out = outcome{StatusInternal, marshal(je)}
	}
}

// Open parses the config, takes the connection's Uploader (stores.go) and makes a writer of it, and
// returns its handle. Nothing is
// sent to the store.
func Open(configJSON string) (h int64, out outcome) {
	defer guard("safeput_open", &out)
	cfg, err := parseConfig(configJSON)
	if err != nil {
		return 0, badInput("%v", err)
	}
	withFaults, err := testFaults(cfg.TestFaults)
	if err != nil {
		return 0, badInput("%v", err)
	}
	opts, ropts, err := cfg.writerOptions()
	if err != nil {
		return 0, badInput("%v", err)
	}
	cn, err := stores.get(cfg.conn(), withFaults)
	if err != nil {
		return 0, badInput("%v", err)
	}
	var warnings []string
	if cfg.InsecureSkipVerify {
		warnings = append(warnings, frontend.InsecureTLSWarning("insecure_skip_verify"))
	}
	// Checked here, not left to the writer, so the error names this config's setting.
	warning, err := frontend.SSECOverHTTP(cn.st, cfg.SSECKeyFile != "", cfg.AllowSSECOverHTTP, "allow_sse_c_over_http")
	if err != nil {
		return 0, badInput("%v", err)
	}
	if warning != "" {
		warnings = append(warnings, warning)
	}
	if len(ropts) > 0 {
		opts = append(opts, func(o *writer.Options) { o.Retry = cn.policy.With(ropts...) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := cn.up.New(ctx, cfg.Bucket, cfg.Key, opts...)
	if err != nil {
		cancel()
		// New sends nothing: whatever it rejects is the configuration.
		return 0, badInput("%v", frontend.OneLine(err))
	}
	return register(&entry{w: w, cancel: cancel, warnings: warnings}), outcome{StatusOK, ""}
}

// Write hands p to the writer, which copies it (p is not kept).
func Write(h int64, p []byte) (out outcome) {
	defer guard("safeput_write", &out)
	e, ok := lookup(h)
	if !ok {
		return badInput("write: unknown handle %d (never opened, or already closed or aborted)", h)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.state.Load() {
	case stateOpen:
	case stateAborted:
		return canceledHandle("write", h)
	default:
		return badInput("write: handle %d is closed", h)
	}
	if _, err := e.w.Write(p); err != nil {
		return failed(err)
	}
	return outcome{StatusOK, ""}
}

// Close commits and verifies, then forgets the handle.
func Close(h int64) (out outcome) {
	defer guard("safeput_close", &out)
	e, ok := lookup(h)
	if !ok || !e.state.CompareAndSwap(stateOpen, stateClosing) {
		if ok && e.state.Load() == stateAborted {
			return canceledHandle("close", h)
		}
		return badInput("close: unknown handle %d (never opened, or already closed)", h)
	}
	defer func() {
		if e.abortedClose.Load() {
			e.state.Store(stateAborted)
			bury(h)
		} else {
			handles.Delete(h)
			e.state.Store(stateDone)
		}
		e.cancel()
	}()
	e.mu.Lock() // waits for a Write in progress on another thread
	defer e.mu.Unlock()
	if err := e.w.Close(); err != nil {
		return failedWarning(err, e.warnings)
	}
	res := e.w.Result()
	if res == nil {
		return outcome{StatusInternal, marshal(frontend.ErrorJSON(StatusInternal, errors.New("close succeeded without a result")))}
	}
	j := frontend.ResultJSON(res)
	j.Warnings = e.warnings
	return outcome{StatusOK, marshal(j)}
}

// Abort discards the write. Called while a Close is running on another thread, it cancels that
// Close (which then reports the outcome) and returns at once. Otherwise it waits for the
// store's abort, which the handle's abort_timeout bounds (writer.Options.AbortTimeout).
func Abort(h int64) (out outcome) {
	defer guard("safeput_abort", &out)
	e, ok := lookup(h)
	if !ok {
		return badInput("abort: unknown handle %d (never opened, or already closed or aborted)", h)
	}
	for !e.state.CompareAndSwap(stateOpen, stateAborted) {
		switch e.state.Load() {
		case stateClosing:
			e.abortedClose.Store(true)
			e.cancel()
			return outcome{StatusOK, `{"status":"cancelling","note":"close is running on another thread; it reports the outcome"}`}
		case stateDone:
			return badInput("abort: handle %d is already closed", h)
		case stateAborted:
			return canceledHandle("abort", h)
		}
	}
	// The writer goes (its buffers with it); the handle stays known as aborted.
	defer bury(h)
	defer e.cancel()
	if err := e.w.Abort(context.Background()); err != nil {
		return failed(err)
	}
	return outcome{StatusOK, `{"status":"aborted"}`}
}
