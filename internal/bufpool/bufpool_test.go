package bufpool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// sha256Sink listens on loopback for one connection and sends the SHA-256 of everything it
// receives (nil if none came) once the sender half-closes.
func sha256Sink(t *testing.T) (addr string, received <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	ch := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		defer c.Close()
		h := sha256.New()
		_, _ = io.Copy(h, c)
		ch <- h.Sum(nil)
	}()
	return ln.Addr().String(), ch
}

// TestDialerConnCopiesWithoutAllocating sends 64 bodies through a wrapped loopback TCP
// connection the way net/http does (ReadFrom of a LimitedReader) and checks the bytes that
// arrive and what sending them allocated: *net.TCPConn alone allocates 32 KiB per body.
func TestDialerConnCopiesWithoutAllocating(t *testing.T) {
	addr, received := sha256Sink(t)
	dial := Dialer((&net.Dialer{}).DialContext)
	conn, err := dial(context.Background(), "tcp", addr)
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

// countingConn counts the writes that reach the connection, keeping *net.TCPConn's CloseWrite
// and SyscallConn (and so sendfile).
type countingConn struct {
	*net.TCPConn
	writes int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes++
	return c.TCPConn.Write(p)
}

// dialCounting dials addr through Dialer over a countingConn.
func dialCounting(t *testing.T, addr string) (net.Conn, *countingConn) {
	t.Helper()
	var counted *countingConn
	dial := Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		counted = &countingConn{TCPConn: c.(*net.TCPConn)}
		return counted, nil
	})
	conn, err := dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return conn, counted
}

// TestDialerConnSendsABodyThatWritesItself sends a 4 MiB part buffer the way net/http hands it
// over (ReadFrom of io.LimitReader(body, ContentLength)): the bytes arrive intact in a single
// write to the connection instead of 128 writes through a 32 KiB copy buffer. A body longer
// than its limit sends exactly the limit and fails with ErrBodyTooLong.
func TestDialerConnSendsABodyThatWritesItself(t *testing.T) {
	addr, received := sha256Sink(t)
	conn, counted := dialCounting(t, addr)
	rf := conn.(io.ReaderFrom)
	body := bytes.Repeat([]byte("safeput!"), 512<<10) // 4 MiB
	n, err := rf.ReadFrom(io.LimitReader(bytes.NewReader(body), int64(len(body))))
	if err != nil || n != int64(len(body)) {
		t.Fatalf("ReadFrom = %d, %v; want %d, nil", n, err, len(body))
	}
	if counted.writes != 1 {
		t.Errorf("the 4 MiB body took %d writes, want 1 (no copy buffer)", counted.writes)
	}
	long := io.LimitReader(bytes.NewReader([]byte("0123456789")), 4)
	if n, err := rf.ReadFrom(long); !errors.Is(err, ErrBodyTooLong) || n != 4 {
		t.Errorf("a 10-byte body limited to 4: ReadFrom = %d, %v; want 4, ErrBodyTooLong", n, err)
	}
	_ = conn.(interface{ CloseWrite() error }).CloseWrite()
	want := sha256.Sum256(append(bytes.Clone(body), "0123"...))
	if got := <-received; !bytes.Equal(got, want[:]) {
		t.Fatal("the bytes that arrived differ from the body followed by exactly 4 bytes of the long one")
	}
	_ = conn.Close()
}

// TestWriteN checks both paths: a bytes.Reader with exactly n bytes left writes them in one
// call; a longer reader, or any other, gives exactly n bytes through the pooled buffer.
func TestWriteN(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh"), 10_000)
	for _, tc := range []struct {
		name       string
		r          io.Reader
		n          int64
		wantWrites int
	}{
		{"exact bytes.Reader", bytes.NewReader(data), int64(len(data)), 1},
		{"longer bytes.Reader", bytes.NewReader(data), 50_000, 2},
		{"other reader", io.MultiReader(bytes.NewReader(data)), 50_000, 2},
		{"file section, no FileSender", io.NewSectionReader(tempFileOf(t, data), 0, int64(len(data))), 50_000, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst bytes.Buffer
			w := &countingWriter{w: &dst}
			n, err := WriteN(w, tc.r, tc.n)
			if err != nil || n != tc.n || !bytes.Equal(dst.Bytes(), data[:tc.n]) {
				t.Fatalf("WriteN = %d, %v (%d bytes written), want %d", n, err, dst.Len(), tc.n)
			}
			if w.writes != tc.wantWrites {
				t.Errorf("%d writes, want %d", w.writes, tc.wantWrites)
			}
		})
	}
}

// TestWriteNShortSource: a source that ends before n bytes is an error, not a short body.
func TestWriteNShortSource(t *testing.T) {
	var dst bytes.Buffer
	n, err := WriteN(&dst, io.MultiReader(bytes.NewReader([]byte("abc"))), 5)
	if n != 3 || !errors.Is(err, io.ErrUnexpectedEOF) || dst.String() != "abc" {
		t.Fatalf("WriteN = %d, %v (%q), want 3, io.ErrUnexpectedEOF", n, err, dst.String())
	}
}

type countingWriter struct {
	w      io.Writer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}

// fileBody is a request body over a file section that writes itself (as the adapters' bodies do).
type fileBody struct{ *io.SectionReader }

func (b fileBody) WriteTo(dst io.Writer) (int64, error) {
	pos, _ := b.Seek(0, io.SeekCurrent)
	return WriteN(dst, b.SectionReader, b.Size()-pos)
}

// tempFileOf writes data to a temp file and opens it for reading.
func tempFileOf(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "source")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// TestDialerConnSendsAFileSection sends a section of a file (a ReaderAt part) the way net/http
// hands a body over: on Linux the kernel moves it (sendfile), so not one write of the section
// reaches the connection, the bytes arrive intact, and the file's own offset is left alone (other
// parts of the file may be in flight). A section longer than the limit sends exactly the limit and
// fails with ErrBodyTooLong.
func TestDialerConnSendsAFileSection(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("sendfile is used on Linux only; elsewhere a section is copied (TestWriteN)")
	}
	data := make([]byte, 6<<20)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(data)
	f := tempFileOf(t, data)
	addr, received := sha256Sink(t)
	conn, counted := dialCounting(t, addr)
	rf := conn.(io.ReaderFrom)
	const off, size = 1<<20 + 3, 4 << 20
	n, err := rf.ReadFrom(io.LimitReader(fileBody{io.NewSectionReader(f, off, size)}, size))
	if err != nil || n != size {
		t.Fatalf("ReadFrom = %d, %v; want %d, nil", n, err, size)
	}
	if counted.writes != 0 {
		t.Errorf("the file section took %d writes to the connection, want 0 (sendfile)", counted.writes)
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != 0 {
		t.Errorf("the file's own offset moved to %d", pos)
	}
	// A part's section of a caller's section of the file goes by sendfile too.
	nested := fileBody{io.NewSectionReader(io.NewSectionReader(f, 2<<20, 1<<20), 5, 1000)}
	if n, err := rf.ReadFrom(io.LimitReader(nested, 1000)); err != nil || n != 1000 {
		t.Fatalf("nested section: ReadFrom = %d, %v; want 1000, nil", n, err)
	}
	if counted.writes != 0 {
		t.Errorf("the nested section took %d writes to the connection, want 0 (sendfile)", counted.writes)
	}
	long := fileBody{io.NewSectionReader(f, 0, 10)}
	if n, err := rf.ReadFrom(io.LimitReader(long, 4)); !errors.Is(err, ErrBodyTooLong) || n != 4 {
		t.Errorf("a 10-byte section limited to 4: ReadFrom = %d, %v; want 4, ErrBodyTooLong", n, err)
	}
	_ = conn.(interface{ CloseWrite() error }).CloseWrite()
	var sent []byte
	sent = append(sent, data[off:off+size]...)
	sent = append(sent, data[2<<20+5:2<<20+5+1000]...)
	sent = append(sent, data[:4]...)
	want := sha256.Sum256(sent)
	if got := <-received; !bytes.Equal(got, want[:]) {
		t.Fatal("the bytes that arrived differ from the sections sent, the long one cut to exactly 4 bytes")
	}
	_ = conn.Close()
}

// TestFileSectionPastTheEnd: a file that is shorter than its section (truncated while the upload
// ran) is a short body, io.ErrUnexpectedEOF, on the sendfile path as on the copy path.
func TestFileSectionPastTheEnd(t *testing.T) {
	f := tempFileOf(t, bytes.Repeat([]byte("x"), 100_000))
	addr, received := sha256Sink(t)
	addr2, received2 := sha256Sink(t)
	conn, err := Dialer((&net.Dialer{}).DialContext)(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	const size = 300_000
	n, err := conn.(io.ReaderFrom).ReadFrom(io.LimitReader(fileBody{io.NewSectionReader(f, 0, size)}, size))
	if n != 100_000 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("ReadFrom = %d, %v; want 100000, io.ErrUnexpectedEOF", n, err)
	}
	_ = conn.Close()
	<-received
	// A part's section that runs past the end of the caller's section of the file must not be
	// sent from the file beyond it.
	conn, err = Dialer((&net.Dialer{}).DialContext)(context.Background(), "tcp", addr2)
	if err != nil {
		t.Fatal(err)
	}
	n, err = conn.(io.ReaderFrom).ReadFrom(io.LimitReader(fileBody{io.NewSectionReader(io.NewSectionReader(f, 0, 10), 0, 20)}, 20))
	if n != 10 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("section past its outer section: ReadFrom = %d, %v; want 10, io.ErrUnexpectedEOF", n, err)
	}
	_ = conn.Close()
	<-received2
	var dst bytes.Buffer
	n, err = WriteN(&dst, io.NewSectionReader(f, 0, size), size)
	if n != 100_000 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("WriteN to a buffer = %d, %v; want 100000, io.ErrUnexpectedEOF", n, err)
	}
}
