//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe returns a pipe whose read end is in blocking mode, as a shell hands stdin over
// (os.Pipe's ends are already non-blocking).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	r, w = os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "pipe-w")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	if cerr := rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// TestDirectReaderReadsAPipe streams 32 MiB through a blocking pipe in odd-sized writes and reads:
// the bytes arrive intact, reading them allocates nothing per read (the bytes go straight into
// the caller's buffer), and the pipe is back in blocking mode afterwards.
func TestDirectReaderReadsAPipe(t *testing.T) {
	const size = 32 << 20
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{4}).Read(data)
	pr, pw := blockingPipe(t)
	go func() {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 70_001)
			if _, err := pw.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
		_ = pw.Close()
	}()

	var release func()
	got, alloc := readInOddSizes(t, func() io.Reader {
		r, rel, ok := newDirectReader(context.Background(), pr)
		if !ok {
			t.Fatal("a pipe was not read directly")
		}
		release = rel
		return r
	}, size)
	release()

	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes that differ from the %d written", len(got), len(data))
	}
	if alloc > 64<<10 {
		t.Errorf("reading a %d MiB pipe allocated %d B, want at most 64 KiB", size>>20, alloc)
	}
	if nonblocking(t, pr) {
		t.Error("the pipe was left non-blocking after release")
	}
}

// TestDirectReaderReturnsWhenCanceled checks that a Read blocked on a pipe nobody writes to returns
// the context's error once it ends, and that a Read after that does too.
func TestDirectReaderReturnsWhenCanceled(t *testing.T) {
	pr, _ := blockingPipe(t)
	ctx, cancel := context.WithCancel(context.Background())
	r, release, ok := newDirectReader(ctx, pr)
	if !ok {
		t.Fatal("a pipe was not read directly")
	}
	defer release()
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the Read block
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Read after cancel returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still blocked 10 s after the context ended")
	}
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, context.Canceled) {
		t.Fatalf("second Read returned %v, want context.Canceled", err)
	}
}

// TestDirectReaderReadsARegularFile: a regular file (stdin redirected from one) is read as it
// is, its mode untouched; a character device is left to ctxReader.
func TestDirectReaderReadsARegularFile(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "src")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("safeput"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	r, release, ok := newDirectReader(context.Background(), f)
	if !ok {
		t.Fatal("a regular file was not read directly")
	}
	got, err := io.ReadAll(r)
	release()
	if err != nil || string(got) != "safeput" {
		t.Fatalf("read %q, %v", got, err)
	}
	if nonblocking(t, f) {
		t.Fatal("the file was made non-blocking")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if _, _, ok := newDirectReader(context.Background(), null); ok {
		t.Fatal("a character device was taken for a direct read")
	}
}

// A stdin pipe is widened to pipeSize where the system allows it (fs.pipe-max-size), so a fast
// producer wakes the CLI once per MiB rather than once per 64 KiB.
func TestDirectReaderWidensAPipe(t *testing.T) {
	r, _ := blockingPipe(t)
	maxSize := 1 << 20
	if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
		var n int
		if _, err := fmt.Sscan(string(b), &n); err == nil && n < maxSize {
			maxSize = n
		}
	}
	dr, release, ok := newDirectReader(context.Background(), r)
	if !ok {
		t.Fatal("newDirectReader refused a pipe")
	}
	defer release()
	rc, err := dr.f.SyscallConn() // not Fd, which would make the descriptor blocking
	if err != nil {
		t.Fatal(err)
	}
	var got int
	if cerr := rc.Control(func(fd uintptr) { got, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
	if got < maxSize {
		t.Errorf("pipe holds %d bytes, want %d (pipe-max-size allows it)", got, maxSize)
	}
}
