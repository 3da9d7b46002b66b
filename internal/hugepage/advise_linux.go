package hugepage

import (
	"syscall"
	"unsafe"
)

const hugePage = 2 << 20

func advise(buf []byte) {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	from, to := hugeRange(start, len(buf))
	if from == to {
		return
	}
	// A hint: without THP in the kernel it fails with EINVAL, and the buffer works as before.
	_ = syscall.Madvise(buf[from:to], syscall.MADV_HUGEPAGE)
}

// hugeRange returns the offsets into an n-byte buffer at address start of the whole, aligned
// huge pages it holds past its first 2 MiB (only those can be backed by one), from == to when
// there are none.
func hugeRange(start uintptr, n int) (from, to uintptr) {
	if n < 2*hugePage {
		return 0, 0
	}
	end := start + uintptr(n)
	first := (start + 2*hugePage - 1) &^ (hugePage - 1)
	last := end &^ (hugePage - 1)
	if last <= first {
		return 0, 0
	}
	return first - start, last - start
}
