package retry

import "sync"

// budget is the AWS SDK standard mode's retry quota: a token bucket that retries draw from and
// successes refill, so during an outage every user of the policy stops retrying soon instead of
// tripling the load.
type budget struct {
	mu       sync.Mutex
	capacity int
	tokens   int
}

func newBudget(capacity int) *budget { return &budget{capacity: capacity, tokens: capacity} }

// take removes cost tokens, or reports false and removes nothing when fewer are left.
func (b *budget) take(cost int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < cost {
		return false
	}
	b.tokens -= cost
	return true
}

// put returns n tokens, up to the capacity.
func (b *budget) put(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(b.capacity, b.tokens+n)
}

func (b *budget) available() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}
