package errors

import (
	"fmt"
	"time"
)

// CodeStalled is the Code of an attempt cut by stall detection: no request-body byte taken and no
// response byte received for the stall window. It is client-side (no store sends it) and
// Transient: the request is sent again from the bytes the writer still holds.
const CodeStalled = "Stalled"

// Stalled is the error of an attempt cut by stall detection after window without progress;
// detail is the text of the error the SDK returned after the cut. It does not wrap that context
// error, so that it classifies as Transient with Code CodeStalled rather than as the caller's
// cancellation, and it counts as a timeout (IsTimeout): the attempt held its connection for the
// whole window.
func Stalled(window time.Duration, detail string) error {
	return &stallError{window: window, detail: detail}
}

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

// ErrorCode makes Classify find CodeStalled in the code table.
func (e *stallError) ErrorCode() string { return CodeStalled }

// ErrorMessage is the Message Classify copies.
func (e *stallError) ErrorMessage() string {
	return fmt.Sprintf("no request-body byte taken and no response byte received for %v", e.window)
}

// Timeout reports true: a retry budget charges a stalled attempt as a timeout.
func (e *stallError) Timeout() bool { return true }
