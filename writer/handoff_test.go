package writer_test

import (
	"bytes"
	"context"
	"io"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// answerHolder is a far store whose first parts are all written out together and then wait for
// their answers: its create takes a far store's round trip (so parts in flight may widen), each
// part's request reports its body written (the WroteRequest of a net/http transport), and the
// answers to parts 1..first are held until a later part arrives, or for hold. A later part waits
// (at most hold) until parts 1..first have all arrived: on a loaded machine a first part's
// goroutine may reach the store only after the part its neighbour handed off to, which would
// then find no answer held. It records the most parts in flight at once.
type answerHolder struct {
	store.Store
	first        int32
	hold         time.Duration
	laterArrived chan struct{}
	once         sync.Once
	firstIn      atomic.Int32  // parts 1..first that have arrived
	firstAllIn   chan struct{} // closed when they all have
	firstOnce    sync.Once
	heldTillThen atomic.Bool // a held answer was released by a later part, not by the time-out
	inFlight     atomic.Int32
	maxInFlight  atomic.Int32
}

func newAnswerHolder(st store.Store, first int32, hold time.Duration) *answerHolder {
	return &answerHolder{Store: st, first: first, hold: hold, laterArrived: make(chan struct{}), firstAllIn: make(chan struct{})}
}

func (s *answerHolder) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	time.Sleep(30 * time.Millisecond) // beyond farStore (20 ms): the write may widen
	return s.Store.CreateMultipartUpload(ctx, in)
}

func (s *answerHolder) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	if ctx.Value(writer.SaveProbe) == true {
		return s.Store.UploadPart(ctx, in) // the checksum probe's, in its own upload: not the write's parts
	}
	if in.PartNumber > s.first {
		select {
		case <-s.firstAllIn:
		case <-time.After(s.hold):
		}
	} else if s.firstIn.Add(1) == s.first {
		s.firstOnce.Do(func() { close(s.firstAllIn) })
	}
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.maxInFlight.Load(); n > m && !s.maxInFlight.CompareAndSwap(m, n); m = s.maxInFlight.Load() {
	}
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteRequest != nil {
		tr.WroteRequest(httptrace.WroteRequestInfo{})
	}
	cp := *in
	cp.Body = bytes.NewReader(body)
	out, err := s.Store.UploadPart(ctx, &cp)
	if in.PartNumber > s.first {
		s.once.Do(func() { close(s.laterArrived) })
		return out, err
	}
	select {
	case <-s.laterArrived:
		s.heldTillThen.Store(true)
	case <-time.After(s.hold):
	}
	return out, err
}

// TestNextPartGoesWhileAnswersAreAwaited: on a far store, when the parts of an io.ReaderAt source
// that went together have all been written out and wait for their answers, the next parts go
// then, not after the answers (handoff.go): the link is not left idle for the round trip. At
// most two parts beyond Concurrency are in flight, and the object lands as written. A stream's parts
// are buffers, bounded by memory: they do not hand off.
func TestNextPartGoesWhileAnswersAreAwaited(t *testing.T) {
	const conc = 3
	data := randomBytes(t, 8*5*mib+99)
	opts := func(o *writer.Options) {
		o.PartSize, o.Concurrency, o.Retry = 5*mib, conc, fastPolicy()
	}
	for _, c := range []struct {
		name    string
		src     func() io.Reader
		handOff bool
	}{
		{"file-like source hands off", func() io.Reader { return bytes.NewReader(data) }, true},
		{"stream waits for answers", func() io.Reader { return struct{ io.Reader }{bytes.NewReader(data)} }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			hold := 10 * time.Second // bounded: without a hand-off the test ends, failing, after it
			if !c.handOff {
				hold = 300 * time.Millisecond
			}
			mem := newMem(minioLike)
			st := newAnswerHolder(mem, conc, hold)
			res, err := newUploader(t, st).Upload(context.Background(), unitBucket, "k", c.src(), opts)
			if err != nil {
				t.Fatalf("write failed: %v", err)
			}
			if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, data) || !res.VerifiedStrong {
				t.Fatalf("landed %v, verified %s: want the bytes written, proven", ok, res.Verified)
			}
			m := st.maxInFlight.Load()
			if got := m > conc; got != c.handOff {
				t.Fatalf("%d parts in flight at most: more than the %d allowed while answers were awaited is %v, want %v", m, conc, got, c.handOff)
			}
			if c.handOff && !st.heldTillThen.Load() {
				t.Fatal("the first parts' answers were released by the time-out, not by a later part")
			}
			if m > conc+2 {
				t.Fatalf("%d parts in flight at once, want at most %d: two beyond Concurrency", m, conc+2)
			}
		})
	}
}

// slowCreateWritten is a far store whose create reports its request written (so the first parts
// are hashed ahead, ahead.go) and answers after a far store's round trip without waiting for
// them: the passes ahead run on while the write starts pacing its parts.
type slowCreateWritten struct{ store.Store }

func (s slowCreateWritten) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteRequest != nil {
		tr.WroteRequest(httptrace.WroteRequestInfo{})
	}
	time.Sleep(30 * time.Millisecond)
	return s.Store.CreateMultipartUpload(ctx, in)
}

// TestPacedWriteWithPartsHashedAhead: on a far store, the passes that hash the first parts while
// the create is on the wire overlap the start of pacing; under -race this failed when a section's
// hand-off record was decided from the pacing state they raced with. The object lands as written.
func TestPacedWriteWithPartsHashedAhead(t *testing.T) {
	data := randomBytes(t, 6*5*mib+7)
	mem := newMem(minioLike)
	res, err := writer.Upload(context.Background(), slowCreateWritten{mem}, unitBucket, "k", bytes.NewReader(data),
		func(o *writer.Options) { o.PartSize, o.Concurrency, o.Retry = 5*mib, 4, fastPolicy() })
	if err != nil {
		t.Fatalf("write failed: %v", err)
	}
	if got, ok := mem.Object(unitBucket, "k"); !ok || !bytes.Equal(got, data) || !res.VerifiedStrong {
		t.Fatalf("landed %v, verified %s: want the bytes written, proven", ok, res.Verified)
	}
}
