package writer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/safeput/safeput/internal/progress"
)

// Parts that go together end together: the first parts of a write start at once, share the link
// evenly, and are written out within a few milliseconds of each other. Then every connection
// waits a round trip for its answer and the link carries nothing. So on a far store (pacing.go),
// when a part has been written out (the store's request-written signal, as store.Store's
// contract declares it) and fewer than handOffBelow parts are left being sent, it gives its slot
// to the next part, whose bytes keep the link busy through the round trip. At most handOffBelow parts wait for answers this way at
// once, so a write has at most that many parts in flight beyond those allowed, however slowly
// the store answers. Buffers are memory, not link: only an io.ReaderAt source's parts hand off.
//
// The dip where the first parts end shows in the relay's trace, the MB it carried toward the
// server per 100 ms, and the write's time against minio-go's in BENCHMARKS.md ("Over a
// wide-area link", 512 MiB): `WAN_ONLY=1 WAN_RUNS=3 WAN_SIZES=512MiB
// WAN_IMPLS=safeput-defaults/aws,minio-go bash scripts/bench.sh -wan-trace`.

// handOffBelow: a part hands off when fewer parts than this are left being sent, and while fewer
// than this wait after handing off. One connection moves at most its window per round trip, which
// fills no link that a far store needs several connections for (over the link above, a 4 MiB
// window per 40 ms round trip is less than the link carries), so one part left sending leaves the
// link short through the round trip; two keep it busy, and the widening (pacing.go) adds
// connections where more are needed. The command above compares thresholds, with this one changed.
const handOffBelow = 2

// handoff is one part's record of whether it gave its slot away before its answer, and of when
// it went if it went in a slot so given (for the widening's epochs, pacing.go).
type handoff struct {
	given  bool      // guarded by handoffs.mu
	handed time.Time // set before the part is dispatched, read after: no lock needed
}

// handoffs counts, for one write, the parts still being sent and those waiting for an answer
// after giving their slot away.
type handoffs struct {
	sending atomic.Int32
	mu      sync.Mutex
	waiting int // parts that gave their slot away and are not yet done
	freed   int // slots given away and not yet taken by a part
}

// bodySent returns ctx with a hook that notes when this request for part n has been written
// out, and a function to call once the request has returned.
func (w *Writer) bodySent(ctx context.Context, n int32, part partBody) (context.Context, func()) {
	if w.intake.pace == nil || part.hand == nil {
		return ctx, func() {}
	}
	h := &w.intake.pace.hand
	h.sending.Add(1)
	var once sync.Once
	ended := func(written bool) {
		once.Do(func() {
			if h.sending.Add(-1) < handOffBelow && written {
				w.handOff(n, part.size(), part.hand)
			}
		})
	}
	ctx = progress.OnWritten(ctx, func(err error) { ended(err == nil) })
	return ctx, func() { ended(false) }
}

// handOff gives part's slot to the next part, once per part, while fewer than handOffBelow
// parts wait for their answers this way.
func (w *Writer) handOff(n int32, size int64, part *handoff) {
	h := &w.intake.pace.hand
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting >= handOffBelow || part.given {
		return
	}
	select {
	case <-w.intake.slots: // this part's own token: there is always one while it is in flight
	default:
		return
	}
	part.given = true
	h.waiting++
	h.freed++
	w.log.Debug("part written out with fewer than two others still being sent: the next part goes before its answer",
		zap.Int32("part", n), zap.Int64("size", size), zap.String("upload_id", w.session.upload.current()), zap.Int("waiting", h.waiting))
}

// newHandoff is the hand-off record of a part that has just taken its slot (dispatchSection), nil
// where parts are not paced: only such a part may hand its slot on, since only it gives one back
// (slotBack); a part re-sent after the layout check holds none. It is marked as going in a
// handed-off slot while any is not yet taken: slots are alike, so it is the next to go after the
// hand-off. Called by the goroutine that set w.intake.pace (sendSections), after it did.
func (w *Writer) newHandoff() *handoff {
	if w.intake.pace == nil {
		return nil
	}
	part := new(handoff)
	h := &w.intake.pace.hand
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.freed > 0 {
		h.freed--
		part.handed = time.Now()
	}
	return part
}

// slotBack gives back the slot a section part holds, unless it gave it away already (handOff).
func (w *Writer) slotBack(part *handoff) {
	if part != nil && w.intake.pace.hand.settle(part) {
		return
	}
	<-w.intake.slots
}

// settle ends part's hand-off record and reports whether it gave its slot away.
func (h *handoffs) settle(part *handoff) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if part.given {
		h.waiting--
	}
	return part.given
}
