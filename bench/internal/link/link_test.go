package link

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Every test closes its relay and servers: no goroutine may outlive them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server accepts connections on 127.0.0.1 and runs handle on each until closed.
func server(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// sink reads to EOF, then answers one byte: the client learns that everything arrived.
func sink(c net.Conn) {
	if _, err := io.Copy(io.Discard, c); err == nil {
		_, _ = c.Write([]byte{1})
	}
}

// sendToSink sends n bytes to a sink through c and waits for its answer that all arrived.
func sendToSink(t *testing.T, c *net.TCPConn, n int) {
	t.Helper()
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, cfg Config) *Relay {
	t.Helper()
	r, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func dial(t *testing.T, r *Relay) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c.(*net.TCPConn)
}

func ping(t *testing.T, c net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := c.Write([]byte{'x'}); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// Lower bounds only: a loaded machine makes everything slower, never faster.
func TestPingPongTakesARoundTrip(t *testing.T) {
	const rtt = 80 * time.Millisecond
	r := start(t, Config{Upstream: server(t, echo), RTT: rtt})
	// The first exchange also pays the emulated handshake, from the connect on (the relay
	// counts it from its accept).
	begin := time.Now()
	c := dial(t, r)
	ping(t, c)
	if d := time.Since(begin); d < 2*rtt {
		t.Errorf("connect and first ping-pong took %v, want ≥ %v (handshake + round trip)", d, 2*rtt)
	}
	for i := range 3 {
		if d := ping(t, c); d < rtt {
			t.Errorf("ping-pong %d took %v, want ≥ %v", i+2, d, rtt)
		}
	}
	s := r.Stats()
	if s.Connections != 1 || s.RoundTrips != 4 || s.BytesUp != 4 || s.BytesDown != 4 {
		t.Errorf("stats %+v, want 1 connection, 4 round trips, 4 bytes each way", s)
	}
}

func TestOrderKept(t *testing.T) {
	r := start(t, Config{Upstream: server(t, echo), RTT: 2 * time.Millisecond, Window: 4096, Rate: 64 << 20})
	c := dial(t, r)
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i * 7 / 3)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(want)
		if err == nil {
			err = c.CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echo through the relay differs: %d bytes back of %d", len(got), len(want))
	}
}

// A connection moves at most Window per RTT.
func TestWindowBoundsInFlight(t *testing.T) {
	const (
		rtt    = 40 * time.Millisecond
		window = 64 << 10
		size   = 1 << 20
	)
	r := start(t, Config{Upstream: server(t, sink), RTT: rtt, Window: window})
	c := dial(t, r)
	begin := time.Now()
	sendToSink(t, c, size)
	d := time.Since(begin)
	// size/window windows, each acknowledged a round trip after it left; the last one need
	// only arrive.
	if min := (size/window - 1) * rtt; d < min {
		t.Errorf("%d bytes through a %d-byte window at %v took %v, want ≥ %v", size, window, rtt, d, min)
	}
	if s := r.Stats(); s.MaxInFlight > window || s.MaxInFlight == 0 {
		t.Errorf("max in flight %d, want 1..%d", s.MaxInFlight, window)
	}
}

// Two connections share one rate: together they take as long as their sum at that rate.
func TestRateShared(t *testing.T) {
	const (
		rate = 8 << 20
		each = 4 << 20
	)
	r := start(t, Config{Upstream: server(t, sink), Rate: rate})
	var wg sync.WaitGroup
	begin := time.Now()
	for range 2 {
		c := dial(t, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Write(make([]byte, each)); err != nil {
				t.Error(err)
				return
			}
			if err := c.CloseWrite(); err != nil {
				t.Error(err)
				return
			}
			var b [1]byte
			if _, err := io.ReadFull(c, b[:]); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	d := time.Since(begin)
	// The bucket's burst (1 ms of bytes, or one chunk) leaves without waiting.
	burst := max(rate/1000, chunkMax)
	if min := time.Duration(float64(2*each-burst) / rate * float64(time.Second)); d < min {
		t.Errorf("2 × %d bytes at a shared %d B/s took %v, want ≥ %v", each, rate, d, min)
	}
}

// A kept-alive HTTP connection: one connection, a round trip per request.
func TestCountsHTTPTurns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	r := start(t, Config{Upstream: srv.Listener.Addr().String(), RTT: 10 * time.Millisecond})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	for i := range 3 {
		resp, err := cl.Post("http://"+r.Addr()+"/", "application/octet-stream", bytes.NewReader(make([]byte, 100<<10)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if s := r.Stats(); s.Connections != 1 || s.RoundTrips != int64(i+1) {
			t.Fatalf("after request %d: %+v, want 1 connection, %d round trips", i+1, s, i+1)
		}
	}
	before := r.Stats()
	tr.CloseIdleConnections()
	r.CloseConns()
	resp, err := cl.Get("http://" + r.Addr() + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if d := r.Stats().Sub(before); d.Connections != 1 || d.RoundTrips != 1 {
		t.Errorf("a request on a fresh connection: %+v, want 1 connection, 1 round trip", d)
	}
}

// Close ends every goroutine, with connections open and bytes queued (TestMain checks).
func TestCloseWithTrafficInFlight(t *testing.T) {
	r, err := Start(Config{Upstream: server(t, echo), RTT: time.Second, Window: 1 << 20, Rate: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, r)
	go func() { _, _ = c.Write(make([]byte, 4<<20)) }() // blocks on the window, ends on close
	time.Sleep(50 * time.Millisecond)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(b[:]); err == nil {
		t.Error("read from a connection of a closed relay succeeded")
	}
}

// An upstream that refuses: the client's connection is closed, nothing panics or lingers.
func TestUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	r := start(t, Config{Upstream: addr, RTT: 10 * time.Millisecond})
	c := dial(t, r)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	if _, err := c.Read(b[:]); err == nil {
		t.Error("read through a relay whose upstream is down succeeded")
	}
	if s := r.Stats(); s.Connections != 1 {
		t.Errorf("connections %d, want 1", s.Connections)
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{{}, {Upstream: "127.0.0.1:1", RTT: -1}, {Upstream: "127.0.0.1:1", Window: -1}} {
		if r, err := Start(cfg); err == nil {
			_ = r.Close()
			t.Errorf("Start(%+v) succeeded", cfg)
		}
	}
}

// OnTurn names each request a client makes, once per client turn.
func TestOnTurnNamesRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	var mu sync.Mutex
	var turns []Turn
	r := start(t, Config{Upstream: srv.Listener.Addr().String(), RTT: 2 * time.Millisecond, OnTurn: func(tn Turn) {
		mu.Lock()
		turns = append(turns, tn)
		mu.Unlock()
	}})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for _, path := range []string{"/a", "/b"} {
		resp, err := (&http.Client{Transport: tr}).Post("http://"+r.Addr()+path, "x", bytes.NewReader(make([]byte, 300<<10)))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(turns) != 2 || turns[0].Line != "POST /a HTTP/1.1" || turns[1].Line != "POST /b HTTP/1.1" || turns[0].Conn != 1 || turns[1].Conn != 1 {
		t.Errorf("turns %v", turns)
	}
	if turns[0].Opened < 0 || turns[0].Opened > turns[0].At {
		t.Errorf("connection opened at %v, its first request at %v", turns[0].Opened, turns[0].At)
	}
	if s := turns[0].String(); !strings.Contains(s, "conn 1 (opened +") || !strings.Contains(s, "  POST /a HTTP/1.1") {
		t.Errorf("String: %q", s)
	}
	if s := (Turn{Conn: 2, Bytes: 10}).String(); !strings.Contains(s, "10 bytes of body") {
		t.Errorf("String of a body turn: %q", s)
	}
}

// OnDeliver sees every client byte once, when it reaches the server: paced at the link's rate,
// so the bytes of a transfer spread over the time the rate makes it take.
func TestOnDeliverSeesClientBytesAsDelivered(t *testing.T) {
	const (
		rate = 8 << 20
		size = 2 << 20
	)
	var mu sync.Mutex
	var total int
	var last time.Duration
	r := start(t, Config{Upstream: server(t, sink), Rate: rate, OnDeliver: func(at time.Duration, n int) {
		mu.Lock()
		defer mu.Unlock()
		total += n
		last = max(last, at)
	}})
	c := dial(t, r)
	sendToSink(t, c, size)
	mu.Lock()
	defer mu.Unlock()
	burst := max(rate/1000, chunkMax)
	if min := time.Duration(float64(size-burst) / rate * float64(time.Second)); total != size || last < min {
		t.Errorf("delivered %d bytes, the last at %v; want %d, the last at %v or later", total, last, size, min)
	}
}
