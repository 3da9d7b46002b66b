package awss3

import (
	"errors"
	"fmt"
	"io"

	"github.com/safeput/safeput/internal/bufpool"
)

// window exposes exactly n bytes of r starting at r's current position, as a ReadSeeker whose
// offsets are relative to that start. The SDK seeks the body to sign and rewind it; the window
// keeps it from reading or seeking past the caller's ContentLength, which net/http would
// otherwise reject ("ContentLength=N with Body length M").
type window struct {
	r    io.ReadSeeker
	base int64
	n    int64
	off  int64
}

func newWindow(r io.ReadSeeker, n int64) (*window, error) {
	base, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("body position: %w", err)
	}
	return &window{r: r, base: base, n: n}, nil
}

func (w *window) Read(p []byte) (int, error) {
	if w.off >= w.n {
		return 0, io.EOF
	}
	if rem := w.n - w.off; int64(len(p)) > rem {
		p = p[:rem]
	}
	k, err := w.r.Read(p)
	w.off += int64(k)
	if errors.Is(err, io.EOF) && w.off < w.n {
		// Shorter than ContentLength: fail the request instead of sending a short body.
		err = fmt.Errorf("body ended after %d of %d bytes: %w", w.off, w.n, io.ErrUnexpectedEOF)
	}
	return k, err
}

func (w *window) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		if offset == 0 {
			return w.off, nil
		}
		abs = w.off + offset
	case io.SeekEnd:
		abs = w.n + offset
	default:
		return 0, fmt.Errorf("seek: invalid whence %d", whence)
	}
	if abs < 0 || abs > w.n {
		return 0, fmt.Errorf("seek to %d outside body of %d bytes", abs, w.n)
	}
	if _, err := w.r.Seek(w.base+abs, io.SeekStart); err != nil {
		return 0, err
	}
	w.off = abs
	return abs, nil
}

// WriteTo writes the rest of the window to dst (bufpool.WriteN): straight from a part buffer's
// bytes.Reader, which is how net/http sends a part without copying it (bufpool.Dialer), else
// through a pooled buffer. The SDK hashes a signed body with io.Copy too, which would otherwise
// allocate 32 KiB for every part.
func (w *window) WriteTo(dst io.Writer) (int64, error) {
	n, err := bufpool.WriteN(dst, w.r, w.n-w.off)
	w.off += n
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("body ended after %d of %d bytes: %w", w.off, w.n, io.ErrUnexpectedEOF)
	}
	return n, err
}
