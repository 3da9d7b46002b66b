package store

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"sync/atomic"

	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/internal/progress"
)

// Stall detection needs to know that a request is moving. The stall watchdog (retry.Policy) puts
// a progress callback into each attempt's context; the adapters' HTTP transports
// (ProgressTransport) report as request-body bytes are taken by the connection and as response
// bytes arrive. A Store not built on an http.RoundTripper should call ReportProgress as its bytes
// move, or the stall window acts on it as a plain per-attempt timeout.

// ReportProgress tells the watcher of ctx, if any, that its request moved bytes.
func ReportProgress(ctx context.Context) {
	if fn := progress.Of(ctx); fn != nil {
		fn()
	}
}

// The writer acts once a request has been written out, body included, before its answer: a part
// gives its slot to the next one while it waits for its answer, and the first parts are hashed
// while the create's answer is on its way. It hears of it on the call's context: a request sent
// on net/http with that context (or one derived from it) tells it through httptrace's
// WroteRequest, with nothing for the adapter to do; a Store not on net/http calls
// ReportRequestWritten. A Store that does neither still works: the writer then waits for each
// answer (storetest checks the signal of every store it runs).

// ReportRequestWritten tells the writer of ctx, if any, that the call's request has been written
// out, body included. Call it once the store has taken the whole body, before answering; a second
// call does nothing more. The news goes where net/http's would, to the WroteRequest hooks of ctx's
// httptrace.ClientTrace: whoever drives a Store hears it the same way from any store.
func ReportRequestWritten(ctx context.Context) {
	if ctx == nil {
		return
	}
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteRequest != nil {
		tr.WroteRequest(httptrace.WroteRequestInfo{})
	}
}

// ProgressTransport wraps base (http.DefaultTransport when nil) so that every request reports
// progress on its context: each read of the request body by the connection, the arrival of the
// response headers, and each read of the response body. It also marks a failure that came before
// the request had a connection (refused, unresolved, TLS handshake or certificate failed) as a
// NotSentError, so a caller knows the store cannot have acted on the request.
func ProgressTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &progressTransport{base: base}
}

type progressTransport struct{ base http.RoundTripper }

func (t *progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// GotConn fires once a connection (handshake done) is ready for the request; before it, no
	// byte of the request can have reached the store.
	var gotConn atomic.Bool
	ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { gotConn.Store(true) },
	})
	fn := progress.Of(ctx)
	ok := fn != nil
	r := req.WithContext(ctx)
	if ok && fn != nil && req.Body != nil && req.Body != http.NoBody {
		r.Body = newProgressBody(req.Body, fn)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		if !gotConn.Load() {
			err = &notSentError{host: req.URL.Host, err: err}
		}
		return resp, err
	}
	if !ok || fn == nil {
		return resp, nil
	}
	fn()
	if resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = newProgressBody(resp.Body, fn)
	}
	return resp, nil
}

// CloseIdleConnections passes through, so clients that close idle connections still can.
func (t *progressTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type progressBody struct {
	rc io.ReadCloser
	fn func()
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.fn()
	}
	return n, err
}

func (b *progressBody) Close() error { return b.rc.Close() }

// newProgressBody wraps rc, keeping its WriteTo when it has one: a request body that writes
// itself to the connection (a part buffer) then reports each chunk the connection takes.
func newProgressBody(rc io.ReadCloser, fn func()) io.ReadCloser {
	b := &progressBody{rc: rc, fn: fn}
	if _, ok := rc.(io.WriterTo); ok {
		return &progressWriterToBody{b}
	}
	return b
}

type progressWriterToBody struct{ *progressBody }

func (b *progressWriterToBody) WriteTo(w io.Writer) (int64, error) {
	return b.rc.(io.WriterTo).WriteTo(progressWriter{w: w, fn: b.fn})
}

// progressChunk bounds one write of a body that writes itself, so progress is reported for every
// 64 KiB the connection takes (the copy it replaces reported every 32 KiB): a link must fall
// below about 3 KiB/s before the default 20 s stall window cuts a request that is still moving.
const progressChunk = 64 << 10

type progressWriter struct {
	w  io.Writer
	fn func()
}

func (pw progressWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), progressChunk)]
		k, err := pw.w.Write(chunk)
		n += k
		if k > 0 {
			pw.fn()
		}
		if err != nil {
			return n, err
		}
		if k < len(chunk) {
			return n, io.ErrShortWrite
		}
		p = p[k:]
	}
	return n, nil
}

// SendFile passes a file section (a ReaderAt part) on to a connection that sends it by sendfile,
// reporting progress for every step the connection takes, as Write does for every chunk.
func (pw progressWriter) SendFile(f *os.File, off, n int64, moved func(int64)) (int64, bool, error) {
	fs, ok := pw.w.(bufpool.FileSender)
	if !ok {
		return 0, false, nil
	}
	return fs.SendFile(f, off, n, func(k int64) {
		pw.fn()
		if moved != nil {
			moved(k)
		}
	})
}

// NotSentError is implemented by an error that knows whether its request left: NotSent reports
// true when none of the request's bytes did (it failed before it had a connection: refused,
// unresolved, TLS handshake or certificate failed), so the store cannot have acted on it. The
// writer looks for one in a failure's chain with errors.As: a CreateMultipartUpload that failed
// unsent created no upload to look for. ProgressTransport marks the adapters' failures so; a
// Store that does not leaves the writer assuming that any failed request may have reached the
// store.
type NotSentError interface {
	NotSent() bool
}

var _ NotSentError = (*notSentError)(nil)

// notSentError is a request's failure before it had a connection.
type notSentError struct {
	host string
	err  error
}

func (e *notSentError) Error() string { return e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// Timeout and Temporary pass the cause's on: a *url.Error around this asks its direct cause
// whether it timed out (a TLS handshake timeout must stay one).
func (e *notSentError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}

func (e *notSentError) Temporary() bool {
	var t interface{ Temporary() bool }
	return errors.As(e.err, &t) && t.Temporary()
}

// NotSent implements NotSentError. RequestHost names the host for package errors, which cannot
// import store (it says whose certificate failed).
func (e *notSentError) NotSent() bool       { return true }
func (e *notSentError) RequestHost() string { return e.host }
