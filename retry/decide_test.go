package retry

import (
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/safeput/safeput/errors"
)

// TestAfterFailure: the decision after a failed attempt, by table. Each case names the test that
// reaches it through Do where one does.
func TestAfterFailure(t *testing.T) {
	c := config{maxAttempts: 3, throttleAttempts: 10, integrityRetries: 1,
		maxElapsed: time.Minute, throttleMaxElapsed: 45 * time.Second, outageMaxElapsed: 50 * time.Second}
	kind := func(k errors.Kind) *errors.Error { return &errors.Error{Kind: k} }
	timeout := errors.ClassifyContext(context.Background(), context.DeadlineExceeded)
	for _, tc := range []struct {
		name string
		f    failure
		want next
	}{
		{"a transient failure, attempts left: retried at the retry cost", failure{err: kind(errors.Transient), attempt: 1, delay: time.Second, delayOK: true},
			next{cost: retryCost}},
		{"a timeout costs more budget", failure{err: timeout, attempt: 1, delay: time.Second, delayOK: true},
			next{cost: timeoutCost}},
		{"a permanent failure is not resent", failure{err: kind(errors.Permanent), attempt: 1, delayOK: true},
			next{giveUp: true}},
		{"an upload that is gone is not resent", failure{err: &errors.Error{Kind: errors.Transient, UploadGone: true}, attempt: 1, delayOK: true},
			next{giveUp: true}},
		{"the kind's attempts are spent", failure{err: kind(errors.Transient), attempt: 3, delayOK: true},
			next{giveUp: true}},
		{"a throttle has attempts of its own", failure{err: kind(errors.Throttled), attempt: 3, delay: time.Second, delayOK: true},
			next{cost: retryCost}},
		{"an integrity failure within its allowance spends it", failure{err: kind(errors.Integrity), attempt: 1, delay: time.Second, delayOK: true},
			next{integrity: true, cost: retryCost}},
		{"the integrity allowance is spent (TestIntegrityCap)", failure{err: kind(errors.Integrity), attempt: 2, integritySpent: 1, delayOK: true},
			next{giveUp: true, why: "integrity retry cap (1) reached"}},
		{"the backoff stopped (TestCustomBackOff)", failure{err: kind(errors.Transient), attempt: 1, delayOK: false},
			next{giveUp: true, why: "backoff stopped"}},
		{"the wait would pass the request's allowance (TestMaxElapsed)", failure{err: kind(errors.Transient), attempt: 1, elapsed: 59 * time.Second, delay: 2 * time.Second, delayOK: true},
			next{giveUp: true, why: "max elapsed time 1m0s reached"}},
		{"a throttle past its own allowance (writer.TestWireThrottledForever)", failure{err: kind(errors.Throttled), attempt: 4, elapsed: 44 * time.Second, delay: 2 * time.Second, delayOK: true},
			next{giveUp: true, why: "throttled for the whole allowance of 45s"}},
		{"a transient failure is not held to the throttle allowance", failure{err: kind(errors.Transient), attempt: 1, elapsed: 44 * time.Second, delay: 2 * time.Second, delayOK: true},
			next{cost: retryCost}},
		{"a store down: retried past the attempts (writer.TestWireOutageRiddenOut)", failure{err: kind(errors.Transient), unavailable: true, attempt: 5, elapsed: 30 * time.Second, delay: 20 * time.Second, delayOK: true},
			next{cost: retryCost}},
		{"a store down past the outage allowance", failure{err: kind(errors.Transient), unavailable: true, attempt: 5, elapsed: 35 * time.Second, delay: 20 * time.Second, delayOK: true},
			next{giveUp: true, why: "the store took no request for the whole outage allowance of 50s"}},
		{"a store down within the attempts: the allowance does not apply yet", failure{err: kind(errors.Transient), unavailable: true, attempt: 2, elapsed: 55 * time.Second, delay: time.Second, delayOK: true},
			next{cost: retryCost}},
	} {
		if got := c.afterFailure(tc.f); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestUnavailable: the failures that say the store takes no request at all get the outage
// allowance; the store's own refusals, a throttle, a stall and a dropped upload do not.
func TestUnavailable(t *testing.T) {
	classify := func(err error) *errors.Error { return errors.ClassifyContext(context.Background(), err) }
	for _, c := range []struct {
		name string
		err  *errors.Error
		want bool
	}{
		{"connection refused", classify(eRefused), true},
		{"connection reset", classify(eReset), true},
		{"closed before an answer", classify(io.ErrUnexpectedEOF), true},
		{"written to a connection closed on a reset", classify(&net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}), true},
		{"a dial that timed out", classify(&net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}), true},
		{"502 from a balancer", classify(resp(502, "")), true},
		{"503 without a code", classify(e503), true},
		{"503 ServiceUnavailable", classify(resp(503, "ServiceUnavailable")), true},
		{"504", classify(resp(504, "")), true},
		{"503 SlowDown: throttled", classify(eSlowDown), false},
		{"500 InternalError: the store's own failure", classify(e500), false},
		{"a stall: the store took the request", &errors.Error{Kind: errors.Transient, Code: errors.CodeStalled}, false},
		{"NoSuchUpload", classify(eNoUpload), false},
		{"access denied", classify(eDenied), false},
	} {
		if got := unavailable(c.err); got != c.want {
			t.Errorf("%s (%v): unavailable = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
