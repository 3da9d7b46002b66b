package writer

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
)

// Budget bounds the part-buffer memory of every writer that shares it. A flush node that runs
// many uploads at once gives them one Budget: a writer waits for room instead of allocating past
// it. Buffers are recycled between the writers that share it, except one that a request which
// has already returned may still be sending from (it is left to the garbage collector).
type Budget struct {
	limit int64

	mu      sync.Mutex
	used    int64
	peak    int64
	waiters []chan struct{}
	free    map[int][][]byte // recycled buffers by capacity
	// short holds the charge of each buffer backed by less memory than it is charged for
	// (getGrowable, grow), keyed by its first byte: a buffer is charged in full from the start,
	// so growing it never waits for room, whatever the budget's other writers hold.
	short map[*byte]int
	// spares, when set (a write's own budget), gives the small buffers a write grows through to
	// the next writes instead of the garbage collector (smallSpares).
	spares *spareBuffers
}

// NewBudget returns a Budget of limit bytes.
func NewBudget(limit int64) (*Budget, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("safeput: memory budget must be positive, got %d", limit)
	}
	return &Budget{limit: limit}, nil // free is made when a buffer first comes back
}

// Limit returns the budget's size in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// InUse returns the bytes currently held by buffers.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak returns the most bytes ever held at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// get returns a buffer of exactly size bytes, waiting until the budget has room or ctx ends;
// fresh says it was just allocated (its pages may not be mapped yet), waited whether it had to wait
// (so only a real wait is timed and reported).
func (b *Budget) get(ctx context.Context, size int) (buf []byte, fresh, waited bool, err error) {
	if buf, fresh, waited, err = b.reserve(ctx, size); err != nil || buf != nil {
		return buf, fresh, waited, err
	}
	return make([]byte, size), true, waited, nil
}

// reserve charges size bytes against the budget, waiting until it has room or ctx ends, and
// returns a recycled buffer of exactly size bytes when one is free (nil when none is).
func (b *Budget) reserve(ctx context.Context, size int) (buf []byte, fresh, waited bool, err error) {
	if int64(size) > b.limit {
		return nil, false, false, fmt.Errorf("safeput: a %d-byte buffer is larger than the whole memory budget %d", size, b.limit)
	}
	for {
		b.mu.Lock()
		if b.used+int64(size) <= b.limit {
			b.used += int64(size)
			b.peak = max(b.peak, b.used)
			if list := b.free[size]; len(list) > 0 {
				buf = list[len(list)-1]
				b.free[size] = list[:len(list)-1]
			}
			b.mu.Unlock()
			return buf, false, waited, nil
		}
		waited = true
		ch := make(chan struct{})
		b.waiters = append(b.waiters, ch)
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			b.mu.Lock()
			for i, w := range b.waiters {
				if w == ch {
					b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
					break
				}
			}
			b.mu.Unlock()
			return nil, false, true, ctx.Err()
		}
	}
}

// put returns a buffer from get. Recycled buffers stay counted against nothing: only buffers in
// use count, and a recycled one is dropped when the free list would hold more than the budget.
func (b *Budget) put(buf []byte) {
	if buf == nil {
		return
	}
	size := cap(buf)
	b.mu.Lock()
	if charge, ok := b.takeShort(buf); ok {
		// Backed by less than its charge: not kept on the free list, which holds full-size
		// buffers; a small one goes to the next writes' (spares) or to the garbage collector.
		b.used -= int64(charge)
		b.unlockAndWake()
		b.spares.give(buf)
		return
	}
	b.used -= int64(size)
	// Keep at most limit bytes of idle buffers, so idle memory is bounded by the budget too.
	idle := int64(0)
	for sz, list := range b.free {
		idle += int64(sz) * int64(len(list))
	}
	if idle+int64(size)+b.used <= b.limit {
		if b.free == nil {
			b.free = map[int][][]byte{}
		}
		b.free[size] = append(b.free[size], buf[:size])
	}
	b.unlockAndWake()
}

// drop returns buf's bytes to the budget without keeping buf for reuse: something may still
// read it.
func (b *Budget) drop(buf []byte) {
	if buf == nil {
		return
	}
	b.mu.Lock()
	charge, ok := b.takeShort(buf)
	if !ok {
		charge = cap(buf)
	}
	b.used -= int64(charge)
	b.unlockAndWake()
}

// getGrowable is get for a buffer that may end up holding far less than size (the first part of
// a stream of unknown size, which may be a small object): size is charged against the budget as
// get does, but unless a recycled buffer of size is free it is backed by only initial bytes, to
// be grown (grow) as the bytes come. A small object then costs memory of its own size, not a
// whole part allocated and cleared for it.
func (b *Budget) getGrowable(ctx context.Context, size, initial int) (buf []byte, fresh, waited bool, err error) {
	if initial >= size {
		return b.get(ctx, size)
	}
	if buf, fresh, waited, err = b.reserve(ctx, size); err != nil || buf != nil {
		return buf, fresh, waited, err
	}
	buf, fresh = b.spares.takeUp(initial, size)
	b.mu.Lock()
	b.setShort(buf, size)
	b.mu.Unlock()
	return buf, fresh, waited, nil
}

// grow returns a buffer of n bytes (at most the charge of old, a buffer from getGrowable) that
// begins with old's first used bytes, and takes old's place in the budget; old goes to the
// garbage collector. It never waits: the charge was taken when old was.
func (b *Budget) grow(old []byte, used, n int) []byte {
	b.mu.Lock()
	charge, ok := b.takeShort(old)
	b.mu.Unlock()
	if !ok {
		return old // not a short buffer: already full size
	}
	n = min(n, charge)
	var buf []byte
	if n < charge {
		buf, _ = b.spares.takeUp(n, charge)
	} else {
		buf = make([]byte, n)
	}
	copy(buf, old[:used])
	if len(buf) < charge {
		b.mu.Lock()
		b.setShort(buf, charge)
		b.mu.Unlock()
	}
	b.spares.give(old) // only the filling goroutine held it, and it holds the copy now
	return buf
}

// setShort records the charge of buf, backed by fewer bytes. The caller holds b.mu.
func (b *Budget) setShort(buf []byte, charge int) {
	if b.short == nil {
		b.short = map[*byte]int{}
	}
	b.short[&buf[:1][0]] = charge
}

// takeShort removes buf from the short buffers and returns its charge, when it is one. The
// caller holds b.mu.
func (b *Budget) takeShort(buf []byte) (int, bool) {
	if cap(buf) == 0 || len(b.short) == 0 {
		return 0, false
	}
	key := &buf[:1][0]
	charge, ok := b.short[key]
	if ok {
		delete(b.short, key)
	}
	return charge, ok
}

// unlockAndWake unlocks b.mu, which the caller holds, and wakes every waiter.
func (b *Budget) unlockAndWake() {
	waiters := b.waiters
	b.waiters = nil
	b.mu.Unlock()
	for _, w := range waiters {
		close(w)
	}
}

// A flush writes many small objects, each through a Writer of its own whose stream has no declared
// size: each grows its first buffer from firstBufferMin (getGrowable, grow), and without spares
// each such buffer is allocated, cleared and collected once per object (BenchmarkSmallWrites'
// writer rows show it as B/op). smallSpares keeps the buffers of those sizes that writes give
// back, for the next writes of the process. Only the powers of two from firstBufferMin to
// growLimit are kept, so a buffer taken from it may be larger than asked (never past its charge);
// it is a sync.Pool per size, so what writes stop using the garbage collector still reclaims.
// A buffer comes back only through put, once no request reads it (a fenced one is dropped), or
// from grow, which copied it: the same rule the free list of a Budget relies on.
var smallSpares spareBuffers

// spareSizes counts the kept sizes, firstBufferMin<<0 .. firstBufferMin<<(spareSizes-1) =
// growLimit; TestSpareBuffersSizes holds the top.
const spareSizes = 7

type spareBuffers struct{ pools [spareSizes]sync.Pool }

// spareFit is the pool of the smallest kept size of at least n bytes, or -1 when n is above them.
func spareFit(n int) int {
	if n > growLimit {
		return -1
	}
	i := bits.Len(uint(max(n, 1)-1)) - bits.TrailingZeros(firstBufferMin)
	return max(i, 0)
}

// spareIndex is the pool for buffers of exactly n bytes, or -1.
func spareIndex(n int) int {
	if i := spareFit(n); i >= 0 && firstBufferMin<<i == n {
		return i
	}
	return -1
}

// takeUp returns a buffer of at least n bytes and less than limit: the smallest kept size that
// fits, reused when one is spare (fresh false) or new; n bytes exactly, new, when no kept size
// fits or s is nil.
func (s *spareBuffers) takeUp(n, limit int) (buf []byte, fresh bool) {
	if i := spareFit(n); s != nil && i >= 0 && firstBufferMin<<i < limit {
		size := firstBufferMin << i
		if p, _ := s.pools[i].Get().(*[]byte); p != nil {
			return (*p)[:size], false
		}
		return make([]byte, size), true
	}
	return make([]byte, n), true
}

// give keeps buf for a later takeUp when it is of a kept size.
func (s *spareBuffers) give(buf []byte) {
	if s == nil {
		return
	}
	if i := spareIndex(cap(buf)); i >= 0 {
		buf = buf[:cap(buf)]
		s.pools[i].Put(&buf)
	}
}
