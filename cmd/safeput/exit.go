package main

import (
	"context"
	stderrors "errors"
	"fmt"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/frontend"
)

// Exit codes. They are part of the CLI's contract: scripts branch on them.
// They are shared with the C ABI (frontend), whose status codes are the same.
const (
	exitOK            = frontend.ExitOK
	exitInternal      = frontend.ExitInternal
	exitUsage         = frontend.ExitUsage
	exitTransient     = frontend.ExitTransient
	exitPermanent     = frontend.ExitPermanent
	exitIntegrity     = frontend.ExitIntegrity
	exitCompatibility = frontend.ExitCompatibility
	exitPrecondition  = frontend.ExitPrecondition
	exitCanceled      = frontend.ExitCanceled
)

const exitCodesHelp = `Exit codes:
  0  landed and verified (verify: equal; probe/sweep/demo: completed)
  1  internal error (a bug; the message says where)
  2  usage or configuration error (bad URL, missing file, unknown profile, bad size,
     missing credentials); nothing was uploaded
  3  transient or throttled failure that persisted after retries
  4  permanent failure (credentials, permissions, missing bucket)
  5  integrity failure (verify: the object differs from the file)
  6  compatibility failure (the store rejects the layout: change --provider)
  7  precondition failed (--create-only and the key already exists)
  8  cancelled (SIGINT/SIGTERM); any multipart upload was aborted`

// exitError carries an exit code with the one line to print.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a usage or configuration error: exit 2.
func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// withCode attaches an explicit exit code to err.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// exitCodeFor maps an error to the CLI's exit code: an explicit code wins, a done ctx means the
// user cancelled, else the error's Kind decides.
func exitCodeFor(ctx context.Context, err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if stderrors.As(err, &ee) {
		return ee.code
	}
	// The writer wraps a source read that stopped because of the signal as Permanent; the user
	// pressed Ctrl-C, so report it as a cancellation.
	if ctx != nil && ctx.Err() != nil {
		return exitCanceled
	}
	return kindExit(sperrors.KindOf(err))
}

func kindExit(k sperrors.Kind) int { return frontend.KindExit(k) }
