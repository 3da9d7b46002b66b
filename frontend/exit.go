package frontend

import sperrors "github.com/safeput/safeput/errors"

// Exit codes: the CLI's process exit codes and the C ABI's status codes. Scripts and foreign
// callers branch on them, so they never change meaning.
const (
	ExitOK            = 0
	ExitInternal      = 1
	ExitUsage         = 2
	ExitTransient     = 3
	ExitPermanent     = 4
	ExitIntegrity     = 5
	ExitCompatibility = 6
	ExitPrecondition  = 7
	ExitCanceled      = 8
)

// KindExit maps an error kind to its exit code.
func KindExit(k sperrors.Kind) int {
	switch k {
	case sperrors.Transient, sperrors.Throttled:
		return ExitTransient
	case sperrors.Permanent:
		return ExitPermanent
	case sperrors.Integrity:
		return ExitIntegrity
	case sperrors.Compatibility:
		return ExitCompatibility
	case sperrors.Precondition:
		return ExitPrecondition
	case sperrors.Canceled:
		return ExitCanceled
	}
	return ExitInternal
}
