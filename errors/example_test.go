package errors_test

import (
	"context"
	stderrors "errors"
	"fmt"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// Classify turns any error from a store, an SDK or the network into an *Error with a Kind; the
// Kind says what to do.
func ExampleClassify() {
	for _, err := range []error{
		&store.ResponseError{Op: "UploadPart", StatusCode: 400, Code: "XAmzContentChecksumMismatch"},
		&store.ResponseError{Op: "PutObject", StatusCode: 503, Code: "SlowDown"},
		&store.ResponseError{Op: "CompleteMultipartUpload", StatusCode: 400, Code: "EntityTooSmall"},
		&store.ResponseError{Op: "PutObject", StatusCode: 403, Code: "AccessDenied"},
		context.Canceled,
	} {
		e := sperrors.Classify(err)
		fmt.Println(e.Kind.String(), e.Retryable())
	}
	// Output:
	// integrity false
	// throttled true
	// compatibility false
	// permanent false
	// canceled false
}

// Each Kind is a sentinel for errors.Is, and Retryable says what a flush loop should do once
// safeput's own retries are spent: run the task again (throttled), or surface it (an integrity
// failure that survived re-sending the clean bytes).
func ExampleKindOf() {
	for _, cause := range []*sperrors.Error{
		sperrors.New(sperrors.Throttled, "PutObject", "slow down"),
		sperrors.New(sperrors.Integrity, "PutObject", "checksum mismatch"),
	} {
		err := fmt.Errorf("flush segment 7: %w", cause)
		fmt.Println(sperrors.KindOf(err).String(), stderrors.Is(err, cause.Kind), sperrors.Classify(err).Retryable())
	}
	// Output:
	// throttled true true
	// integrity true false
}
