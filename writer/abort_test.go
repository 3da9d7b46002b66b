package writer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
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

// reappearingStore plays Versity's posix backend when a part request it has taken in full is
// cut before its answer and the write aborts: the abort is taken and ListParts finds the upload
// gone, but the part, still being finished, makes the upload again a moment later. Part 2 is
// taken in full and never answered; part 1 is refused once part 2 is in.
type reappearingStore struct {
	store.Store
	partTaken chan struct{}
	mu        sync.Mutex
	aborts    int
	goneUntil time.Time
	// noListParts answers ListParts 405, as s3rver does: no abort can be confirmed.
	noListParts bool
}

func (s *reappearingStore) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	switch in.PartNumber {
	case 2:
		_, _ = io.Copy(io.Discard, in.Body)
		store.ReportRequestWritten(ctx)
		close(s.partTaken)
		<-ctx.Done()
		return nil, ctx.Err()
	case 1:
		select {
		case <-s.partTaken:
		case <-time.After(10 * time.Second):
		}
		return nil, &store.ResponseError{Op: "UploadPart", StatusCode: 403, Code: "AccessDenied", Message: "Access Denied"}
	}
	return s.Store.UploadPart(ctx, in)
}

func (s *reappearingStore) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborts++
	if s.aborts == 1 {
		s.goneUntil = time.Now().Add(200 * time.Millisecond) // then part 2 makes it again
		return nil
	}
	return s.Store.AbortMultipartUpload(ctx, in)
}

func (s *reappearingStore) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	if s.noListParts {
		return nil, &store.ResponseError{Op: "ListParts", StatusCode: 405, Code: "MethodNotAllowed", Message: "The specified method is not allowed against this resource."}
	}
	s.mu.Lock()
	gone := time.Now().Before(s.goneUntil)
	s.mu.Unlock()
	if gone {
		return nil, &store.ResponseError{Op: "ListParts", StatusCode: 404, Code: "NoSuchUpload", Message: "The specified upload does not exist."}
	}
	return s.Store.ListParts(ctx, in)
}

// A failed write whose part request was taken in full but cut before its answer looks for its
// aborted upload once more, and aborts it again when the late part made it anew: nothing is left.
// On a store that cannot list parts (the flake of TestWireLacksOptionalOperations on Versity,
// whose posix backend makes an aborted upload again for a late part) it aborts again unasked.
func TestAbortLooksAgainAfterUnansweredPart(t *testing.T) {
	for _, noListParts := range []bool{false, true} {
		t.Run(fmt.Sprintf("no ListParts %v", noListParts), func(t *testing.T) {
			mem := memstore.New()
			mem.CreateBucket("b")
			st := &reappearingStore{Store: mem, partTaken: make(chan struct{}), noListParts: noListParts}
			w, err := writer.New(context.Background(), st, "b", "k", minioParts(2))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.Write(s3test.RandomBytes(2*part + 1))
			err = w.Close()
			var se *sperrors.Error
			if !errors.As(err, &se) || se.Kind != sperrors.Permanent {
				t.Fatalf("Close: %v, want the part's AccessDenied (Permanent)", err)
			}
			if ups := mem.Uploads("b"); len(ups) != 0 {
				t.Errorf("the upload the late part made again was left: %+v (%d aborts)", ups, st.aborts)
			}
			if st.aborts != 2 {
				t.Errorf("%d aborts, want 2 (the first, then again once the upload was back)", st.aborts)
			}
			if noListParts && !strings.Contains(err.Error(), "not confirmable") {
				t.Errorf("error %v does not say the abort was not confirmable", err)
			}
		})
	}
}

// minioParts: the minio profile's rules with the tests' part size, conc parts at once, and the
// fast retry policy.
func minioParts(conc int) func(*writer.Options) {
	return func(o *writer.Options) {
		o.Profile = "minio"
		o.PartSize = part
		o.Concurrency = conc
		o.Retry = fastPolicy()
	}
}
