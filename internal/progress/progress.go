// Package progress carries a request's progress callback in its context: whoever runs an attempt
// under a stall watchdog (retry.Policy) puts one in with With; the adapters' transports
// (store.ProgressTransport) and any Store (store.ReportProgress) call it as bytes move. It is
// apart from store so that only the watchdog can install one.
package progress

import "context"

type key struct{}

// With returns a context whose requests report their progress to fn. fn must be cheap and safe
// for concurrent use: it runs on the transport's goroutines for every read.
func With(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, key{}, fn)
}

// Of returns the progress callback of ctx, or nil.
func Of(ctx context.Context) func() {
	if ctx == nil {
		return nil
	}
	fn, _ := ctx.Value(key{}).(func())
	return fn
}
