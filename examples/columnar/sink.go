// Package columnar streams Apache Arrow columnar files (Parquet through pqarrow, Arrow IPC)
// straight into a safeput Writer, and reads them back with ranged GETs.
//
// Columnar writers have habits an uploader must survive (docs/research/milvus.md §4):
//   - the first write is the 4-byte magic, and a failure there used to panic in arrow-go: the
//     safeput Writer buffers, so a small write never touches the network;
//   - pqarrow's FileWriter.Close closes its sink, so the sink's Close is the commit, and a
//     row-group error in its Close returns before the sink is closed at all (upload left open);
//   - a failure while writing the footer may be lost inside a writer's Close while the sink is
//     still closed, which must then not commit a truncated file;
//   - ipc.FileWriter.Close writes the footer but does not close its sink.
//
// Sink handles all of them: it remembers the first failure of any write through it, turns a
// Close after a failure into an Abort that returns that failure, and can be aborted at any time.
package columnar

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"sync"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/writer"
)

// Sink is the io.WriteCloser a columnar writer writes into. Close commits through the safeput
// Writer only when every write succeeded; otherwise it aborts and returns the first failure.
type Sink struct {
	w *writer.Writer
	// abortCtx is used for Abort: clean-up must run even when the caller's context ended.
	abortCtx context.Context
	// failWrite, when set, is consulted before every write (tests inject footer failures).
	failWrite func(p []byte) error

	mu     sync.Mutex
	err    error // first failure seen by a Write (ours or the Writer's)
	closed bool
	cerr   error
}

// NewSink wraps w.
func NewSink(w *writer.Writer) *Sink {
	return &Sink{w: w, abortCtx: context.Background()}
}

// Write forwards to the safeput Writer. After any failure it keeps returning the first one, as
// the Writer's own sticky error does, so a columnar writer that retries a write cannot resume.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	err, hook := s.err, s.failWrite
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if hook != nil {
		if err := hook(p); err != nil {
			return 0, s.setErr(err)
		}
	}
	n, err := s.w.Write(p)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return n, s.setErr(err)
	}
	return n, nil
}

func (s *Sink) setErr(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	return s.err
}

// Close commits the object (and verifies it) when every write succeeded. After a failure it
// aborts the upload instead and returns the failure: the safeput Writer would refuse to commit
// after its own error anyway, but a failure that happened above it (a short write, an injected
// error) is only known here. Close is idempotent and returns the first result.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		defer s.mu.Unlock()
		return s.cerr
	}
	s.closed = true
	err := s.err
	s.mu.Unlock()

	if err != nil {
		if aerr := s.w.Abort(s.abortCtx); aerr != nil {
			err = fmt.Errorf("%w (and the abort failed: %w)", err, aerr)
		}
	} else {
		err = s.w.Close()
	}
	s.mu.Lock()
	s.cerr = err
	s.mu.Unlock()
	return err
}

// Abort discards the upload whatever happened so far; after a successful Close it does nothing.
// Call it (deferred) after a columnar writer's Close failed: pqarrow returns a row-group error
// from Close without ever closing its sink.
func (s *Sink) Abort() error {
	s.mu.Lock()
	if s.err == nil {
		s.err = errAborted
	}
	s.mu.Unlock()
	return s.w.Abort(s.abortCtx)
}

var errAborted = stderrors.New("columnar: aborted")

// Result is the safeput Result after a successful Close.
func (s *Sink) Result() *writer.Result { return s.w.Result() }

// classified makes sure a failure reaching the caller unwraps to *errors.Error: safeput's own
// failures already do; one from the columnar library (or a panic) is given a kind here.
func classified(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		return err
	}
	return &sperrors.Error{Kind: sperrors.Permanent, Op: op, Message: "columnar writer failed", Err: err}
}
