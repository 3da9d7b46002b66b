package errors

import (
	"context"
	"fmt"
)

// Decision is what a sync manager (a caller that re-drives whole tasks, like Milvus's syncmgr)
// does with a failed task once safeput's own bounded retries are spent.
type Decision int

// The decisions. DecisionNone is only for a nil error.
const (
	DecisionNone Decision = iota
	// DecisionRetry: run the task again later (Transient, Throttled).
	DecisionRetry
	// DecisionTerminal: running it again cannot help; surface it (Integrity after its retries from
	// clean bytes, Compatibility, Precondition, Permanent, Internal).
	DecisionTerminal
	// DecisionCanceled: the caller's context ended; neither retry nor report as a failure.
	DecisionCanceled
)

var decisionNames = [...]string{
	DecisionNone:     "none",
	DecisionRetry:    "retry",
	DecisionTerminal: "terminal",
	DecisionCanceled: "canceled",
}

func (d Decision) String() string {
	if d >= 0 && int(d) < len(decisionNames) {
		return decisionNames[d]
	}
	return fmt.Sprintf("decision(%d)", int(d))
}

// Decision maps the kind to a sync manager's decision. Integrity is terminal because safeput has
// already re-sent from the clean source bytes (retry.Policy's integrity cap): a mismatch that
// survives that points at corrupt source memory or a broken store, and re-driving would repeat it.
// Unknown (never returned by Classify) is retried, as Milvus's ClassifySyncError defaults to.
func (k Kind) Decision() Decision {
	switch k {
	case Canceled:
		return DecisionCanceled
	case Integrity, Compatibility, Precondition, Permanent, Internal:
		return DecisionTerminal
	}
	return DecisionRetry
}

// Decide classifies err (an *Error in the chain wins) and returns its Decision; nil gives
// DecisionNone. Context errors count as Canceled, as with Classify: use DecideContext when a
// per-attempt timeout may be in the chain.
func Decide(err error) Decision {
	if err == nil {
		return DecisionNone
	}
	return Classify(err).Kind.Decision()
}

// DecideContext is Decide with ClassifyContext's view of context errors.
func DecideContext(ctx context.Context, err error) Decision {
	if err == nil {
		return DecisionNone
	}
	return ClassifyContext(ctx, err).Kind.Decision()
}
