package warmdial

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// listen accepts connections and counts them; it holds them open until the test ends.
func listen(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			n.Add(1)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), &n
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestWarmedConnectionsAreTakenFirst: Warm opens n connections before any request; the next n
// dials take them without dialling, the one after dials; a warm client dials nothing more.
func TestWarmedConnectionsAreTakenFirst(t *testing.T) {
	addr, accepted := listen(t)
	var dials atomic.Int64
	d := New(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	})
	d.Warm("tcp", addr, 2)
	eventually(t, "two warmed connections", func() bool { return accepted.Load() == 2 })
	var conns []net.Conn
	for range 3 {
		c, err := d.DialContext(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials for 2 warmed connections and 1 more, want 3", n)
	}
	d.Warm("tcp", addr, 3) // three are open: nothing to do
	time.Sleep(50 * time.Millisecond)
	if n := dials.Load(); n != 3 {
		t.Errorf("Warm with 3 open connections dialled: %d dials", n)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	d.Warm("tcp", addr, 1) // all closed: one is opened again
	eventually(t, "a warmed connection after the others closed", func() bool { return dials.Load() == 4 })
}

// TestUntakenSpareIsClosed: a warmed connection nobody takes is closed after the idle time and
// no longer counts as open.
func TestUntakenSpareIsClosed(t *testing.T) {
	addr, accepted := listen(t)
	d := New((&net.Dialer{}).DialContext)
	d.idle = 20 * time.Millisecond
	d.Warm("tcp", addr, 1)
	eventually(t, "the warmed connection", func() bool { return accepted.Load() == 1 })
	eventually(t, "the spare closed", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.open[addr] == 0 && len(d.spare[addr]) == 0
	})
	if _, err := d.DialContext(context.Background(), "tcp", addr); err != nil {
		t.Fatalf("dial after the spare expired: %v", err)
	}
	eventually(t, "a new connection for the dial", func() bool { return accepted.Load() == 2 })
}

// TestFailedWarmDialFallsBack: a warm dial that failed does not fail the request's dial.
func TestFailedWarmDialFallsBack(t *testing.T) {
	addr, _ := listen(t)
	var first atomic.Bool
	d := New(func(ctx context.Context, network, a string) (net.Conn, error) {
		if first.CompareAndSwap(false, true) {
			return nil, &net.OpError{Op: "dial", Err: context.DeadlineExceeded}
		}
		return (&net.Dialer{}).DialContext(ctx, network, a)
	})
	d.Warm("tcp", addr, 1)
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
}

// TestConnKeepsItsSocket: a connection handed out keeps the socket's SyscallConn and CloseWrite,
// so sendfile (internal/bufpool) and net/http's half-close still reach it.
func TestConnKeepsItsSocket(t *testing.T) {
	addr, _ := listen(t)
	d := New((&net.Dialer{}).DialContext)
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatal("the connection hides its socket: sendfile would copy instead")
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(interface{ CloseWrite() error }); !ok {
		t.Error("the connection hides CloseWrite")
	}
}
