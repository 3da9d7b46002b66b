package progress

import (
	"context"
	"net/http/httptrace"
)

type writtenKey struct{}

// OnWritten returns a context whose requests tell fn once they have been written out, body
// included: fn(nil), or fn(err) when writing one failed. A request sent on net/http tells it
// through httptrace's WroteRequest; a Store not on net/http calls store.ReportRequestWritten,
// which calls Written. fn may be called more than once (a transport that sends the request again
// on another connection) and on the transport's goroutines. Hooks set on one context stack, as
// httptrace's do: an inner one runs first, then the outer.
func OnWritten(ctx context.Context, fn func(err error)) context.Context {
	stacked := fn
	if outer := Written(ctx); outer != nil {
		stacked = func(err error) { fn(err); outer(err) }
	}
	ctx = context.WithValue(ctx, writtenKey{}, stacked)
	// httptrace stacks its own hooks: this one calls fn alone.
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) { fn(info.Err) }})
}

// Written returns ctx's OnWritten hook, or nil.
func Written(ctx context.Context) func(error) {
	if ctx == nil {
		return nil
	}
	fn, _ := ctx.Value(writtenKey{}).(func(error))
	return fn
}
