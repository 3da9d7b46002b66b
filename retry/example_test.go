package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
)

// Do retries what is retryable and returns a classified error for the rest. One Policy shared
// by many callers shares its retry budget, so an outage cannot multiply the load.
func ExamplePolicy_Do() {
	p := retry.New(func(o *retry.Options) { o.InitialInterval, o.ThrottleInterval = time.Millisecond, time.Millisecond })
	calls := 0
	stats, err := p.Do(context.Background(), retry.Op{Name: "PutObject", Bucket: "b", Key: "k"},
		func(ctx context.Context, attempt int) error {
			calls++
			if attempt < 3 {
				return &store.ResponseError{Op: "PutObject", StatusCode: 503, Code: "SlowDown"}
			}
			return nil
		})
	fmt.Println(err, calls, stats.Attempts)
	// Output: <nil> 3 3
}

// With derives a policy that shares the parent's retry budget: here a shorter stall window for
// one kind of request.
func ExamplePolicy_With() {
	base := retry.New()
	quick := base.With(func(o *retry.Options) { o.StallTimeout, o.MaxAttempts = 5*time.Second, 5 })
	fmt.Println(quick.Budget() == base.Budget())
	// Output: true
}
