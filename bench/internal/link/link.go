// Package link emulates a wide-area link in user space: a TCP relay on 127.0.0.1 in front of an
// upstream address that delays, bounds and paces the bytes it carries, and counts the
// connections and request/response turns that cross it. No kernel qdisc is needed, so the
// benchmark can measure round trips on machines where it cannot shape traffic.
//
// The model, per connection and direction:
//
//   - Delay: a byte the relay reads at t is written to the other side at t + RTT/2, in order.
//     A new connection's first client bytes reach the server no sooner than 1.5 RTT after it was
//     accepted: the relay's accept is immediate, a real connect costs the SYN's round trip first.
//   - Window: bytes read from one side and not yet acknowledged are at most Window; a byte is
//     acknowledged RTT/2 after its delivery (the ACK's way back), so one connection moves at most
//     Window per RTT, as TCP does with that window. Slow start is not modelled.
//   - Rate: one token bucket per direction, shared by every connection, paces the bytes as a
//     link of that capacity would serialise them.
//
// A round trip (Stats.RoundTrips) is a turn: on one connection, bytes from the server after
// bytes from the client. A request answered on a kept-alive connection is one turn, an
// "Expect: 100-continue" request answered with 100 and then the final status is two, and
// requests in flight on several connections at once count one each: the sum is the number of
// times a client waited for the server, not the elapsed RTTs.
package link

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes the emulated link.
type Config struct {
	// Upstream is the address the relay connects every accepted connection to (host:port).
	Upstream string
	// RTT is the round-trip time; each direction is delayed by half of it.
	RTT time.Duration
	// Window bounds the bytes in flight per connection and direction (0: unbounded).
	Window int64
	// Rate is the link's capacity in bytes per second per direction, shared by all
	// connections (0: unbounded).
	Rate int64
	// OnTurn, when set, is called at each client turn (the client's first bytes, or its first
	// after the server's), to see which requests a write makes. Calls come from the relay's
	// goroutines, one at a time; it must not block.
	OnTurn func(Turn)
	// OnDeliver, when set, is called with each chunk of client bytes as it is delivered to the
	// server: when (on Turn.At's clock) and how many, to see whether the link was kept busy.
	// Calls come from every connection's goroutine at once; it must be safe for that and not block.
	OnDeliver func(at time.Duration, n int)
}

// Turn is the start of a client's turn on one connection.
type Turn struct {
	At   time.Duration // since Start or the last CloseConns (a write's start, when each begins with one)
	Conn int64         // the connection's number, from 1
	// Opened is when the relay accepted the connection, on At's clock: a connection opened
	// long before its first request was warmed; one opened just before it, dialled late.
	Opened time.Duration
	// Line is the turn's first line: an HTTP request line, or "" when the bytes are not one (a
	// body sent after the server's interim answer, 100 Continue).
	Line  string
	Bytes int // the bytes the relay read at once
}

func (t Turn) String() string {
	line := t.Line
	if line == "" {
		line = fmt.Sprintf("(%d bytes of body after the server's interim answer)", t.Bytes)
	}
	return fmt.Sprintf("+%5d ms conn %d (opened +%d ms)  %s", t.At.Milliseconds(), t.Conn, t.Opened.Milliseconds(), line)
}

// Stats are the relay's counters since it started.
type Stats struct {
	Connections int64 // connections accepted
	RoundTrips  int64 // turns: server bytes after client bytes on one connection
	BytesUp     int64 // client → server bytes delivered
	BytesDown   int64 // server → client bytes delivered
	// MaxInFlight is the most bytes in flight seen on one connection in one direction (at most
	// Config.Window when that is set).
	MaxInFlight int64
}

// Sub is s minus an earlier snapshot (MaxInFlight is s's).
func (s Stats) Sub(earlier Stats) Stats {
	return Stats{
		Connections: s.Connections - earlier.Connections,
		RoundTrips:  s.RoundTrips - earlier.RoundTrips,
		BytesUp:     s.BytesUp - earlier.BytesUp,
		BytesDown:   s.BytesDown - earlier.BytesDown,
		MaxInFlight: s.MaxInFlight,
	}
}

// chunkMax is the most bytes one read takes: small enough that pacing and the window act on
// fine grains, large enough that a gigabit needs only a few thousand reads a second.
const chunkMax = 64 << 10

// queueLen bounds the chunks waiting for delivery on one direction; the window bounds their
// bytes, this their number (a reader that gets ahead blocks).
const queueLen = 1024

// Relay is a running link emulator. Close stops it and every goroutine it started.
type Relay struct {
	cfg  Config
	ln   net.Listener
	up   *bucket            // client → server
	down *bucket            // server → client
	stop context.CancelFunc // ends dials under way
	dial context.Context
	wg   sync.WaitGroup

	mu    sync.Mutex
	conns map[*conn]struct{}
	shut  bool

	connections, roundTrips, bytesUp, bytesDown, maxInFlight atomic.Int64
	pool                                                     sync.Pool
	epoch                                                    atomic.Pointer[time.Time] // Turn.At's zero: Start or the last CloseConns
	traceMu                                                  sync.Mutex
}

// Start listens on 127.0.0.1 (a free port) and relays every connection to cfg.Upstream.
func Start(cfg Config) (*Relay, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("link: no upstream address")
	}
	if cfg.RTT < 0 || cfg.Window < 0 || cfg.Rate < 0 {
		return nil, fmt.Errorf("link: negative setting in %+v", cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Relay{cfg: cfg, ln: ln, up: newBucket(cfg.Rate), down: newBucket(cfg.Rate), conns: map[*conn]struct{}{}}
	now := time.Now()
	r.epoch.Store(&now)
	r.dial, r.stop = context.WithCancel(context.Background())
	r.pool.New = func() any { b := make([]byte, chunkMax); return &b }
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's address (127.0.0.1:port), to give clients instead of the upstream's.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Stats returns the counters.
func (r *Relay) Stats() Stats {
	return Stats{
		Connections: r.connections.Load(), RoundTrips: r.roundTrips.Load(),
		BytesUp: r.bytesUp.Load(), BytesDown: r.bytesDown.Load(), MaxInFlight: r.maxInFlight.Load(),
	}
}

// CloseConns closes every connection open now (the relay keeps accepting), so the next client
// starts cold and idle connections of an abandoned client do not linger.
func (r *Relay) CloseConns() {
	now := time.Now()
	r.epoch.Store(&now)
	r.mu.Lock()
	cs := make([]*conn, 0, len(r.conns))
	for c := range r.conns {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// Close stops accepting, closes every connection and waits for all the relay's goroutines.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.shut {
		r.mu.Unlock()
		return nil
	}
	r.shut = true
	r.mu.Unlock()
	r.stop()
	err := r.ln.Close()
	r.CloseConns()
	r.wg.Wait()
	return err
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			// Closed by Close; any other accept error (e.g. out of descriptors) would repeat,
			// so the relay stops accepting rather than spin.
			return
		}
		accepted := time.Now()
		id := r.connections.Add(1)
		r.wg.Add(1)
		go r.serve(c, id, accepted)
	}
}

// serve dials the upstream for client c and relays both directions until both end.
func (r *Relay) serve(client net.Conn, id int64, accepted time.Time) {
	defer r.wg.Done()
	d := net.Dialer{Timeout: 10 * time.Second}
	server, err := d.DialContext(r.dial, "tcp", r.cfg.Upstream)
	if err != nil {
		_ = client.Close()
		return
	}
	c := &conn{client: client, server: server, stop: make(chan struct{}), id: id, accepted: accepted}
	r.mu.Lock()
	if r.shut {
		r.mu.Unlock()
		c.close()
		return
	}
	r.conns[c] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		c.close()
	}()

	var wg sync.WaitGroup
	wg.Add(2)
	// The SYN's round trip: the client's first bytes reach the server 1.5 RTT after the accept.
	go func() {
		defer wg.Done()
		r.pipe(c, client, server, r.up, true, accepted.Add(r.cfg.RTT))
	}()
	go func() {
		defer wg.Done()
		r.pipe(c, server, client, r.down, false, time.Time{})
	}()
	wg.Wait()
}

// conn is one relayed connection.
type conn struct {
	client, server net.Conn
	stop           chan struct{}
	once           sync.Once
	id             int64 // the relay's count of connections when this one was accepted
	accepted       time.Time

	mu       sync.Mutex
	lastUp   bool // the last bytes read came from the client
	anyBytes bool
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.stop)
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

// turn records bytes read in one direction and reports whether they start a new turn.
// It also reports whether client bytes start the client's turn (the first bytes, or the first
// after the server's), where a request line is.
func (c *conn) turn(up bool) (serverTurn, clientTurn bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	serverTurn = !up && c.anyBytes && c.lastUp
	clientTurn = up && (!c.anyBytes || !c.lastUp)
	c.lastUp, c.anyBytes = up, true
	return serverTurn, clientTurn
}

type chunk struct {
	buf *[]byte
	n   int
	at  time.Time // when to deliver
}

// pipe carries src → dst for connection c. Its reader stamps each chunk with its delivery time
// once the window and the rate allow it; its writer delivers the chunks at those times and
// acknowledges them RTT/2 later. notBefore holds back the first delivery (the handshake).
func (r *Relay) pipe(c *conn, src, dst net.Conn, rate *bucket, up bool, notBefore time.Time) {
	half := r.cfg.RTT / 2
	win := newWindow(r.cfg.Window)
	q := make(chan chunk, queueLen)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		r.deliver(c, dst, q, win, half, up)
	}()
	defer wg.Wait()
	defer close(q)
	for {
		bp := r.pool.Get().(*[]byte)
		limit := chunkMax
		if w := r.cfg.Window; w > 0 && w < int64(limit) {
			limit = int(w)
		}
		n, err := src.Read((*bp)[:limit])
		if n > 0 {
			serverTurn, clientTurn := c.turn(up)
			if serverTurn {
				r.roundTrips.Add(1)
			}
			if clientTurn && r.cfg.OnTurn != nil {
				r.trace(c, (*bp)[:n])
			}
			inFlight, ok := win.acquire(int64(n), c.stop)
			if !ok {
				r.pool.Put(bp)
				return
			}
			r.noteInFlight(inFlight)
			if !sleepUntil(time.Now().Add(rate.reserve(n)), c.stop) {
				r.pool.Put(bp)
				return
			}
			at := time.Now().Add(half)
			if first := notBefore.Add(half); at.Before(first) {
				at = first
			}
			select {
			case q <- chunk{buf: bp, n: n, at: at}:
			case <-c.stop:
				r.pool.Put(bp)
				return
			}
		} else {
			r.pool.Put(bp)
		}
		if err != nil {
			// EOF: the writer half-closes dst once the queue drains; anything else (including
			// the relay closing src) ends the connection there.
			if !errors.Is(err, io.EOF) {
				c.close()
			}
			return
		}
	}
}

// deliver writes the chunks of q to dst at their times, then half-closes dst.
func (r *Relay) deliver(c *conn, dst net.Conn, q <-chan chunk, win *window, half time.Duration, up bool) {
	for ch := range q {
		if !sleepUntil(ch.at, c.stop) {
			r.pool.Put(ch.buf)
			continue // drain: the reader stops at c.stop too
		}
		// Counted before the write, so a reader that has the bytes sees them counted.
		if up {
			if r.cfg.OnDeliver != nil {
				r.cfg.OnDeliver(time.Since(*r.epoch.Load()), ch.n)
			}
			r.bytesUp.Add(int64(ch.n))
		} else {
			r.bytesDown.Add(int64(ch.n))
		}
		_, err := dst.Write((*ch.buf)[:ch.n])
		r.pool.Put(ch.buf)
		if err != nil {
			c.close()
			continue
		}
		win.release(time.Now().Add(half), int64(ch.n))
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite() // the source ended: pass its EOF on
	}
}

// trace reports a client turn to cfg.OnTurn.
func (r *Relay) trace(c *conn, b []byte) {
	line, _, _ := bytes.Cut(b[:min(len(b), 160)], []byte("\r\n"))
	if bytes.IndexFunc(line, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
		line = nil
	}
	epoch := *r.epoch.Load()
	t := Turn{At: time.Since(epoch), Conn: c.id, Opened: c.accepted.Sub(epoch), Line: string(line), Bytes: len(b)}
	r.traceMu.Lock()
	defer r.traceMu.Unlock()
	r.cfg.OnTurn(t)
}

func (r *Relay) noteInFlight(n int64) {
	for i := 0; i < 100; i++ { // bounded: a lost race is retried, a persistent one is rare and harmless
		old := r.maxInFlight.Load()
		if n <= old || r.maxInFlight.CompareAndSwap(old, n) {
			return
		}
	}
}

// sleepUntil waits until t or stop; it reports false on stop.
func sleepUntil(t time.Time, stop <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-stop:
		return false
	}
}

// window counts one direction's bytes in flight: read and not yet acknowledged.
type window struct {
	limit int64
	mu    sync.Mutex
	used  int64
	acks  []ack // in time order
	wake  chan struct{}
}

type ack struct {
	at time.Time
	n  int64
}

func newWindow(limit int64) *window { return &window{limit: limit, wake: make(chan struct{}, 1)} }

// acquire waits until n more bytes fit (or stop) and returns the bytes then in flight.
func (w *window) acquire(n int64, stop <-chan struct{}) (int64, bool) {
	for {
		w.mu.Lock()
		now := time.Now()
		i := 0
		for ; i < len(w.acks) && !w.acks[i].at.After(now); i++ {
			w.used -= w.acks[i].n
		}
		w.acks = w.acks[i:]
		// An empty window always admits a chunk: the reader never takes more than the limit.
		if w.limit <= 0 || w.used == 0 || w.used+n <= w.limit {
			w.used += n
			used := w.used
			w.mu.Unlock()
			return used, true
		}
		var next <-chan time.Time
		var tm *time.Timer
		if len(w.acks) > 0 {
			tm = time.NewTimer(time.Until(w.acks[0].at))
			next = tm.C
		}
		w.mu.Unlock()
		select {
		case <-next:
		case <-w.wake:
		case <-stop:
			if tm != nil {
				tm.Stop()
			}
			return 0, false
		}
		if tm != nil {
			tm.Stop()
		}
	}
}

// release schedules n bytes' acknowledgement at at.
func (w *window) release(at time.Time, n int64) {
	w.mu.Lock()
	w.acks = append(w.acks, ack{at, n})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// bucket is a token bucket shared by every connection in one direction: each chunk reserves
// its bytes and waits until the link would have serialised them.
type bucket struct {
	rate  float64 // bytes per second; 0 unbounded
	burst float64
	mu    sync.Mutex
	avail float64
	last  time.Time
}

func newBucket(rate int64) *bucket {
	// A burst of one millisecond's bytes (at least one chunk) keeps pacing smooth at any rate.
	b := &bucket{rate: float64(rate), burst: max(float64(rate)/1000, chunkMax), last: time.Now()}
	b.avail = b.burst
	return b
}

// reserve takes n bytes and returns how long the caller waits before sending them.
func (b *bucket) reserve(n int) time.Duration {
	if b.rate <= 0 {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.avail = min(b.burst, b.avail+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	b.avail -= float64(n)
	if b.avail >= 0 {
		return 0
	}
	return time.Duration(-b.avail / b.rate * float64(time.Second))
}
