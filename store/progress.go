package store

import (
	"context"
	"io"
	"net/http"
	"os"

	"github.com/safeput/safeput/internal/bufpool"
)

// Stall detection needs to know that a request is moving. Whoever runs an attempt under a stall
// watchdog (retry.Policy does) puts a progress func into the request's context with WithProgress;
// the adapters' HTTP transports call ReportProgress as request-body bytes are taken by the
// connection and as response bytes arrive. A Store not built on the adapters should call
// ReportProgress as its bytes move, or the stall window acts on it as a plain per-attempt timeout.

type progressKey struct{}

// WithProgress returns a context whose requests report their progress to fn. fn must be cheap and
// safe for concurrent use: it runs on the transport's goroutines for every read.
func WithProgress(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress tells the watcher of ctx, if any, that its request moved bytes.
func ReportProgress(ctx context.Context) {
	if ctx == nil {
		return
	}
	if fn, ok := ctx.Value(progressKey{}).(func()); ok && fn != nil {
		fn()
	}
}

// ProgressTransport wraps base (http.DefaultTransport when nil) so that every request reports
// progress on its context: each read of the request body by the connection, the arrival of the
// response headers, and each read of the response body. A request whose context carries no
// progress func passes through unchanged.
func ProgressTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &progressTransport{base: base}
}

type progressTransport struct{ base http.RoundTripper }

func (t *progressTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	fn, ok := ctx.Value(progressKey{}).(func())
	if !ok || fn == nil {
		return t.base.RoundTrip(req)
	}
	if req.Body != nil && req.Body != http.NoBody {
		r := req.Clone(ctx)
		r.Body = newProgressBody(req.Body, fn)
		req = r
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
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
