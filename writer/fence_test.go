package writer_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// lateReader stands in for net/http after RoundTrip has returned while its writing goroutine
// still sends the body (a server that answered before reading all of it): UploadPart of part 1
// stores the part, leaves a goroutine in the middle of WriteTo on the body, and returns.
type lateReader struct {
	store.Store
	once    sync.Once
	started chan struct{} // the late goroutine holds the body's bytes
	finish  chan struct{} // let it copy them
	done    chan struct{}
	saw     []byte // what the late goroutine read, once done is closed
	lateErr error  // a Read of the body after the part was done
}

func (s *lateReader) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	data, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	first := false
	s.once.Do(func() { first = true })
	if first {
		body := in.Body
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		go func() {
			defer close(s.done)
			_, _ = body.(io.WriterTo).WriteTo(writerFunc(func(p []byte) (int, error) {
				close(s.started)
				<-s.finish
				s.saw = append([]byte(nil), p...)
				return len(p), nil
			}))
			_, s.lateErr = body.Read(make([]byte, 1))
		}()
		<-s.started
	}
	in.Body = bytes.NewReader(data)
	return s.Store.UploadPart(ctx, in)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A part buffer a returned request still reads is not reused: the late reader sees part 1's
// bytes, not a later part's written over them, and cannot read again once the part is done.
// Under -race, reusing the buffer is also a data race between the late read and the next fill.
func TestLateBodyReadKeepsItsBuffer(t *testing.T) {
	mem := memstore.New()
	mem.CreateBucket("b")
	st := &lateReader{Store: mem, started: make(chan struct{}), finish: make(chan struct{}), done: make(chan struct{})}
	core, logs := observer.New(zap.DebugLevel)
	w, err := writer.New(context.Background(), st, "b", "k", func(o *writer.Options) {
		o.Profile = "minio"
		o.PartSize = part
		o.Concurrency = 1
		o.Retry = fastPolicy()
		o.Logger = zap.New(core)
	})
	if err != nil {
		t.Fatal(err)
	}
	data := s3test.RandomBytes(4*part + 1)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	close(st.finish)
	<-st.done
	if !bytes.Equal(st.saw, data[:part]) {
		t.Errorf("the late reader of part 1 saw other bytes than part 1's: its buffer was reused while it read")
	}
	if st.lateErr == nil {
		t.Error("a read of part 1's body after the part was done succeeded")
	}
	if n := writer.LentDropped(w); n != 1 {
		t.Errorf("%d buffers left to the garbage collector, want 1 (part 1's)", n)
	}
	dropped := logs.FilterMessageSnippet("not reused").All()
	if len(dropped) != 1 {
		t.Fatalf("%d log lines about a buffer not reused, want 1", len(dropped))
	}
	if f := dropped[0].ContextMap(); f["part"] != int32(1) || f["bucket"] != "b" || f["key"] != "k" || f["upload_id"] == "" || f["size"] == nil {
		t.Errorf("the dropped buffer's log line carries %v, want part 1, bucket, key, size and upload id", f)
	}
	if got, ok := mem.Object("b", "k"); !ok || !bytes.Equal(got, data) {
		t.Fatalf("stored object differs from what was written (found %v)", ok)
	}
}

// gatedSource is an in-memory ReaderAt source whose next ReadAt, once armed, waits for open.
type gatedSource struct {
	*bytes.Reader
	armed    atomic.Bool
	entered  chan struct{}
	open     chan struct{}
	lateDone atomic.Bool // the armed ReadAt has returned
}

func (s *gatedSource) ReadAt(p []byte, off int64) (int, error) {
	if s.armed.CompareAndSwap(true, false) {
		close(s.entered)
		<-s.open
		defer s.lateDone.Store(true)
	}
	return s.Reader.ReadAt(p, off)
}

// lateRead leaves a read of a request's body under way in the caller's source when the request
// returns, as net/http's writing goroutine may: the first body it takes is read whole, then a
// goroutine left behind reads it again from its start, held at the gated source.
type lateRead struct {
	src  *gatedSource
	once sync.Once
	body io.Reader
}

// take reads body for the store and returns its bytes; the first time, it leaves the late read.
func (l *lateRead) take(body io.ReadSeeker) (io.ReadSeeker, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	l.once.Do(func() {
		if _, err = body.Seek(0, io.SeekStart); err != nil {
			return
		}
		l.body = body
		l.src.armed.Store(true)
		go func() { _, _ = body.Read(make([]byte, 1000)) }()
		<-l.src.entered
	})
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(data), nil
}

// lateSectionReader leaves a read of part 1's body under way when UploadPart returns.
type lateSectionReader struct {
	store.Store
	lateRead
}

func (s *lateSectionReader) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	body, err := s.take(in.Body)
	if err != nil {
		return nil, err
	}
	in.Body = body
	return s.Store.UploadPart(ctx, in)
}

// Upload of a caller's in-memory ReaderAt does not return while a returned request still reads
// it (the caller may reuse that memory at once), and no read of it starts afterwards.
func TestLateSourceReadEndsBeforeUpload(t *testing.T) {
	mem := memstore.New()
	mem.CreateBucket("b")
	data := s3test.RandomBytes(part + 1)
	src := &gatedSource{Reader: bytes.NewReader(data), entered: make(chan struct{}), open: make(chan struct{})}
	st := &lateSectionReader{Store: mem, lateRead: lateRead{src: src}}
	go func() {
		<-src.entered
		time.Sleep(2 * time.Second) // longer than the rest of the upload takes
		close(src.open)
	}()
	_, err := writer.Upload(context.Background(), st, "b", "k", src, minioParts(1))
	if err != nil {
		t.Fatal(err)
	}
	if !src.lateDone.Load() {
		t.Error("Upload returned while a request still read the caller's source")
	}
	if _, err := st.body.Read(make([]byte, 1)); err == nil {
		t.Error("a read of part 1's body after Upload returned succeeded")
	}
	if got, ok := mem.Object("b", "k"); !ok || !bytes.Equal(got, data) {
		t.Fatalf("stored object differs from what was written (found %v)", ok)
	}
}
