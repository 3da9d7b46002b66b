package writer_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/storetest/memstore"
	"github.com/safeput/safeput/store/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// lingeringStore accepts the first `ignore` aborts without aborting, as a store does when a part
// request it was still finishing re-creates the upload after the abort landed.
type lingeringStore struct {
	store.Store
	mu             sync.Mutex
	ignore, aborts int
	listParts      int
}

func (s *lingeringStore) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	s.mu.Lock()
	s.aborts++
	skip := s.aborts <= s.ignore
	s.mu.Unlock()
	if skip {
		return nil
	}
	return s.Store.AbortMultipartUpload(ctx, in)
}

func (s *lingeringStore) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	s.mu.Lock()
	s.listParts++
	s.mu.Unlock()
	return s.Store.ListParts(ctx, in)
}

// abortWithParts writes two parts through st and aborts the writer.
func abortWithParts(t *testing.T, st store.Store) error {
	t.Helper()
	w, err := writer.New(context.Background(), st, "b", "k", func(o *writer.Options) { o.Profile = "minio"; o.PartSize = part; o.Retry = fastPolicy() })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(s3test.RandomBytes(2*part + 1)); err != nil {
		t.Fatal(err)
	}
	return w.Abort(context.Background())
}

// An abort counts as done only when ListParts no longer finds the upload: an upload that is
// still listed is aborted again until the store says it is gone.
func TestAbortRepeatedUntilGone(t *testing.T) {
	mem := memstore.New()
	mem.CreateBucket("b")
	st := &lingeringStore{Store: mem, ignore: 2}
	if err := abortWithParts(t, st); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if st.aborts != 3 || st.listParts < 3 {
		t.Errorf("%d aborts and %d ListParts checks, want 3 aborts (2 ignored), each confirmed", st.aborts, st.listParts)
	}
	ups, err := mem.ListMultipartUploads(context.Background(), &store.ListMultipartUploadsInput{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Errorf("uploads left after a confirmed abort: %+v", ups.Uploads)
	}
}

// An upload that never goes away ends the abort after the retry policy's attempts, reported as
// an abort failure naming the upload: bounded, never a hang.
func TestAbortThatNeverTakesIsReported(t *testing.T) {
	mem := memstore.New()
	mem.CreateBucket("b")
	st := &lingeringStore{Store: mem, ignore: 1 << 30}
	err := abortWithParts(t, st)
	var se *sperrors.Error
	if !errors.As(err, &se) || !se.AbortFailed || se.UploadID == "" {
		t.Fatalf("Abort of an upload that stays listed: %v, want an abort failure naming the upload", err)
	}
	if st.aborts != 4 { // fastPolicy's attempt limit
		t.Errorf("%d aborts, want 4 (the policy's attempt limit)", st.aborts)
	}
}
