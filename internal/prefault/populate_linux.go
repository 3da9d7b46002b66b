package prefault

import (
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// unsupported is set once the kernel refuses MADV_POPULATE_WRITE (EINVAL before Linux 5.14), so
// that a later buffer does not ask again.
var unsupported atomic.Bool

var pageSize = uintptr(os.Getpagesize())

func populate(b []byte) {
	if len(b) == 0 || unsupported.Load() {
		return
	}
	// madvise takes a page-aligned start: a range that starts inside a page leaves that page
	// to fault in as it is written.
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if skip := (pageSize - start%pageSize) % pageSize; skip > 0 {
		if skip >= uintptr(len(b)) {
			return
		}
		b = b[skip:]
	}
	// Only an unknown advice (EINVAL) stops the hints; a range the kernel could not map now
	// (ENOMEM, say) faults in as it is written, as without the hint.
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err == unix.EINVAL {
		unsupported.Store(true)
	}
}
