package writer

import (
	"io"
	"time"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/hugepage"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/prefault"
	"github.com/safeput/safeput/store"
	"go.uber.org/zap"
)

// Write copies p into part buffers. It sends nothing until a part is full and more data
// follows, so small writes (a Parquet writer's 4-byte magic) cannot fail on the network.
func (w *Writer) Write(p []byte) (int, error) {
	w.op.Lock()
	defer w.op.Unlock()
	return w.write(p)
}

func (w *Writer) write(p []byte) (int, error) {
	if err := w.checkWritable(); err != nil {
		return 0, err
	}
	written := 0
	for len(p) > 0 {
		if w.intake.buf == nil {
			if declaredAllIn(w.cfg.sizeHint, w.intake.size) {
				// The declared size is all in: say so, rather than let the part the plan has no
				// room for fail as a layout error.
				return written, w.account(int64(len(p)))
			}
			if err := w.nextBuffer(len(p)); err != nil {
				return written, err
			}
		} else if w.intake.fill == len(w.intake.buf) && !w.growBuffer(len(p)) {
			// Only a buffer that may grow is kept full (holdFull); one that could not would
			// otherwise take no byte, for ever.
			w.holdFull()
			continue
		}
		w.mapAhead(w.intake.fill + min(len(p), len(w.intake.buf)-w.intake.fill))
		n := copy(w.intake.buf[w.intake.fill:], p)
		w.filled(n)
		written += n
		p = p[n:]
		if err := w.account(int64(n)); err != nil {
			return written, err
		}
		if w.intake.fill == len(w.intake.buf) && !w.bufferGrows() {
			w.holdFull()
		}
	}
	return written, nil
}

// readChunk bounds one Read into a part buffer, so the bytes are still in the CPU's cache when
// their CRC is taken right after.
const readChunk = 256 << 10

// ReadFrom reads r to EOF straight into part buffers (no intermediate copy).
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	w.op.Lock()
	defer w.op.Unlock()
	if err := w.checkWritable(); err != nil {
		return 0, err
	}
	if r == nil {
		return 0, w.fail(sperrors.New(sperrors.Permanent, "ReadFrom", "nil reader"))
	}
	var total int64
	for {
		// How much the reader has is unknown: a first buffer starts small, and a full one
		// grows fourfold (want 0).
		if w.intake.buf == nil {
			if err := w.nextBuffer(0); err != nil {
				return total, err
			}
		} else if w.intake.fill == len(w.intake.buf) && !w.growBuffer(0) {
			w.holdFull() // as in write
			continue
		}
		room := w.intake.buf[w.intake.fill:min(len(w.intake.buf), w.intake.fill+readChunk)]
		w.mapAhead(w.intake.fill + len(room))
		n, err := r.Read(room)
		if n < 0 || n > len(room) {
			return total, w.fail(sperrors.New(sperrors.Internal, "ReadFrom", "reader returned invalid count %d", n))
		}
		w.filled(n)
		total += int64(n)
		if aerr := w.account(int64(n)); aerr != nil {
			return total, aerr
		}
		if err == nil && w.intake.fill == len(w.intake.buf) {
			// Probe one byte before taking a new buffer (or growing this one): a stream that
			// ends exactly here must not start a multipart upload (or a part) it does not need.
			var probe [1]byte
			m, perr := io.ReadFull(r, probe[:])
			if !w.bufferGrows() {
				w.holdFull()
			}
			if m == 0 && (perr == io.EOF || perr == io.ErrUnexpectedEOF) {
				return total, nil
			}
			if m == 1 {
				total++
				if _, werr := w.write(probe[:]); werr != nil {
					return total, werr
				}
			}
			if perr != nil && perr != io.EOF {
				return total, w.fail(w.errs.sourceError("ReadFrom", 0, perr))
			}
			continue
		}
		if w.intake.fill == len(w.intake.buf) && !w.bufferGrows() {
			w.holdFull()
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, w.fail(w.errs.sourceError("ReadFrom", 0, err))
		}
		if err := w.ctx.Err(); err != nil {
			return total, w.fail(w.errs.canceled("ReadFrom", err))
		}
	}
}

// filled takes in the n bytes just added at the end of buf[:fill], adding them to its CRC.
func (w *Writer) filled(n int) {
	if n > 0 && w.caps.local != store.ChecksumNone {
		w.intake.fillCRC = integrity.Update(w.caps.local, w.intake.fillCRC, w.intake.buf[w.intake.fill:w.intake.fill+n])
	}
	w.intake.fill += n
}

// mapAhead has the pages of a fresh buffer up to end mapped before they are written, a step
// ahead at a time, rather than one fault per page as the bytes land (internal/prefault says
// what that saves). A buffer smaller than prefaultMin is left to fault in: the system call
// costs more than its few faults, and the Go heap hands out such buffers mostly from pages
// it has mapped already.
func (w *Writer) mapAhead(end int) {
	if end > w.intake.mapped && len(w.intake.buf) >= prefaultMin && w.cfg.saves(SavePrefault) {
		w.intake.mapped = prefault.Ahead(w.intake.buf, w.intake.mapped, end)
	}
}

// prefaultMin is the smallest buffer mapAhead maps ahead.
const prefaultMin = prefault.Step

// holdFull holds the full buffer back as pending, with its CRC, until more data shows it is
// not the last part.
func (w *Writer) holdFull() {
	w.intake.pending, w.intake.pendingCRC = w.intake.buf, w.intake.fillCRC
	w.intake.buf, w.intake.fill, w.intake.fillCRC = nil, 0, 0
}

func (w *Writer) checkWritable() error {
	w.mu.Lock()
	closed, err := w.outcome.closed, w.outcome.err
	w.mu.Unlock()
	if err != nil {
		return err // sticky: the first failure, or the caller's Abort
	}
	if closed {
		return w.errs.errorf(sperrors.Permanent, "Write", ErrClosed, "write after Close")
	}
	if err := w.ctx.Err(); err != nil {
		return w.fail(w.errs.canceled("Write", err))
	}
	return nil
}

// account adds n accepted bytes and enforces the declared size and the plan's ceiling.
func (w *Writer) account(n int64) error {
	w.intake.size += n
	if w.cfg.sizeHint >= 0 && w.intake.size > w.cfg.sizeHint {
		return w.fail(w.errs.errorf(sperrors.Permanent, "Write", nil, "source is longer than the declared size %d: it yielded at least %d bytes", w.cfg.sizeHint, w.intake.size))
	}
	if w.plan.Ceiling > 0 && w.intake.size > w.plan.Ceiling {
		return w.fail(w.errs.errorf(sperrors.Compatibility, "Write", nil,
			"object grew past %s, the most %d parts of %s can hold under profile %s; set Options.ExpectedMaxSize or Options.Size",
			bytesize.Format(w.plan.Ceiling), w.cfg.rules.MaxParts, bytesize.Format(w.plan.PartSize), w.cfg.rules.Name))
	}
	return nil
}

// nextBuffer dispatches the held full part (it is not the last: more data came) and takes a
// fresh buffer, waiting for a slot and for memory budget. want is how many bytes are about to
// come, which sizes the first buffer of a stream of unknown size (firstBufferSize).
func (w *Writer) nextBuffer(want int) error {
	if w.intake.pending != nil {
		full := w.intake.pending
		w.intake.pending = nil // dispatch owns it now, even on error
		if err := w.dispatch(partBody{buf: full, crc: w.intake.pendingCRC}, false); err != nil {
			return err
		}
	}
	select {
	case w.intake.slots <- struct{}{}:
	case <-w.ctx.Done():
		return w.fail(w.errs.canceled("Write", w.ctx.Err()))
	}
	size := partBufferSize(w.plan.PartSize, w.cfg.sizeHint, w.intake.size)
	var t0 time.Time
	if w.cfg.span != nil {
		t0 = time.Now()
	}
	buf, fresh, waited, err := w.cfg.budget.getGrowable(w.ctx, int(size), firstBufferSize(size, w.cfg.sizeHint, w.intake.size, want))
	if waited && w.cfg.span != nil {
		w.req.events.emit(Event{Type: EventBudgetWait, Size: size, Elapsed: time.Since(t0), Err: err})
	}
	if err != nil {
		<-w.intake.slots
		return w.fail(w.errs.canceled("Write", err))
	}
	w.intake.buf, w.intake.fill, w.intake.fillCRC = buf, 0, 0
	w.intake.mapped = len(buf) // a reused buffer's pages are mapped already
	if fresh {
		w.intake.mapped = 0
		w.advise(w.intake.buf)
	}
	return nil
}

// bufferGrows reports whether the buffer being filled is the first of a stream of unknown size,
// still smaller than a part (firstBufferSize): full, it grows rather than being held as a part.
func (w *Writer) bufferGrows() bool {
	return w.cfg.sizeHint < 0 && int64(len(w.intake.buf)) < w.plan.PartSize
}

// growBuffer gives the full buffer being filled room for want more bytes (grownSize), within the
// part the budget charged it for, and reports whether it did.
func (w *Writer) growBuffer(want int) bool {
	buf := w.cfg.budget.grow(w.intake.buf, w.intake.fill, grownSize(len(w.intake.buf), want, w.plan.PartSize))
	if len(buf) <= len(w.intake.buf) {
		return false
	}
	w.intake.buf, w.intake.mapped = buf, w.intake.fill // the copy mapped the pages it wrote
	w.advise(w.intake.buf)
	return true
}

// advise asks for huge pages for a fresh part buffer, when the write wants them, unless it is the
// small first buffer of a stream (bufferGrows), which gains nothing from them.
func (w *Writer) advise(buf []byte) {
	if w.cfg.hugePages && !w.bufferGrows() {
		hugepage.Advise(buf)
	}
}

// A stream of unknown size may be one small object (a flush of many) or gigabytes. Its first
// part buffer is charged in full against the memory budget but starts at what its first write
// brings (at least firstBufferMin, small enough for the Go allocator's size classes), and grows
// fourfold as more comes; past growLimit it takes the whole part at once. A small object then
// allocates and clears about its own size, not a whole part, and a large stream copies at most
// about growLimit bytes more than before, once.
const (
	firstBufferMin = 16 << 10
	growLimit      = 1 << 20
)

// firstBufferSize decides how many bytes back a part buffer charged size bytes (partBufferSize)
// when written bytes are in and want more are about to come: for the first buffer of a stream of
// unknown size (sizeHint < 0), what comes (at least firstBufferMin) while that is within
// growLimit; else the whole of size (a declared size's buffers are exact already, and a stream's
// later buffers are whole parts).
func firstBufferSize(size, sizeHint, written int64, want int) int {
	if sizeHint >= 0 || written > 0 {
		return int(size)
	}
	n := int64(max(firstBufferMin, want))
	if n > growLimit {
		return int(size)
	}
	return int(min(n, size))
}

// grownSize decides the new size of a full growing buffer of have bytes that want more are about
// to fill, in a part of partSize: four times as big, or enough for what comes, while that is
// within growLimit; else the whole part.
func grownSize(have, want int, partSize int64) int {
	n := int64(max(4*have, have+want))
	if n > growLimit {
		return int(partSize)
	}
	return int(min(n, partSize))
}

func (w *Writer) release(buf []byte) {
	if buf == nil {
		return
	}
	w.cfg.budget.put(buf)
	<-w.intake.slots
}

// releaseLent releases bufs that were lent to requests through f. When a request that has
// already returned is still reading (bodyFence), they go to the garbage collector instead of
// back to the budget's free list, where the next part would overwrite what is being sent; the
// budget counts them free either way. part is the part they were sent as, 0 for a single PUT.
func (w *Writer) releaseLent(f *bodyFence, part int32, bufs ...[]byte) {
	busy := f != nil && f.close()
	for _, buf := range bufs {
		if buf == nil {
			continue
		}
		if busy {
			w.tally.lentDropped.Add(1)
			w.log.Debug("a returned request still reads this buffer: not reused", zap.Int32("part", part), zap.Int("size", cap(buf)),
				zap.String("upload_id", w.session.upload.current()))
			w.cfg.budget.drop(buf)
			<-w.intake.slots
			continue
		}
		w.release(buf)
	}
}

func (w *Writer) releaseHeld() { w.releaseHeldLent(nil) }

// releaseHeldLent releases the buffers the writer holds, which were lent to requests through f
// (nil: not lent).
func (w *Writer) releaseHeldLent(f *bodyFence) {
	w.releaseLent(f, 0, w.intake.buf, w.intake.pending)
	w.intake.buf, w.intake.pending = nil, nil
}
