package main

import (
	"os"
	"runtime/debug"

	"github.com/safeput/safeput/multipart"
)

// gcHeadroom is the Go memory (heap, stacks, runtime structures) the GC may let grow beyond the
// part buffers before it collects: most of it is the runtime and the SDK clients, the rest room
// for per-request garbage. The GC count falls off a cliff just above what the process itself
// needs: a 1 GiB stdin stream to MinIO at 16 MiB x 4 (GODEBUG=gctrace=1, /usr/bin/time, 2 runs
// each, 2026-12-03) ran 165-197 GCs at 10 MiB (user CPU 0.63-0.66 s, a fifth of the process's
// CPU in the GC), 17-29 at 11 MiB, 8-9 at 12 MiB (user 0.29-0.34 s) for 0.7 MiB more peak RSS,
// and 6-7 at 14 MiB. (The rest of RSS is the binary's own pages, mapped from its file.)
const gcHeadroom = 12 << 20

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
