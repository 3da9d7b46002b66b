package writer

import (
	"bytes"
	"errors"
	"io"
	"sync"
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
type bodyFence struct {
	mu     sync.Mutex
	reads  int
	closed bool
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
