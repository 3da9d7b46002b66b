package writer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// lostPutStore loses the answer of the first PutObject, sent whole (stored first when stored is
// set), and answers every later one 500: the retries of a PUT whose first attempt may have
// landed all fail.
type lostPutStore struct {
	store.Store
	stored bool
	mu     sync.Mutex
	puts   int
}

func (s *lostPutStore) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	s.mu.Lock()
	s.puts++
	first := s.puts == 1
	s.mu.Unlock()
	if !first {
		_, _ = io.Copy(io.Discard, in.Body)
		return nil, &store.ResponseError{Op: "PutObject", StatusCode: 500, Code: "InternalError", Message: "We encountered an internal error. Please try again."}
	}
	if s.stored {
		if _, err := s.Store.PutObject(ctx, in); err != nil {
			return nil, err
		}
	} else {
		_, _ = io.Copy(io.Discard, in.Body)
		store.ReportRequestWritten(ctx)
	}
	return nil, errAnswerLost
}

// A single PUT whose retries fail after an attempt went unanswered is judged by what is at the
// key: this write's object there lands it (with a note); nothing there fails it as before.
func TestLostPutJudgedByTheKey(t *testing.T) {
	data := randomBytes(t, smallSize)
	t.Run("stored", func(t *testing.T) {
		mem := newMem(minioLike)
		st := &lostPutStore{Store: mem, stored: true}
		res, err := writer.Upload(context.Background(), st, unitBucket, "k", bytes.NewReader(data), func(o *writer.Options) { o.Retry = fastPolicy() })
		if err != nil {
			t.Fatalf("Upload: %v; want it landed: the first attempt stored the object", err)
		}
		mustLand(t, mem, "k", data, res, err, res.Verified)
		if !res.VerifiedStrong || !strings.Contains(strings.Join(res.Notes, "\n"), "the HEAD found this write's object") {
			t.Fatalf("verified %s (strong %v), notes %q: want proven by the HEAD, and a note saying so", res.Verified, res.VerifiedStrong, res.Notes)
		}
		if !res.CommitAnswerLost {
			t.Error("CommitAnswerLost false after a PUT sent whole whose answer was lost")
		}
	})
	t.Run("not stored", func(t *testing.T) {
		mem := newMem(minioLike)
		st := &lostPutStore{Store: mem}
		_, err := writer.Upload(context.Background(), st, unitBucket, "k", bytes.NewReader(data), func(o *writer.Options) { o.Retry = fastPolicy() })
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Transient || e.ObjectLeft {
			t.Fatalf("err %v, want Transient with nothing left", err)
		}
		mustBeAbsent(t, mem, "k")
	})
}
