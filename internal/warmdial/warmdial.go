// Package warmdial opens connections ahead of need. A write over a wide-area link spends a round
// trip on each new connection's handshake before its first request can go; the writer knows,
// before it has read its first bytes, how many connections its requests will want, so it asks for
// them then (Warm) and the handshakes overlap the reading, the checksum and, for a multipart
// write, the CreateMultipartUpload the parts wait for. The adapters' transports dial through
// Dialer.DialContext, which hands out a warmed connection before it dials a new one.
//
// Only the TCP connection is opened ahead: over TLS the transport still shakes hands on it.
package warmdial

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// spareIdle is how long a warmed connection waits to be taken before it is closed: long enough
// for the reading and the create a write does before its requests, short enough that no server
// has given up on a connection without a request yet (header read timeouts run to tens of
// seconds) by the time a request goes on it.
const spareIdle = 5 * time.Second

// Dialer dials through dial and keeps the connections Warm opened ahead for the next dials of
// their address. It is safe for concurrent use.
type Dialer struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	idle time.Duration // spareIdle; shorter in tests

	mu      sync.Mutex
	open    map[string]int // live connections dialed through d, warmed or not, by address
	dialing map[string]int // warm dials under way
	spare   map[string][]*spare

	addrs sync.Map // host as Warm names it -> its dial address, "" when a proxy carries it
}

type spare struct {
	done chan struct{} // closed when the dial ended
	conn net.Conn
	err  error
}

// New returns a Dialer over dial.
func New(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Dialer {
	return &Dialer{dial: dial, idle: spareIdle, open: map[string]int{}, dialing: map[string]int{}, spare: map[string][]*spare{}}
}

// Warm makes sure n connections to addr are open or being opened, counting those already open
// (idle in a transport's pool or busy): a warm client dials nothing.
func (d *Dialer) Warm(network, addr string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for range n - d.open[addr] - d.dialing[addr] {
		s := &spare{done: make(chan struct{})}
		d.spare[addr] = append(d.spare[addr], s)
		d.dialing[addr]++
		go d.warmOne(network, addr, s)
	}
}

func (d *Dialer) warmOne(network, addr string, s *spare) {
	defer close(s.done)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the dial's own timeout is shorter
	defer cancel()
	c, err := d.dial(ctx, network, addr)
	d.mu.Lock()
	d.dialing[addr]--
	if err == nil {
		c = d.track(addr, c)
	}
	d.mu.Unlock()
	s.conn, s.err = c, err
	if err == nil {
		time.AfterFunc(d.idle, func() { d.expire(addr, s) })
	}
}

// expire closes s if no dial has taken it.
func (d *Dialer) expire(addr string, s *spare) {
	d.mu.Lock()
	list := d.spare[addr]
	for i, x := range list {
		if x == s {
			d.spare[addr] = append(list[:i:i], list[i+1:]...)
			d.mu.Unlock()
			_ = s.conn.Close()
			return
		}
	}
	d.mu.Unlock()
}

// DialContext hands out a warmed connection to addr when one is open or being opened, and dials
// otherwise (also when the warm dial failed).
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	var s *spare
	if list := d.spare[addr]; len(list) > 0 {
		s, d.spare[addr] = list[0], list[1:]
	}
	d.mu.Unlock()
	if s != nil {
		select {
		case <-s.done:
			if s.err == nil {
				return s.conn, nil
			}
		case <-ctx.Done():
			go func() { // not this dial's any more: close it once it is open
				<-s.done
				if s.err == nil {
					_ = s.conn.Close()
				}
			}()
			return nil, ctx.Err()
		}
	}
	c, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.track(addr, c), nil
}

// track counts c as open until it is closed. d.mu is held.
func (d *Dialer) track(addr string, c net.Conn) net.Conn {
	d.open[addr]++
	t := tracked{Conn: c, closed: func() {
		d.mu.Lock()
		d.open[addr]--
		d.mu.Unlock()
	}}
	t.once = new(sync.Once)
	if cw, ok := c.(closeWriter); ok {
		return &trackedHalf{t, cw}
	}
	return &t
}

type closeWriter interface{ CloseWrite() error }

type tracked struct {
	net.Conn
	once   *sync.Once
	closed func()
}

func (t *tracked) Close() error {
	t.once.Do(t.closed)
	return t.Conn.Close()
}

// SyscallConn passes the socket through, for sendfile (internal/bufpool): without it a part of
// a file would be copied through user space.
func (t *tracked) SyscallConn() (syscall.RawConn, error) {
	sc, ok := t.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("warmdial: the connection has no file descriptor")
	}
	return sc.SyscallConn()
}

// trackedHalf keeps the half-close of a TCP connection, which net/http uses.
type trackedHalf struct {
	tracked
	cw closeWriter
}

func (t *trackedHalf) CloseWrite() error { return t.cw.CloseWrite() }

// Warm warms up to n connections for requests to bucket at endpoint u, addressed virtual-host
// style (bucket.host) or path style, unless a proxy from the environment carries them: the
// transport then dials the proxy, not the store.
func Warm(d *Dialer, u *url.URL, bucket string, virtual bool, n int) {
	if d == nil || u == nil || n < 1 {
		return
	}
	host := u.Host
	if virtual {
		host = bucket + "." + host
	}
	// Every write asks: the address (or that a proxy carries it) is worked out once per host.
	addr, ok := d.addrs.Load(host)
	if !ok {
		addr, _ = d.addrs.LoadOrStore(host, storeAddr(u, bucket, virtual))
	}
	if a := addr.(string); a != "" {
		d.Warm("tcp", a, n)
	}
}

// storeAddr is the address a transport dials for bucket at u, "" when a proxy carries it.
func storeAddr(u *url.URL, bucket string, virtual bool) string {
	host := u.Hostname()
	if virtual {
		host = bucket + "." + host
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: &url.URL{Scheme: u.Scheme, Host: host}}); err != nil || p != nil {
		return ""
	}
	return net.JoinHostPort(host, port)
}
