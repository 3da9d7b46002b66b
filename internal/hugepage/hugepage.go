// Package hugepage asks the kernel to back fresh part buffers with transparent huge pages, for a
// program that owns its process and uploads once per run (the CLI). Each new 4 KiB page costs a
// fault on first touch, and a fault is dear on a virtual machine, so a fresh process's part
// buffers (4 × 16 MiB at the defaults) cost more CPU before a byte is sent than checksumming the
// bytes they will hold. With the hint a 2 MiB page faults once. What those faults cost on a
// machine: `go test -run '^$' -bench FreshBuffers ./internal/prefault/`.
//
// It stays off in the library: a long-running host reuses its buffers through one Uploader, so it
// pays those faults once, and huge-page advice on heap memory the Go runtime later reuses for
// other objects is the host's decision (GODEBUG=disablethp), not a library's.
package hugepage

import (
	"os"
	"strings"
)

// Advise hints that buf, freshly allocated and not yet written, will be filled: the part of it
// past its first 2 MiB is to be backed by huge pages. A stream that ends in a buffer's first
// 2 MiB so touches only the 4 KiB pages it fills, as without the hint. It does nothing when
// GODEBUG=disablethp=1 asks the runtime to keep the heap off huge pages, and on systems without
// transparent huge pages. The caller decides whether to ask (writer.Options.HugePages).
func Advise(buf []byte) {
	if strings.Contains(os.Getenv("GODEBUG"), "disablethp=1") {
		return
	}
	advise(buf)
}
