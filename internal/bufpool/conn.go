package bufpool

import (
	"context"
	"io"
	"net"
)

// Dialer wraps dial so that the connections it returns copy a request body through a pooled
// buffer. net/http hands a body to the connection's ReadFrom, and *net.TCPConn's ReadFrom
// falls back to an io.Copy that allocates 32 KiB for every request whose body is not a file or
// a socket: one per part. Over TLS net/http writes through the *tls.Conn instead, so the
// wrapper changes nothing there.
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

// ReadFrom copies r into the connection through a pooled buffer.
func (c *pooledCopyConn) ReadFrom(r io.Reader) (int64, error) {
	return Copy32K.Copy(writerOnly{c.Conn}, r)
}

// closeWriter is a connection that can half-close (TCP), kept visible through the wrapper.
type closeWriter interface{ CloseWrite() error }

type pooledCopyHalfConn struct {
	pooledCopyConn
	closeWriter
}

// writerOnly hides the connection's own ReadFrom, which would allocate.
type writerOnly struct{ io.Writer }
