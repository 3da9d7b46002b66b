// Package prefault maps a fresh part buffer's pages just before they are filled, in one system
// call per step instead of one page fault per 4 KiB page. A fault is dear on a virtual machine,
// and paid by every process that streams its first write; BenchmarkFreshBuffers fills 4 × 16 MiB
// of fresh buffers page by page and mapped ahead in 2 MiB steps, to compare the two on a machine
// (`go test -run '^$' -bench FreshBuffers ./internal/prefault/`). Unlike huge-page advice
// (internal/hugepage) it changes nothing about the memory the Go runtime later reuses: it only
// maps, sooner, pages that are about to be written anyway.
package prefault

// Step is how far ahead of the fill a buffer is mapped: at most this much of a buffer that a
// stream leaves unfilled is mapped for nothing (one huge page, so a huge-page-backed range is
// mapped whole).
const Step = 2 << 20

// Ahead maps buf[from:to] for writing, in Step steps starting at from, and returns the end of
// what it mapped: the end of the step that holds to (at most len(buf)), or from when there was
// nothing to do. A hint: where the kernel cannot do it (before Linux 5.14, other systems) the
// pages fault in as they are written, as without it.
func Ahead(buf []byte, from, to int) int {
	if from >= to || from < 0 || to > len(buf) {
		return from
	}
	for from < to {
		next := min(from+Step, len(buf))
		populate(buf[from:next])
		from = next
	}
	return from
}
