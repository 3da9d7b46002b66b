package bufpool

import (
	"context"
	"errors"
	"io"
	"net"
)

// Dialer wraps dial so that the connections it returns send a request body without a copy
// when the body can write itself, and through a pooled buffer otherwise. net/http hands a body
// to the connection's ReadFrom as io.LimitReader(body, ContentLength), and *net.TCPConn's
// ReadFrom falls back to an io.Copy that allocates 32 KiB for every request whose body is not a
// file or a socket (one per part) and copies the part through it 32 KiB at a time. Over TLS
// net/http writes through the *tls.Conn instead, so the wrapper changes nothing there.
func Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if cw, ok := c.(closeWriter); ok {
			return &pooledCopyHalfConn{pooledCopyConn{c}, cw}, nil
		}
		return &pooledCopyConn{c}, nil
	}
}

type pooledCopyConn struct{ net.Conn }

// ReadFrom sends r to the connection. A body net/http limited to its ContentLength that can
// write itself (io.WriterTo: a part buffer's bytes.Reader behind the SDKs' wrappers) does, in
// large writes straight from its bytes, through a writer that refuses to run past the limit;
// anything else is copied through a pooled buffer.
func (c *pooledCopyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if wt, ok := lr.R.(io.WriterTo); ok {
			n, err := wt.WriteTo(&limitWriter{w: c.Conn, n: lr.N})
			lr.N -= n
			return n, err
		}
	}
	return Copy32K.Copy(writerOnly{c.Conn}, r)
}

// ErrBodyTooLong is returned when a body that writes itself has more bytes than the request's
// ContentLength: the request fails instead of sending bytes past its end.
var ErrBodyTooLong = errors.New("request body is longer than its ContentLength")

// limitWriter passes at most n bytes to w.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	m, over := l.fit(int64(len(p)))
	k, err := l.w.Write(p[:m])
	l.n -= int64(k)
	if err == nil {
		err = over
	}
	return k, err
}

// fit cuts a write of n bytes to what the limit has left; over is ErrBodyTooLong when it had to,
// for the caller to return once the bytes that fit are sent.
func (l *limitWriter) fit(n int64) (m int64, over error) {
	if n > l.n {
		return l.n, ErrBodyTooLong
	}
	return n, nil
}

// closeWriter is a connection that can half-close (TCP), kept visible through the wrapper.
type closeWriter interface{ CloseWrite() error }

type pooledCopyHalfConn struct {
	pooledCopyConn
	closeWriter
}

// writerOnly hides the connection's own ReadFrom, which would allocate.
type writerOnly struct{ io.Writer }
