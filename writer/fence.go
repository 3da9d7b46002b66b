package writer

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/safeput/safeput/internal/bufpool"
)

// errBodyFenced is what a request reading a part's bytes after the part was done gets.
var errBodyFenced = errors.New("safeput: request body read after its part was done")

// bodyFence guards a buffer lent to requests against a request that outlives its call. net/http
// may go on writing a request body after RoundTrip has returned (a server that answers before
// reading the whole body, a cancelled request whose connection closes a moment later, even a
// success whose answer beat the writing goroutine's last step), and leaves waiting for that to
// the caller; the SDKs do not wait. A buffer given back to the budget and filled with the next
// part would then be read by the old request: a data race, and bytes of one part on another's
// wire. Every read of the buffer by a request goes through the fence; when the part is done,
// close refuses further reads and reports one still under way, and then the buffer is not reused.
// A section of the caller's ReaderAt source is fenced too, and waited for (closeAndWait): the
// caller may reuse its memory as soon as Upload returns.
type bodyFence struct {
	mu     sync.Mutex
	reads  int
	closed bool
	idle   chan struct{} // closed when the reads under way at closeAndWait have ended
}

func (f *bodyFence) enter() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errBodyFenced
	}
	f.reads++
	return nil
}

func (f *bodyFence) exit() {
	f.mu.Lock()
	f.reads--
	if f.reads == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

// close refuses every later read; busy reports a read still under way, which may go on touching
// the buffer for as long as its connection lives.
func (f *bodyFence) close() (busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return f.reads > 0
}

// closeAndWait closes f and waits up to d for the reads under way to end; false if one had not.
func (f *bodyFence) closeAndWait(d time.Duration) bool {
	f.mu.Lock()
	f.closed = true
	if f.reads == 0 {
		f.mu.Unlock()
		return true
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

// fencedReader is one request's reader over a fenced buffer. It keeps what the adapters and
// bufpool use of a *bytes.Reader (Seek for signing and rewinding, WriteTo and Len for sending
// the buffer without a copy).
type fencedReader struct {
	r bytes.Reader
	f *bodyFence
}

func newFencedReader(buf []byte, f *bodyFence) *fencedReader {
	b := &fencedReader{f: f}
	b.r.Reset(buf)
	return b
}

func (b *fencedReader) Read(p []byte) (int, error) {
	if err := b.f.enter(); err != nil {
		return 0, err
	}
	defer b.f.exit()
	return b.r.Read(p)
}

func (b *fencedReader) WriteTo(w io.Writer) (int64, error) {
	if err := b.f.enter(); err != nil {
		return 0, err
	}
	defer b.f.exit()
	return b.r.WriteTo(w)
}

func (b *fencedReader) Seek(offset int64, whence int) (int64, error) {
	if err := b.f.enter(); err != nil {
		return 0, err
	}
	defer b.f.exit()
	return b.r.Seek(offset, whence)
}

// Len is the bytes left to read (bufpool.WriteN sends a body whose Len is the whole request
// in one write).
func (b *fencedReader) Len() int {
	if b.f.enter() != nil {
		return 0
	}
	defer b.f.exit()
	return b.r.Len()
}

// fencedSection is one request's reader over a part of an in-memory (not file) ReaderAt source.
// The connection copies it through a pooled buffer (its ReadFrom, or WriteTo here), one short
// read at a time, so a read under way when the part ends is one ReadAt of at most 32 KiB.
type fencedSection struct {
	s *io.SectionReader
	f *bodyFence
}

func (b *fencedSection) Read(p []byte) (int, error) {
	if err := b.f.enter(); err != nil {
		return 0, err
	}
	defer b.f.exit()
	return b.s.Read(p)
}

func (b *fencedSection) Seek(offset int64, whence int) (int64, error) {
	if err := b.f.enter(); err != nil {
		return 0, err
	}
	defer b.f.exit()
	return b.s.Seek(offset, whence)
}

// WriteTo copies what is left of the section to w through a pooled buffer, one fenced read of at
// most its 32 KiB at a time: a store that copies the body with io.Copy (a Store of the caller's
// own, say) then allocates no buffer of its own for it.
func (b *fencedSection) WriteTo(w io.Writer) (int64, error) {
	buf := bufpool.Copy32K.Get()
	defer bufpool.Copy32K.Put(buf)
	var total int64
	for {
		n, rerr := b.Read(*buf)
		if n > 0 {
			m, werr := w.Write((*buf)[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			if m < n {
				return total, io.ErrShortWrite
			}
		}
		if errors.Is(rerr, io.EOF) {
			return total, nil
		}
		if rerr != nil {
			return total, rerr
		}
	}
}
