package bufpool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net"
	"runtime"
	"testing"
)

// TestDialerConnCopiesWithoutAllocating sends 64 bodies through a wrapped loopback TCP
// connection the way net/http does (ReadFrom of a LimitedReader) and checks the bytes that
// arrive and what sending them allocated: *net.TCPConn alone allocates 32 KiB per body.
func TestDialerConnCopiesWithoutAllocating(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		h := sha256.New()
		_, _ = io.Copy(h, c)
		received <- h.Sum(nil)
	}()
	dial := Dialer((&net.Dialer{}).DialContext)
	conn, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rf, ok := conn.(io.ReaderFrom)
	if !ok {
		t.Fatal("wrapped connection has no ReadFrom")
	}
	body := bytes.Repeat([]byte("safeput "), 16<<10) // 128 KiB
	sent := sha256.New()
	const bodies = 64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range bodies {
		if _, err := rf.ReadFrom(io.LimitReader(bytes.NewReader(body), int64(len(body)))); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	for range bodies {
		sent.Write(body)
	}
	cw, ok := conn.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("wrapped TCP connection hides CloseWrite")
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := <-received; !bytes.Equal(got, sent.Sum(nil)) {
		t.Fatal("the bytes that arrived differ from the bytes sent")
	}
	_ = conn.Close()
	// 64 unpooled copies would be 2 MiB; under -race sync.Pool drops a quarter of its buffers.
	const bound = 1 << 20
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
		t.Errorf("sending %d bodies allocated %d B, want at most %d", bodies, alloc, bound)
	}
}

// TestCopyUsesWriterTo checks that Copy leaves a source's own WriteTo in charge.
func TestCopyUsesWriterTo(t *testing.T) {
	var dst bytes.Buffer
	n, err := Copy32K.Copy(&dst, bytes.NewReader([]byte("abc")))
	if err != nil || n != 3 || dst.String() != "abc" {
		t.Fatalf("Copy = %d, %v, %q", n, err, dst.String())
	}
}
