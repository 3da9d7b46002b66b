package main

import (
	"os"
	"runtime/debug"

	"github.com/safeput/safeput/multipart"
)

// gcHeadroom is the Go memory (heap, stacks, runtime structures) the GC may let grow beyond the
// part buffers before it collects: most of it is the runtime and the SDK clients, the rest room
// for per-request garbage. The GC count falls off a cliff just above what the process itself
// needs: a few MiB less and a stream collects many times as often, spending much of its CPU in
// the GC; more buys few collections fewer for more peak RSS. To see it, stream a GiB through
// `safeput put -` with GODEBUG=gctrace=1 and GOMEMLIMIT set to the part budget plus each
// headroom tried (an explicit GOMEMLIMIT wins, limitGC); the CLI's peak RSS at this headroom is
// BENCHMARKS.md's "Memory of the CLI on a stream" (`MEMORY_ONLY=1 bash scripts/bench.sh`).
// (The rest of RSS is the binary's own pages, mapped from its file.)
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
