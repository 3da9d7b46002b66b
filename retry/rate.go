package retry

import (
	"sync"
	"time"
)

// Adaptive rate: a token bucket that is off until the store throttles. A Throttled answer sets
// the rate to half of what was being sent (the rate measured over about a second, or the current
// limit if lower); each success raises it by 5% and limiting turns off again once it is back at
// the rate that was first throttled. This is the AWS SDK's adaptive mode with a linear-multiplicative
// curve instead of CUBIC: small, and enough to stop a herd of parts hammering a SlowDown prefix.
const (
	minRate        = 0.5 // requests per second; the floor keeps a throttled writer moving
	throttleFactor = 0.5
	recoverFactor  = 1.05
)

type limiter struct {
	mu  sync.Mutex
	now func() time.Time

	enabled bool
	rate    float64 // requests per second while enabled
	ceiling float64 // the rate that was first throttled: limiting stops when rate gets back to it
	tokens  float64 // may go negative: each negative token is a reservation waiting its turn
	last    time.Time

	winStart time.Time
	winCount int
	measured float64 // smoothed requests per second
}

func (l *limiter) init(now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.now == nil {
		l.now = now
	}
}

// reserve counts one request and returns how long it must wait before it is sent.
func (l *limiter) reserve() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.measure(now)
	if !l.enabled {
		return 0
	}
	l.refill(now)
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens / l.rate * float64(time.Second))
}

func (l *limiter) measure(now time.Time) {
	if l.winStart.IsZero() {
		l.winStart = now
	}
	// Close the window before counting, so a request at the boundary opens the next one.
	if el := now.Sub(l.winStart); el >= time.Second {
		inst := float64(l.winCount) / el.Seconds()
		if l.measured == 0 {
			l.measured = inst
		} else {
			l.measured = (l.measured + inst) / 2
		}
		l.winStart, l.winCount = now, 0
	}
	l.winCount++
}

func (l *limiter) refill(now time.Time) {
	if el := now.Sub(l.last).Seconds(); el > 0 {
		l.tokens = min(max(1, l.rate), l.tokens+el*l.rate)
	}
	l.last = now
}

// throttled lowers the rate for everyone sharing the limiter.
func (l *limiter) throttled() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	base := l.measured
	if base == 0 {
		// Less than a second of history: the current window's count is the best guess.
		base = float64(l.winCount) / max(now.Sub(l.winStart).Seconds(), 1)
	}
	if l.enabled {
		l.refill(now)
		base = min(base, l.rate)
	} else {
		// The ceiling is set once per episode: later throttles lower the rate, not the target
		// at which limiting stops, so a rate at the floor cannot switch limiting off at once.
		l.enabled, l.tokens, l.last = true, 0, now
		l.ceiling = max(base, minRate)
	}
	l.rate = max(minRate, base*throttleFactor)
	l.tokens = min(l.tokens, 0)
}

// succeeded raises the rate, and turns limiting off once it is back where it was throttled.
func (l *limiter) succeeded() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enabled {
		return
	}
	l.refill(l.now())
	l.rate *= recoverFactor
	if l.rate >= l.ceiling {
		l.enabled = false
	}
}

// currentRate returns the limit in requests per second, or 0 when not limiting.
func (l *limiter) currentRate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enabled {
		return 0
	}
	return l.rate
}
