package main

import (
	"os"
	"runtime/debug"

	"github.com/safeput/safeput/multipart"
)

// gcHeadroom is the Go memory (heap, stacks, runtime structures) the GC may let grow beyond the
// part buffers before it collects: about 4 MiB of it is the runtime and the SDK clients, the
// rest room for per-request garbage. At 10 MiB the GC runs 20-40 times per GiB of a stream (a
// few ms of CPU each); at 12 MiB 4-5 times, for 1.5 MiB more RSS; at 8 MiB some 200 times.
// (The rest of RSS is the binary's own pages, mapped from its file.)
const gcHeadroom = 10 << 20

// limitGC sets the GC's soft memory limit to the upload's part-buffer budget (concurrency × the
// part size the plan picks) plus gcHeadroom. At GOGC=100 alone the GC lets the heap reach about
// twice the live part buffers before collecting, so a long stream's small per-request garbage
// would pile up far past the promise. An explicit GOMEMLIMIT wins; a plan error is reported by
// the upload itself.
func (a *app) limitGC(rules multipart.Rules, size, partSize, expectedMax int64) {
	if !a.limitGCToBudget || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	plan, err := rules.Plan(multipart.PlanRequest{Size: size, PartSize: partSize, Concurrency: a.g.concurrency, ExpectedMaxSize: expectedMax})
	if err != nil {
		return
	}
	debug.SetMemoryLimit(int64(a.g.concurrency)*plan.PartSize + gcHeadroom)
}
