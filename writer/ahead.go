package writer

import (
	"context"
	"io"
	"sync"

	"github.com/safeput/safeput/internal/progress"
	"github.com/safeput/safeput/store"
)

// A part's checksum goes in a header before its body, so a part of an io.ReaderAt source is read
// once to hash it before it is sent (prepareBody). Done when the part is dispatched, that pass
// starts only once the CreateMultipartUpload has answered, and holds the first parts back for it:
// they go out later after the create's answer than those of minio-go, which sends no checksum
// header and so reads nothing first (the relay's trace of a 64 MiB file over the 40 ms link:
// `WAN_ONLY=1 WAN_SIZES="64MiB" WAN_RUNS=1 WAN_IMPLS="safeput-defaults/aws,minio-go" bash
// scripts/bench.sh -wan-trace`). So the parts that go first are hashed while the create is on
// the wire: the same work, done earlier. The passes start once the create's request is written:
// begun before it, they compete with its send for the CPU and delay it. Only a part's first
// attempt takes its sum from here; a retry hashes its bytes again.

// sumsAhead holds the first parts' sums, by the section's offset in the source.
type sumsAhead struct {
	mu   sync.Mutex
	sums map[int64]*aheadSum
	// start begins the passes, once: when the create's request is written (the hashing then
	// competes with nothing on its way out), or when it returned, whichever comes first.
	start func()
}

type aheadSum struct {
	done chan struct{} // closed once rec is set, or the pass gave up
	rec  partDone
	ok   bool
}

// hashAhead prepares the hashing of the first parts of the object in the source ([base,
// base+total) of src: as many as go at once) for the create to start (createSent,
// createReturned). They are counted in goroutines (the write's, which Close waits for) now, so
// Close waits for them as for the parts whatever happens to the create; recoverTo, deferred by
// each pass, makes its panic the write's failure. It hashes nothing when the write has its
// upload already (hasUpload) or has nothing to hash.
func (s *partSender) hashAhead(src io.ReaderAt, base, total, partSize int64, hasUpload bool, goroutines *sync.WaitGroup, recoverTo func(op string, part int32)) {
	if hasUpload || (s.caps.local == store.ChecksumNone && !s.caps.md5) || partSize <= 0 {
		return
	}
	a := &sumsAhead{sums: map[int64]*aheadSum{}}
	want := sums{local: s.caps.local, md5: s.caps.md5, ahead: true}
	var passes []func()
	for i := 0; i < s.cfg.concurrency && int64(i)*partSize < total; i++ {
		off := int64(i) * partSize
		n, _ := sectionSpan(off, total, partSize)
		passes = append(passes, s.passAhead(a, int32(i+1), io.NewSectionReader(src, base+off, n), want, goroutines, recoverTo))
	}
	goroutines.Add(len(passes))
	a.start = sync.OnceFunc(func() {
		for _, pass := range passes {
			go pass()
		}
	})
	s.ahead = a
}

// passAhead registers part's section in a and returns its pass, for the caller to count in
// goroutines and start.
func (s *partSender) passAhead(a *sumsAhead, part int32, section *io.SectionReader, want sums, goroutines *sync.WaitGroup, recoverTo func(op string, part int32)) func() {
	sum := &aheadSum{done: make(chan struct{})}
	_, off, _ := section.Outer()
	a.mu.Lock()
	a.sums[off] = sum
	a.mu.Unlock()
	return func() {
		defer goroutines.Done()
		defer close(sum.done)
		defer recoverTo("UploadPart", part)
		rec, err := s.sumSection(part, section, want)
		sum.rec, sum.ok = rec, err == nil
	}
}

// createSent returns ctx with a hook that starts the passes ahead once the create's request is
// written (the store's request-written signal: see store.ReportRequestWritten); with a store that
// gives none they start when its create returns.
func (s *partSender) createSent(ctx context.Context) context.Context {
	a := s.ahead
	if a == nil {
		return ctx
	}
	return progress.OnWritten(ctx, func(error) { a.start() })
}

// createReturned starts the passes ahead if the create's request did not: they then serve the
// parts as usual, or stop at once after a failed create.
func (s *partSender) createReturned() {
	if s.ahead != nil {
		s.ahead.start()
	}
}

// takeAhead returns the sum hashed ahead for section, waiting for its pass, when there is one
// and it holds what this write now wants (an MD5 too, if the create's refusal of an offered
// checksum made MD5s the proof).
func (s *partSender) takeAhead(section *io.SectionReader) (partDone, bool) {
	a := s.ahead
	if a == nil {
		return partDone{}, false
	}
	_, off, _ := section.Outer()
	a.mu.Lock()
	sum := a.sums[off]
	delete(a.sums, off)
	a.mu.Unlock()
	if sum == nil {
		return partDone{}, false
	}
	<-sum.done
	if !sum.ok || (s.caps.md5 && !sum.rec.hasMD5) {
		return partDone{}, false
	}
	return sum.rec, true
}
