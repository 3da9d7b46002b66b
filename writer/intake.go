package writer

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/hugepage"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/prefault"
	"github.com/safeput/safeput/store"
	"go.uber.org/zap"
)

// intake takes the caller's bytes into pooled part buffers: the part being filled (its CRC kept
// as the bytes land), the full one held back until more data shows it is not the last, and the
// buffers' return to the memory budget with their slots. It owns that state, the bytes taken in
// (size) and the count of parts dispatched (nextPart, which the Writer advances as it dispatches).
// It is the writing goroutine's (op), but for the release of a part's buffer (releaseLent, from
// the part's goroutine once it is done), which touches only the budget, the slots and
// lentDropped. It sends nothing: the Writer dispatches the parts it fills to the part sender
// (parts.go). For a ReaderAt source it holds no buffer and records where the object's bytes are
// (section, sectionBase, sectionInFile; single for an object that goes in one PutObject); the
// slots are the part sender's (partSlots).
type intake struct {
	// op serialises Write, ReadFrom, Close and the buffer release of Abort, which may come from
	// another goroutine: the calls that touch the intake's buffers.
	op sync.Mutex

	buf        []byte // part being filled; nil when none is held
	fill       int
	fillCRC    uint64 // the CRC of buf[:fill], kept as bytes arrive (while they are in cache)
	mapped     int    // buf[:mapped] has its pages mapped (mapAhead); all of a reused buffer
	pending    []byte // a full part held back until more data shows it is not the last
	pendingCRC uint64 // the CRC of pending
	size       int64
	nextPart   int32
	section    io.ReaderAt // set by Upload for a ReaderAt source: parts come from it, no buffers
	// sectionBase is the source's offset where the object starts.
	sectionBase int64
	// sectionInFile: the source is a file (or a section of one), whose bytes the kernel sends:
	// no request reads the caller's memory, so its parts need no fence.
	sectionInFile bool
	// single is the whole object of a ReaderAt source within the single-PUT threshold, set by
	// Upload: its PutObject sends it from the source, with no buffer (putSingle); singleInFile
	// says, as sectionInFile does, that the source is a file and its body needs no fence.
	single       *io.SectionReader
	singleInFile bool
	// lentDropped counts part buffers left to the garbage collector because a request that had
	// returned still read them (releaseLent).
	lentDropped atomic.Int64

	cfg intakeConfig
}

// intakeConfig is what the intake is given (init).
type intakeConfig struct {
	slots     *partSlots // the part sender's: one token per part this write holds
	budget    *Budget
	partSize  int64
	sizeHint  int64                   // the declared size, -1 for none
	local     store.ChecksumAlgorithm // the CRC taken as bytes land ("" for none)
	hugePages bool
	prefault  bool // SavePrefault: map a fresh buffer's pages ahead of the bytes (mapAhead)
	log       *zap.Logger
}

// partSlots bounds the parts a write holds at once: one token per part buffer (taken by the
// intake) or per section of a ReaderAt source in flight. The part sender owns them: a ReaderAt
// source's pacing deepens them before its first part (partSender.startPacing).
type partSlots struct{ ch chan struct{} }

// init gives in what it reads of the write's configuration.
func (in *intake) init(cfg config, partSize int64, local store.ChecksumAlgorithm, slots *partSlots, log *zap.Logger) {
	in.cfg = intakeConfig{
		slots: slots, budget: cfg.budget, partSize: partSize, sizeHint: cfg.sizeHint, local: local,
		hugePages: cfg.hugePages, prefault: cfg.saves(SavePrefault), log: log,
	}
}

// Write copies p into part buffers. It sends nothing until a part is full and more data
// follows, so small writes (a Parquet writer's 4-byte magic) cannot fail on the network.
func (w *Writer) Write(p []byte) (int, error) {
	w.intake.op.Lock()
	defer w.intake.op.Unlock()
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
		} else if w.intake.fill == len(w.intake.buf) && !w.intake.growBuffer(len(p)) {
			// Only a buffer that may grow is kept full (holdFull); one that could not would
			// otherwise take no byte, for ever.
			w.intake.holdFull()
			continue
		}
		w.intake.mapAhead(w.intake.fill + min(len(p), len(w.intake.buf)-w.intake.fill))
		n := copy(w.intake.buf[w.intake.fill:], p)
		w.intake.filled(n)
		written += n
		p = p[n:]
		if err := w.account(int64(n)); err != nil {
			return written, err
		}
		if w.intake.fill == len(w.intake.buf) && !w.intake.bufferGrows() {
			w.intake.holdFull()
		}
	}
	return written, nil
}

// readChunk bounds one Read into a part buffer, so the bytes are still in the CPU's cache when
// their CRC is taken right after.
const readChunk = 256 << 10

// ReadFrom reads r to EOF straight into part buffers (no intermediate copy).
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	w.intake.op.Lock()
	defer w.intake.op.Unlock()
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
		} else if w.intake.fill == len(w.intake.buf) && !w.intake.growBuffer(0) {
			w.intake.holdFull() // as in write
			continue
		}
		room := w.intake.buf[w.intake.fill:min(len(w.intake.buf), w.intake.fill+readChunk)]
		w.intake.mapAhead(w.intake.fill + len(room))
		n, err := r.Read(room)
		if n < 0 || n > len(room) {
			return total, w.fail(sperrors.New(sperrors.Internal, "ReadFrom", "reader returned invalid count %d", n))
		}
		w.intake.filled(n)
		total += int64(n)
		if aerr := w.account(int64(n)); aerr != nil {
			return total, aerr
		}
		if err == nil && w.intake.fill == len(w.intake.buf) {
			// Probe one byte before taking a new buffer (or growing this one): a stream that
			// ends exactly here must not start a multipart upload (or a part) it does not need.
			var probe [1]byte
			m, perr := io.ReadFull(r, probe[:])
			if !w.intake.bufferGrows() {
				w.intake.holdFull()
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
		if w.intake.fill == len(w.intake.buf) && !w.intake.bufferGrows() {
			w.intake.holdFull()
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
func (in *intake) filled(n int) {
	if n > 0 && in.cfg.local != store.ChecksumNone {
		in.fillCRC = integrity.Update(in.cfg.local, in.fillCRC, in.buf[in.fill:in.fill+n])
	}
	in.fill += n
}

// mapAhead has the pages of a fresh buffer up to end mapped before they are written, a step
// ahead at a time, rather than one fault per page as the bytes land (internal/prefault says
// what that saves). A buffer smaller than prefaultMin is left to fault in: the system call
// costs more than its few faults, and the Go heap hands out such buffers mostly from pages
// it has mapped already.
func (in *intake) mapAhead(end int) {
	if end > in.mapped && len(in.buf) >= prefaultMin && in.cfg.prefault {
		in.mapped = prefault.Ahead(in.buf, in.mapped, end)
	}
}

// prefaultMin is the smallest buffer mapAhead maps ahead.
const prefaultMin = prefault.Step

// holdFull holds the full buffer back as pending, with its CRC, until more data shows it is
// not the last part.
func (in *intake) holdFull() {
	in.pending, in.pendingCRC = in.buf, in.fillCRC
	in.buf, in.fill, in.fillCRC = nil, 0, 0
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
	size, waited, took, err := w.intake.takeBuffer(w.ctx, want, w.cfg.span != nil)
	if waited && w.cfg.span != nil {
		w.req.events.emit(Event{Type: EventBudgetWait, Size: size, Elapsed: took, Err: err})
	}
	if err != nil {
		return w.fail(w.errs.canceled("Write", err))
	}
	return nil
}

// takeBuffer takes a fresh buffer to fill, waiting for a slot and then for memory budget, and
// returns the size charged for it, whether it waited for the budget and, when timed, how long
// the budget took. err is ctx's when it ended first; then it holds nothing more.
func (in *intake) takeBuffer(ctx context.Context, want int, timed bool) (size int64, waited bool, took time.Duration, err error) {
	select {
	case in.cfg.slots.ch <- struct{}{}:
	case <-ctx.Done():
		return 0, false, 0, ctx.Err()
	}
	size = partBufferSize(in.cfg.partSize, in.cfg.sizeHint, in.size)
	var t0 time.Time
	if timed {
		t0 = time.Now()
	}
	buf, fresh, waited, err := in.cfg.budget.getGrowable(ctx, int(size), firstBufferSize(size, in.cfg.sizeHint, in.size, want))
	if timed {
		took = time.Since(t0)
	}
	if err != nil {
		<-in.cfg.slots.ch
		return size, waited, took, err
	}
	in.buf, in.fill, in.fillCRC = buf, 0, 0
	in.mapped = len(buf) // a reused buffer's pages are mapped already
	if fresh {
		in.mapped = 0
		in.advise(in.buf)
	}
	return size, waited, took, nil
}

// bufferGrows reports whether the buffer being filled is the first of a stream of unknown size,
// still smaller than a part (firstBufferSize): full, it grows rather than being held as a part.
func (in *intake) bufferGrows() bool {
	return in.cfg.sizeHint < 0 && int64(len(in.buf)) < in.cfg.partSize
}

// growBuffer gives the full buffer being filled room for want more bytes (grownSize), within the
// part the budget charged it for, and reports whether it did.
func (in *intake) growBuffer(want int) bool {
	buf := in.cfg.budget.grow(in.buf, in.fill, grownSize(len(in.buf), want, in.cfg.partSize))
	if len(buf) <= len(in.buf) {
		return false
	}
	in.buf, in.mapped = buf, in.fill // the copy mapped the pages it wrote
	in.advise(in.buf)
	return true
}

// advise asks for huge pages for a fresh part buffer, when the write wants them, unless it is the
// small first buffer of a stream (bufferGrows), which gains nothing from them.
func (in *intake) advise(buf []byte) {
	if in.cfg.hugePages && !in.bufferGrows() {
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

// release gives buf back to the budget, and its slot.
func (in *intake) release(buf []byte) {
	if buf == nil {
		return
	}
	in.cfg.budget.put(buf)
	<-in.cfg.slots.ch
}

// releaseLent releases bufs that were lent to requests through f. When a request that has
// already returned is still reading (bodyFence), they go to the garbage collector instead of
// back to the budget's free list, where the next part would overwrite what is being sent; the
// budget counts them free either way. part is the part they were sent as, 0 for a single PUT, of
// upload uploadID (for the log). A part's goroutine calls it as the part ends, beside the writing
// goroutine.
func (in *intake) releaseLent(f *bodyFence, part int32, uploadID string, bufs ...[]byte) {
	busy := f != nil && f.close()
	for _, buf := range bufs {
		if buf == nil {
			continue
		}
		if busy {
			in.lentDropped.Add(1)
			in.cfg.log.Debug("a returned request still reads this buffer: not reused", zap.Int32("part", part), zap.Int("size", cap(buf)),
				zap.String("upload_id", uploadID))
			in.cfg.budget.drop(buf)
			<-in.cfg.slots.ch
			continue
		}
		in.release(buf)
	}
}

// releaseHeld releases the buffers the writer holds (for a write of upload uploadID, "" for none).
func (in *intake) releaseHeld(uploadID string) { in.releaseHeldLent(nil, uploadID) }

// releaseHeldLent releases the buffers the writer holds, which were lent to requests through f
// (nil: not lent), for a write of upload uploadID.
func (in *intake) releaseHeldLent(f *bodyFence, uploadID string) {
	in.releaseLent(f, 0, uploadID, in.buf, in.pending)
	in.buf, in.pending = nil, nil
}
