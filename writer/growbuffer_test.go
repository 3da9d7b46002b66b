package writer

import (
	"bytes"
	"context"
	"testing"
)

func TestFirstBufferSize(t *testing.T) {
	const part = 16 << 20
	for _, c := range []struct {
		name              string
		size, hint, wrote int64
		want              int
		expect            int
	}{
		{"unknown size, a small first write: the floor", part, -1, 0, 10, firstBufferMin},
		{"unknown size, a 64 KiB first write: its size", part, -1, 0, 64 << 10, 64 << 10},
		{"unknown size, a first write at the growth limit", part, -1, 0, growLimit, growLimit},
		{"unknown size, a first write past the growth limit: the whole part", part, -1, 0, growLimit + 1, part},
		{"unknown size, a part smaller than the floor: the part", 8 << 10, -1, 0, 10, 8 << 10},
		{"unknown size, a later buffer: the whole part", part, -1, part, 10, part},
		{"declared size: exact already", 5000, 5000, 0, 10, 5000},
	} {
		if got := firstBufferSize(c.size, c.hint, c.wrote, c.want); got != c.expect {
			t.Errorf("%s: firstBufferSize = %d, want %d", c.name, got, c.expect)
		}
	}
}

func TestGrownSize(t *testing.T) {
	const part = 16 << 20
	for _, c := range []struct {
		name             string
		have, want, expo int
	}{
		{"fourfold", 16 << 10, 10, 64 << 10},
		{"enough for what comes", 16 << 10, 200 << 10, 216 << 10},
		{"up to the growth limit", 256 << 10, 0, growLimit},
		{"past it: the whole part", growLimit, 1, part},
		{"a large write past it: the whole part", 64 << 10, 2 << 20, part},
	} {
		if got := grownSize(c.have, c.want, part); got != c.expo {
			t.Errorf("%s: grownSize(%d, %d) = %d, want %d", c.name, c.have, c.want, got, c.expo)
		}
	}
	if got := grownSize(256<<10, 0, 512<<10); got != 512<<10 {
		t.Errorf("grownSize past a small part = %d, want the part", got)
	}
}

// A growing buffer is charged its whole size from the start: growing it keeps the charge and the
// bytes written, and returning it, grown or not, gives the whole charge back; it is not kept for
// reuse, while a full-size buffer is.
func TestBudgetGrowableBuffer(t *testing.T) {
	const size = 1 << 20
	b, err := NewBudget(2 * size)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	buf, fresh, _, err := b.getGrowable(ctx, size, 16<<10)
	if err != nil || !fresh || len(buf) != 16<<10 {
		t.Fatalf("getGrowable: %d bytes, fresh %v, %v", len(buf), fresh, err)
	}
	if n := b.InUse(); n != size {
		t.Fatalf("in use %d after getGrowable, want the whole %d charged", n, size)
	}
	copy(buf, "written")
	buf = b.grow(buf, len("written"), 64<<10)
	if len(buf) != 64<<10 || !bytes.HasPrefix(buf, []byte("written")) || b.InUse() != size {
		t.Fatalf("grow: %d bytes, prefix %q, in use %d", len(buf), buf[:7], b.InUse())
	}
	buf = b.grow(buf, len("written"), 4*size) // capped at the charge
	if len(buf) != size || !bytes.HasPrefix(buf, []byte("written")) {
		t.Fatalf("grow to the charge: %d bytes", len(buf))
	}
	if again := b.grow(buf, 0, 2*size); len(again) != size {
		t.Fatalf("a full-size buffer grew to %d", len(again))
	}
	b.put(buf) // grown to its charge: an ordinary buffer, kept for reuse
	if n := b.InUse(); n != 0 {
		t.Fatalf("in use %d after put", n)
	}
	reused, fresh, _, _ := b.getGrowable(ctx, size, 16<<10)
	if fresh || len(reused) != size {
		t.Fatalf("the full-size buffer put back was not reused: %d bytes, fresh %v", len(reused), fresh)
	}
	small, _, _, _ := b.getGrowable(ctx, size, 16<<10)
	if n := b.InUse(); n != 2*size {
		t.Fatalf("in use %d with two charged buffers, want %d", n, 2*size)
	}
	b.put(small)
	b.drop(reused)
	if n := b.InUse(); n != 0 {
		t.Fatalf("in use %d after put and drop", n)
	}
	if l := b.free[16<<10]; len(l) != 0 {
		t.Errorf("a short buffer was kept for reuse")
	}
}

// A write's own budget takes the small buffers a stream grows through from the spares, in the
// kept sizes (powers of two from firstBufferMin to growLimit, never its charge or more), and gives
// them back there on put and when it grows past them; other sizes come and go as before.
func TestSpareBuffersSizes(t *testing.T) {
	if firstBufferMin<<(spareSizes-1) != growLimit {
		t.Fatalf("the kept sizes end at %d bytes, want growLimit (%d)", firstBufferMin<<(spareSizes-1), growLimit)
	}
	for n := range growLimit + 2 { // spareFit against its definition
		want := -1
		for i := range spareSizes {
			if firstBufferMin<<i >= n {
				want = i
				break
			}
		}
		if got := spareFit(n); got != want {
			t.Fatalf("spareFit(%d) = %d, want %d", n, got, want)
		}
	}
	var s spareBuffers
	for _, c := range []struct{ n, limit, want int }{
		{10, 16 << 20, firstBufferMin},
		{firstBufferMin, 16 << 20, firstBufferMin},
		{firstBufferMin + 1, 16 << 20, 2 * firstBufferMin},
		{300 << 10, 16 << 20, 512 << 10},
		{growLimit, 16 << 20, growLimit},
		{growLimit + 1, 16 << 20, growLimit + 1}, // no kept size fits: exactly n
		{100 << 10, 128 << 10, 100 << 10},        // a kept size would reach the charge: exactly n
	} {
		buf, _ := s.takeUp(c.n, c.limit)
		if len(buf) != c.want || cap(buf) != c.want {
			t.Errorf("takeUp(%d, %d): %d bytes (cap %d), want %d", c.n, c.limit, len(buf), cap(buf), c.want)
		}
	}
	var none *spareBuffers
	if buf, fresh := none.takeUp(300<<10, 16<<20); len(buf) != 300<<10 || !fresh {
		t.Errorf("nil spares: %d bytes, fresh %v; want exactly what was asked, new", len(buf), fresh)
	}
	none.give(make([]byte, firstBufferMin)) // nothing to keep it in: no panic
	s.give(make([]byte, 100<<10))           // not a kept size: dropped
	if p, _ := s.pools[spareIndex(128<<10)].Get().(*[]byte); p != nil {
		t.Errorf("a 100 KiB buffer was kept as a 128 KiB one")
	}

	const size = 16 << 20
	b, err := NewBudget(size)
	if err != nil {
		t.Fatal(err)
	}
	b.spares = &spareBuffers{}
	buf, _, _, err := b.getGrowable(context.Background(), size, 20<<10)
	if err != nil || len(buf) != 32<<10 || b.InUse() != size {
		t.Fatalf("getGrowable: %d bytes, in use %d, %v; want 32 KiB charged %d", len(buf), b.InUse(), err, size)
	}
	copy(buf, "written")
	grown := b.grow(buf, len("written"), 40<<10)
	if len(grown) != 64<<10 || !bytes.HasPrefix(grown, []byte("written")) || b.InUse() != size {
		t.Fatalf("grow: %d bytes, in use %d; want 64 KiB starting with the bytes written", len(grown), b.InUse())
	}
	b.put(grown)
	if n := b.InUse(); n != 0 {
		t.Fatalf("in use %d after put", n)
	}
	if l := b.free[64<<10]; len(l) != 0 {
		t.Errorf("a small buffer went to the budget's free list, not to the spares")
	}
}
