// Package bufpool recycles the scratch buffers that move a part's bytes (hashing a body,
// copying it to the connection, checksumming a ReaderAt section), so a streaming upload
// allocates nothing per part once warm: an io.Copy without a buffer allocates 32 KiB per call.
package bufpool

import (
	"io"
	"sync"
)

// Pool hands out buffers of one size.
type Pool struct {
	size int
	p    sync.Pool
}

// New returns a Pool of size-byte buffers.
func New(size int) *Pool {
	bp := &Pool{size: size}
	bp.p.New = func() any {
		b := make([]byte, size)
		return &b
	}
	return bp
}

// Get returns a buffer of the pool's size; give it back with Put when done.
func (bp *Pool) Get() *[]byte { return bp.p.Get().(*[]byte) }

// Put returns a buffer from Get. The caller must not use it afterwards.
func (bp *Pool) Put(b *[]byte) {
	if b != nil && len(*b) == bp.size {
		bp.p.Put(b)
	}
}

// Copy is io.Copy through the pool's buffer. Like io.CopyBuffer it uses src's WriteTo or dst's
// ReadFrom when they exist; the buffer is only taken when it is needed.
func (bp *Pool) Copy(dst io.Writer, src io.Reader) (int64, error) {
	if _, ok := src.(io.WriterTo); ok {
		return io.Copy(dst, src)
	}
	if _, ok := dst.(io.ReaderFrom); ok {
		return io.Copy(dst, src)
	}
	b := bp.Get()
	defer bp.Put(b)
	return io.CopyBuffer(dst, src, *b)
}

// WriteN writes the next n bytes of r to dst. A reader that can write itself and has exactly n
// bytes left (a part buffer's *bytes.Reader, or the writer's fenced reader over one) writes them
// in one call, with no copy; a section of an *os.File (a ReaderAt part)
// goes by sendfile when dst is a FileSender; anything else goes through a pooled buffer.
// An r that ends before n bytes gives io.ErrUnexpectedEOF: a request body must not come up short.
func WriteN(dst io.Writer, r io.Reader, n int64) (int64, error) {
	if br, ok := r.(lenWriterTo); ok && int64(br.Len()) == n {
		return br.WriteTo(dst)
	}
	if k, ok, err := sendSection(dst, r, n); ok {
		return k, err
	}
	b := Copy32K.Get()
	defer Copy32K.Put(b)
	// writerOnly: dst's own ReadFrom (a pooled connection's) would take all of r, not n bytes.
	k, err := io.CopyBuffer(writerOnly{dst}, io.LimitReader(r, n), *b)
	if err == nil && k < n {
		err = io.ErrUnexpectedEOF
	}
	return k, err
}

// lenWriterTo is a reader that writes all it has left in WriteTo, and says how much that is.
type lenWriterTo interface {
	io.WriterTo
	Len() int
}

// Copy32K is the shared pool of 32 KiB buffers (io.Copy's own size).
var Copy32K = New(32 << 10)
