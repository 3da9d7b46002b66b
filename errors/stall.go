package errors

import (
	"fmt"
	"time"
)

// CodeStalled is the Code of an attempt cut by stall detection: no request-body byte taken and no
// response byte received for the stall window. It is client-side (no store sends it) and
// Transient: the request is sent again from the bytes the writer still holds.
const CodeStalled = "Stalled"

// StallError is the error of an attempt cut by stall detection. It does not wrap the context
// error the cut produced inside the SDK, so that it classifies as Transient with Code "Stalled"
// rather than as the caller's cancellation.
type StallError struct {
	// Window is the stall window that passed without progress.
	Window time.Duration
	// Detail is the text of the error the SDK returned after the cut.
	Detail string
}

func (e *StallError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("stalled: no progress for %v", e.Window)
	}
	return fmt.Sprintf("stalled: no progress for %v (%s)", e.Window, e.Detail)
}

// ErrorCode makes Classify find CodeStalled in the code table.
func (e *StallError) ErrorCode() string { return CodeStalled }

// ErrorMessage is the Message Classify copies.
func (e *StallError) ErrorMessage() string {
	return fmt.Sprintf("no request-body byte taken and no response byte received for %v", e.Window)
}

// Timeout reports true: a stalled attempt held its connection for the whole window, so a retry
// budget charges it as a timeout.
func (e *StallError) Timeout() bool { return true }
