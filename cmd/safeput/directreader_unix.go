//go:build unix

package main

import (
	"context"
	stderrors "errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// directReader reads a stream source straight into the caller's buffer (the writer's part
// buffer): no goroutine, no buffers of its own, no copy. A pipe, FIFO or socket is read through
// Go's poller, so a Read blocked on a silent source returns as soon as ctx ends (ending ctx moves
// the read deadline to now); a regular file never blocks for long, so it is read as it is.
type directReader struct {
	ctx context.Context
	f   *os.File
}

// pipeSize is the capacity asked for a stdin pipe.
const pipeSize = 1 << 20

// newDirectReader returns a directReader for src and a func to call when done with it; ok is
// false (and nothing changed) when src is neither a regular file nor a pipe, FIFO or socket the
// poller can watch. A pipe is read through a duplicate of its descriptor made non-blocking; the
// func restores the blocking mode, since O_NONBLOCK belongs to the open file that src shares
// with any process that inherited it, and closes the duplicate.
func newDirectReader(ctx context.Context, src *os.File) (r *directReader, release func(), ok bool) {
	fi, err := src.Stat()
	switch {
	case err != nil:
		return nil, nil, false
	case fi.Mode().IsRegular():
		return &directReader{ctx: ctx, f: src}, func() {}, true
	case fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0:
		return nil, nil, false
	}
	// SyscallConn rather than Fd: Fd would switch src to blocking mode.
	rc, err := src.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	dup := -1
	if cerr := rc.Control(func(fd uintptr) { dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil || err != nil {
		return nil, nil, false
	}
	flags, err := unix.FcntlInt(uintptr(dup), unix.F_GETFL, 0)
	if err == nil {
		err = syscall.SetNonblock(dup, true)
	}
	if err != nil {
		_ = syscall.Close(dup)
		return nil, nil, false
	}
	if fi.Mode()&os.ModeNamedPipe != 0 {
		// A pipe holds 64 KiB by default: a fast producer then wakes this reader (and the reader
		// the producer) every 64 KiB, and the wake-ups add system CPU to every GiB streamed (the
		// safeput-cli rows' note in BENCHMARKS.md gives the CLI's sys time on a stream). A larger
		// pipe, where the system allows it (fs.pipe-max-size, 1 MiB by default), moves the same
		// bytes in a sixteenth of the wake-ups. The pages are the kernel's, not this process's.
		_, _ = unix.FcntlInt(uintptr(dup), unix.F_SETPIPE_SZ, pipeSize)
	}
	restore := func() {
		if flags&unix.O_NONBLOCK == 0 {
			_ = syscall.SetNonblock(dup, false)
		}
	}
	f := os.NewFile(uintptr(dup), src.Name()) // pollable: the descriptor is non-blocking
	if f.SetReadDeadline(time.Time{}) != nil {
		restore()
		_ = f.Close()
		return nil, nil, false
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	return &directReader{ctx: ctx, f: f}, func() {
		stop()
		restore()
		_ = f.Close()
	}, true
}

func (p *directReader) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	switch {
	case err == nil || stderrors.Is(err, io.EOF):
		return n, err
	case p.ctx.Err() != nil:
		return n, p.ctx.Err()
	}
	return n, &sourceError{err}
}
