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
