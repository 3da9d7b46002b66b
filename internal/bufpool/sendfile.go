package bufpool

import (
	"io"
	"os"
	"syscall"
)

// FileSender is a writer that can send a file's bytes without reading them into user space
// (sendfile(2)): the connections of Dialer, and writers that wrap one and pass this through.
type FileSender interface {
	// SendFile writes n bytes of f from offset off, leaving f's own offset alone (concurrent
	// parts of one file may be in flight). moved, if not nil, is called with the bytes each step
	// handed to the connection. handled is false, with nothing written, when this writer cannot
	// send a file (no socket beneath it, an OS without sendfile, a file sendfile refuses): the
	// caller then copies the bytes instead.
	SendFile(f *os.File, off, n int64, moved func(int64)) (written int64, handled bool, err error)
}

// sendSection sends the next n bytes of a section of an *os.File to dst with dst.SendFile,
// advancing the section as a Read would. ok is false, with nothing sent, when that cannot be done.
func sendSection(dst io.Writer, r io.Reader, n int64) (written int64, ok bool, err error) {
	fs, isSender := dst.(FileSender)
	sr, isSection := r.(*io.SectionReader)
	if !isSender || !isSection {
		return 0, false, nil
	}
	off, _ := sr.Seek(0, io.SeekCurrent) // cannot fail: SeekCurrent by 0 of a SectionReader
	// Down to the file, through sections of sections (a caller's section of a file, then the
	// part's section of that), each of which must hold the n bytes.
	var outer io.ReaderAt = sr
	for {
		inner, ok := outer.(*io.SectionReader)
		if !ok {
			break
		}
		if off+n > inner.Size() {
			return 0, false, nil // a section too short for n: the copy reports it
		}
		var base int64
		outer, base, _ = inner.Outer()
		off += base
	}
	f, isFile := outer.(*os.File)
	if !isFile {
		return 0, false, nil
	}
	written, handled, err := fs.SendFile(f, off, n, nil)
	if !handled {
		return 0, false, nil
	}
	if _, serr := sr.Seek(written, io.SeekCurrent); err == nil {
		err = serr
	}
	if err == nil && written < n {
		err = io.ErrUnexpectedEOF // the file is shorter than its section: truncated under us
	}
	return written, true, err
}

// SendFile sends up to the limit's remaining bytes of the file; a body longer than that fails
// with ErrBodyTooLong after sending exactly the limit, as Write does.
func (l *limitWriter) SendFile(f *os.File, off, n int64, moved func(int64)) (int64, bool, error) {
	sc, ok := l.w.(syscall.Conn)
	if !ok {
		return 0, false, nil
	}
	m, over := l.fit(n)
	k, handled, err := sendFile(sc, f, off, m, moved)
	l.n -= k
	if handled && err == nil {
		err = over
	}
	return k, handled, err
}

// FileBacked reports whether r is an *os.File or a section (of sections) of one: bytes that the
// kernel sends (sendFile) or that are read from the file, never from the caller's memory.
func FileBacked(r io.ReaderAt) bool {
	for {
		switch v := r.(type) {
		case *os.File:
			return true
		case *io.SectionReader:
			r, _, _ = v.Outer()
		default:
			return false
		}
	}
}
