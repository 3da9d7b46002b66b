package writer

import (
	"io"
	"sync"
)

// A part's checksum goes in a header before its body, so a part of an io.ReaderAt source is read
// once to hash it before it is sent (prepareBody). Done when the part is dispatched, that pass
// would start only once the CreateMultipartUpload had answered, and hold the first parts back
// for it: over a 40 ms link, 64 MiB from a file in 4 parts of 16 MiB went out 10 ms after the
// create's answer (the relay's trace, `WAN_ONLY=1 WAN_SIZES="64MiB" WAN_RUNS=1
// WAN_IMPLS="safeput-defaults/aws,minio-go" bash scripts/bench.sh -wan-trace`, at 1eddca9), and
// minio-go's 2 ms. So the parts that go first are hashed while the create is on the wire: the
// same work, done earlier. Only a part's first attempt takes its sum from here; a retry hashes
// its bytes again.

// sumsAhead holds the sums of the first parts, by the part's offset in the object.
type sumsAhead struct {
	mu   sync.Mutex
	sums map[int64]*aheadSum
}

type aheadSum struct {
	done chan struct{} // closed once rec is set, or the pass gave up
	rec  partDone
	ok   bool
}

// hashAhead starts hashing the first parts of the source (as many as go at once) in the Writer's
// goroutines, so Close waits for them as for the parts. It hashes nothing when the write has its
// upload already or has nothing to hash.
func (w *Writer) hashAhead(total, partSize int64) {
	if w.currentUploadID() != "" || (w.caps.local == "" && !w.caps.md5) || partSize <= 0 {
		return
	}
	a := &sumsAhead{sums: map[int64]*aheadSum{}}
	want := sums{local: w.caps.local, md5: w.caps.md5, ahead: true}
	for i := 0; i < w.cfg.concurrency && int64(i)*partSize < total; i++ {
		off := int64(i) * partSize
		n, _ := sectionSpan(off, total, partSize)
		s := &aheadSum{done: make(chan struct{})}
		a.sums[off] = s
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer close(s.done)
			defer w.recoverTo("UploadPart", int32(i+1))
			rec, err := w.sumSection(int32(i+1), w.sectionPart(off, n).section, want)
			s.rec, s.ok = rec, err == nil
		}()
	}
	w.ahead = a
}

// takeAhead returns the sum hashed ahead for the section at off, waiting for its pass, when
// there is one and it holds what this write now wants (an MD5 too, if the create's refusal of an
// offered checksum made MD5s the proof).
func (w *Writer) takeAhead(section *io.SectionReader) (partDone, bool) {
	a := w.ahead
	if a == nil {
		return partDone{}, false
	}
	_, off, _ := section.Outer()
	off -= w.sectionBase
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
