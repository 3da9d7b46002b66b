package writer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

// createWatch signals the first CreateMultipartUpload of the write it passes on, and counts them
// (the checksum probe's, in an upload of its own, aside).
type createWatch struct {
	store.Store
	once    sync.Once
	created chan struct{}
	mu      sync.Mutex
	creates int
}

func (c *createWatch) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if ctx.Value(writer.SaveProbe) == true {
		return c.Store.CreateMultipartUpload(ctx, in)
	}
	c.mu.Lock()
	c.creates++
	c.mu.Unlock()
	out, err := c.Store.CreateMultipartUpload(ctx, in)
	c.once.Do(func() { close(c.created) })
	return out, err
}

func (c *createWatch) Unwrap() store.Store { return c.Store }

func (c *createWatch) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creates
}

// TestCreatesAtStart: a stream whose declared size is over the single-PUT threshold creates its
// upload as the write begins, before a byte is written (its round trip overlaps the filling of
// the first part), once, and lands verified; Abort before any byte aborts what it created; a
// declared size within the threshold, or none, creates nothing before a part is full.
func TestCreatesAtStart(t *testing.T) {
	ctx := context.Background()
	opts := func(size int64) func(*writer.Options) {
		return func(o *writer.Options) { o.PartSize = 5 * mib; o.Size = size; o.Retry = fastPolicy() }
	}
	t.Run("declared over the threshold", func(t *testing.T) {
		mem := newMem(memstore.Rules{})
		st := &createWatch{Store: mem, created: make(chan struct{})}
		data := randomBytes(t, 2*5*mib+100)
		w, err := writer.New(ctx, st, unitBucket, "k", opts(int64(len(data))))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-st.created: // before any Write
		case <-time.After(10 * time.Second):
			t.Fatal("no CreateMultipartUpload before the first Write")
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		err = w.Close()
		mustLand(t, mem, "k", data, w.Result(), err, verify.MethodCRC32C)
		if st.count() != 1 {
			t.Fatalf("%d creates, want 1", st.count())
		}
	})
	t.Run("aborted before a byte", func(t *testing.T) {
		mem := newMem(memstore.Rules{})
		st := &createWatch{Store: mem, created: make(chan struct{})}
		w, err := writer.New(ctx, st, unitBucket, "k", opts(3*5*mib))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-st.created:
		case <-time.After(10 * time.Second):
			t.Fatal("no CreateMultipartUpload before the first Write")
		}
		if err := w.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		if ups := mem.Uploads(unitBucket); len(ups) != 0 {
			t.Fatalf("incomplete uploads left: %+v", ups)
		}
	})
	t.Run("a refused create fails the write, classified", func(t *testing.T) {
		mem := newMem(memstore.Rules{})
		st := faulty.New(mem, faulty.Always(faulty.OpCreateMultipartUpload, faulty.Forbidden()))
		w, err := writer.New(ctx, st, unitBucket, "k", opts(3*5*mib))
		if err != nil {
			t.Fatal(err)
		}
		_, werr := w.Write(randomBytes(t, 3*5*mib))
		cerr := w.Close()
		if !errors.Is(cerr, sperrors.Permanent) || (werr != nil && !errors.Is(werr, sperrors.Permanent)) {
			t.Fatalf("Write: %v; Close: %v; want Permanent", werr, cerr)
		}
		mustBeAbsent(t, mem, "k")
	})
	for _, c := range []struct {
		name string
		size int64
	}{{"declared within the threshold", 5 * mib}, {"no declared size", -1}} {
		t.Run(c.name, func(t *testing.T) {
			mem := newMem(memstore.Rules{})
			st := &createWatch{Store: mem, created: make(chan struct{})}
			w, err := writer.New(ctx, st, unitBucket, "k", opts(c.size))
			if err != nil {
				t.Fatal(err)
			}
			data := randomBytes(t, 5*mib)
			if _, err := w.Write(data[:mib]); err != nil { // less than a part: nothing is due yet
				t.Fatal(err)
			}
			if st.count() != 0 {
				t.Fatalf("%d creates before a part was full", st.count())
			}
			if _, err := w.Write(data[mib:]); err != nil {
				t.Fatal(err)
			}
			err = w.Close()
			mustLand(t, mem, "k", data, w.Result(), err, verify.MethodETagMD5) // the PUT's answer
			if st.count() != 0 {
				t.Fatalf("%d creates for an object of one PutObject", st.count())
			}
		})
	}
}
