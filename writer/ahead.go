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

// sumsAhead holds the sums of the first parts, by the part's offset in the object.
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

// hashAhead prepares the hashing of the first parts of the source (as many as go at once) for
// createUpload to start. They are counted in the Writer's goroutines now, so Close waits for them
// as for the parts whatever happens to the create. It hashes nothing when the write has its
// upload already or has nothing to hash.
func (w *Writer) hashAhead(total, partSize int64) {
	if w.session.upload.current() != "" || (w.caps.local == store.ChecksumNone && !w.caps.md5) || partSize <= 0 {
		return
	}
	a := &sumsAhead{sums: map[int64]*aheadSum{}}
	want := sums{local: w.caps.local, md5: w.caps.md5, ahead: true}
	var passes []func()
	for i := 0; i < w.cfg.concurrency && int64(i)*partSize < total; i++ {
		off := int64(i) * partSize
		n, _ := sectionSpan(off, total, partSize)
		passes = append(passes, w.passAhead(a, int32(i+1), off, n, want))
	}
	w.wg.Add(len(passes))
	a.start = sync.OnceFunc(func() {
		for _, pass := range passes {
			go pass()
		}
	})
	w.intake.ahead = a
}

// passAhead registers part's section [off, off+n) in a and returns its pass, for the caller to
// count in the Writer's goroutines and start.
func (w *Writer) passAhead(a *sumsAhead, part int32, off, n int64, want sums) func() {
	s := &aheadSum{done: make(chan struct{})}
	a.mu.Lock()
	a.sums[off] = s
	a.mu.Unlock()
	return func() {
		defer w.wg.Done()
		defer close(s.done)
		defer w.recoverTo("UploadPart", part)
		rec, err := w.sumSection(part, w.sectionPart(off, n).section, want)
		s.rec, s.ok = rec, err == nil
	}
}

// createSent returns ctx with a hook that starts the passes ahead once the create's request is
// written (the store's request-written signal: see store.ReportRequestWritten); with a store that
// gives none they start when its create returns.
func (w *Writer) createSent(ctx context.Context) context.Context {
	a := w.intake.ahead
	if a == nil {
		return ctx
	}
	return progress.OnWritten(ctx, func(error) { a.start() })
}

// createReturned starts the passes ahead if the create's request did not: they then serve the
// parts as usual, or stop at once after a failed create.
func (w *Writer) createReturned() {
	if w.intake.ahead != nil {
		w.intake.ahead.start()
	}
}

// takeAhead returns the sum hashed ahead for the section at off, waiting for its pass, when
// there is one and it holds what this write now wants (an MD5 too, if the create's refusal of an
// offered checksum made MD5s the proof).
func (w *Writer) takeAhead(section *io.SectionReader) (partDone, bool) {
	a := w.intake.ahead
	if a == nil {
		return partDone{}, false
	}
	_, off, _ := section.Outer()
	off -= w.intake.sectionBase
	a.mu.Lock()
	s := a.sums[off]
	delete(a.sums, off)
	a.mu.Unlock()
	if s == nil {
		return partDone{}, false
	}
	<-s.done
	if !s.ok || (w.caps.md5 && !s.rec.hasMD5) {
		return partDone{}, false
	}
	return s.rec, true
}
