package prefault

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fresh maps n bytes of anonymous memory that no one has touched, outside the Go heap (whose
// memory may already be mapped from an earlier use), so residency shows what Ahead did.
func fresh(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	if err := unix.Madvise(b, unix.MADV_NOHUGEPAGE); err != nil {
		t.Logf("MADV_NOHUGEPAGE: %v", err) // a THP fault would map 2 MiB for one page touched
	}
	return b
}

// resident counts the pages of b that are mapped in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	page := unix.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func supported(t *testing.T) {
	t.Helper()
	b := fresh(t, unix.Getpagesize())
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil {
		t.Skipf("this kernel does not populate (MADV_POPULATE_WRITE: %v); Ahead is a no-op here", err)
	}
}

func TestAheadMapsOneStepAtATime(t *testing.T) {
	supported(t)
	page := unix.Getpagesize()
	b := fresh(t, 4*Step+page)
	if n := resident(t, b); n != 0 {
		t.Fatalf("%d pages resident before Ahead", n)
	}
	// What the writer does as a stream fills the buffer: ask for the next read's end.
	mapped := Ahead(b, 0, 1)
	if mapped != Step {
		t.Fatalf("Ahead(0, 1) = %d, want one step (%d)", mapped, Step)
	}
	if got, want := resident(t, b), Step/page; got != want {
		t.Fatalf("%d pages resident after one step, want %d", got, want)
	}
	mapped = Ahead(b, mapped, 2*Step+1)
	if mapped != 3*Step {
		t.Fatalf("Ahead(Step, 2 Step+1) = %d, want %d", mapped, 3*Step)
	}
	if got, want := resident(t, b), 3*Step/page; got != want {
		t.Fatalf("%d pages resident after three steps, want %d", got, want)
	}
	// The last step ends at the buffer's end, not a step past it.
	if mapped = Ahead(b, mapped, len(b)); mapped != len(b) {
		t.Fatalf("Ahead to the end = %d, want %d", mapped, len(b))
	}
	if got, want := resident(t, b), len(b)/page; got != want {
		t.Fatalf("%d pages resident at the end, want %d", got, want)
	}
}

func TestAheadKeepsWhatIsWritten(t *testing.T) {
	supported(t)
	b := fresh(t, 2*Step)
	copy(b, "written before")
	b[Step+7] = 42
	Ahead(b, 0, len(b))
	Ahead(b, 0, len(b)) // again, over mapped pages
	if string(b[:14]) != "written before" || b[Step+7] != 42 {
		t.Fatalf("Ahead changed the buffer's bytes: %q, %d", b[:14], b[Step+7])
	}
}

func TestAheadUnalignedStart(t *testing.T) {
	supported(t)
	page := unix.Getpagesize()
	b := fresh(t, 2*Step)
	// A buffer that starts inside a page: that page faults in as it is written, the rest is
	// mapped, and the hint stays on (madvise's EINVAL for an unaligned start is not "unsupported").
	if got := Ahead(b[100:], 0, 1); got != Step {
		t.Fatalf("Ahead on an unaligned buffer = %d, want %d", got, Step)
	}
	if unsupported.Load() {
		t.Fatal("an unaligned start turned the hint off for the process")
	}
	if got, want := resident(t, b), Step/page; got != want {
		t.Fatalf("%d pages resident, want %d (the step past the first partial page)", got, want)
	}
}

func TestAheadOutOfRange(t *testing.T) {
	b := make([]byte, 64)
	for _, tc := range []struct{ from, to, want int }{
		{0, 0, 0},   // nothing asked
		{10, 5, 10}, // backwards
		{-1, 5, -1}, // before the buffer
		{0, 65, 0},  // past its end
		{0, 64, 64}, // a small buffer is mapped whole
	} {
		if got := Ahead(b, tc.from, tc.to); got != tc.want {
			t.Errorf("Ahead(%d, %d) = %d, want %d", tc.from, tc.to, got, tc.want)
		}
	}
	if got := Ahead(nil, 0, 0); got != 0 {
		t.Errorf("Ahead(nil) = %d", got)
	}
}
