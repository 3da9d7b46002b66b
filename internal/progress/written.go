package progress

import (
	"context"
	"net/http/httptrace"
)

// OnWritten returns a context whose requests tell fn once they have been written out, body
// included: fn(nil), or fn(err) when writing one failed. It is a hook on httptrace's
// WroteRequest: a request sent on net/http tells it there, and a Store not on net/http calls
// store.ReportRequestWritten, which calls the same hooks. fn may be called more than once (a
// transport that sends the request again on another connection) and on the transport's
// goroutines. Hooks set on one context stack, as httptrace's do: an inner one runs first, then
// the outer.
func OnWritten(ctx context.Context, fn func(err error)) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) { fn(info.Err) }})
}
