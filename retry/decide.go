package retry

import (
	"fmt"
	"time"

	"github.com/safeput/safeput/errors"
)

// The decision after a failed attempt, apart from the attempts, sleeps, budget and limiter that
// Do runs: given the classified error and what the request has spent so far, whether it is sent
// again and, when not, why. It takes no lock and sends nothing, so it is tested by table
// (decide_test.go).

// failure is what afterFailure decides from.
type failure struct {
	err            *errors.Error
	attempt        int           // the attempt that failed, from 1
	integritySpent int           // retries already spent on Integrity failures
	elapsed        time.Duration // since the first attempt began
	delay          time.Duration // the backoff's next wait
	delayOK        bool          // false: the backoff has stopped
	// unavailable: the store did not take the request at all (unavailable: refused, reset, 502,
	// 503, 504), so past the kind's attempts the outage allowance decides.
	unavailable bool
}

// next is what follows a failed attempt.
type next struct {
	giveUp bool
	// why is added to the error's message when the request gives up on a limit rather than on
	// the error itself ("" otherwise).
	why string
	// integrity: the retry spends one of the Integrity allowance.
	integrity bool
	// cost is the retry budget tokens the retry takes: a timeout costs more, since it held its
	// connection for the whole window.
	cost int
}

// outage reports whether a retry after f is one of the outage allowance's: the store did not take
// the request and the kind's own attempts are spent. Its sleep is a throttling step.
func (c *config) outage(f failure) bool {
	return f.unavailable && c.outageMaxElapsed > 0 && f.attempt >= c.attemptsFor(f.err.Kind)
}

// afterFailure decides whether a failed attempt is sent again. The checks run in this order, and
// the first that stops the request names why: the error is not one a resend can fix, or its
// kind's attempts are spent (unless the store did not take it: the outage allowance then
// decides); the Integrity allowance is spent; the backoff stopped; the wait would pass the whole
// request's time allowance; a throttled request would pass its own; a request the store did not
// take would pass the outage allowance.
func (c *config) afterFailure(f failure) next {
	e := f.err
	outage := c.outage(f)
	if !resendable(e) || (f.attempt >= c.attemptsFor(e.Kind) && !outage) {
		return next{giveUp: true}
	}
	n := next{cost: retryCost}
	if errors.IsTimeout(e) {
		n.cost = timeoutCost
	}
	if e.Kind == errors.Integrity {
		if f.integritySpent >= c.integrityRetries {
			return next{giveUp: true, why: fmt.Sprintf("integrity retry cap (%d) reached", c.integrityRetries)}
		}
		n.integrity = true
	}
	switch {
	case !f.delayOK:
		return next{giveUp: true, why: "backoff stopped"}
	case c.maxElapsed > 0 && f.elapsed+f.delay > c.maxElapsed:
		return next{giveUp: true, why: fmt.Sprintf("max elapsed time %v reached", c.maxElapsed)}
	case e.Kind == errors.Throttled && c.throttleMaxElapsed > 0 && f.elapsed+f.delay > c.throttleMaxElapsed:
		return next{giveUp: true, why: fmt.Sprintf("throttled for the whole allowance of %v", c.throttleMaxElapsed)}
	case outage && f.elapsed+f.delay > c.outageMaxElapsed:
		return next{giveUp: true, why: fmt.Sprintf("the store took no request for the whole outage allowance of %v", c.outageMaxElapsed)}
	}
	return n
}
