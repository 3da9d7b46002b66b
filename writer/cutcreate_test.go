package writer_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// lateCreates is a store that is slow to create uploads: its first cuts CreateMultipartUpload
// requests get no answer until the caller stops waiting, and each is carried out late after
// that, as a store does that goes on with a request whose client has hung up.
type lateCreates struct {
	*memstore.Store
	cuts int
	late time.Duration
	mu   sync.Mutex
	wg   sync.WaitGroup
}

func (s *lateCreates) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	s.mu.Lock()
	cut := s.cuts > 0
	s.cuts--
	s.mu.Unlock()
	if !cut {
		return s.Store.CreateMultipartUpload(ctx, in)
	}
	<-ctx.Done()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		time.Sleep(s.late)
		_, _ = s.Store.CreateMultipartUpload(context.Background(), in)
	}()
	return nil, ctx.Err()
}

// A CreateMultipartUpload cut by the stall window that the store carries out a moment later: the
// look for the upload it left waits as long again as the create was waited for, so the upload is
// found and aborted, whether every create was cut (the write fails at once) or only the first
// (the write lands; on a fast store its Close comes sooner than the late create).
func TestCutCreateCarriedOutLate(t *testing.T) {
	const window = 400 * time.Millisecond
	data := make([]byte, 3<<20+5)
	for _, c := range []struct {
		name string
		cuts int
	}{{"every create cut", 1000}, {"the first create cut", 1}} {
		t.Run(c.name, func(t *testing.T) {
			mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 1 << 20}))
			st := &lateCreates{Store: mem, cuts: c.cuts, late: window / 2}
			opts := []func(*writer.Options){func(wo *writer.Options) {
				wo.Profile = "min=1MiB"
				wo.PartSize = 1 << 20
				wo.Retry = fastPolicy(func(o *retry.Options) { o.StallTimeout = window })
				wo.AbortTimeout = 10 * time.Second
			}}
			start := time.Now()
			res, err := writer.Upload(context.Background(), st, "b", "k", bytes.NewReader(data), opts...)
			took := time.Since(start)
			st.wg.Wait() // every late create has run: what is listed now stays
			if left := mem.Uploads("b"); len(left) != 0 {
				t.Errorf("incomplete uploads left: %v (err %v)", left, err)
			}
			if c.cuts > 1 {
				var se *sperrors.Error
				if !errors.As(err, &se) || se.Kind != sperrors.Transient || se.AbortFailed {
					t.Fatalf("err = %v; want Transient (stalled creates) with nothing left unaborted", err)
				}
				// 4 windows, then one more before the look: within half the clean-up bound.
				if took > 4*window+window+5*time.Second {
					t.Errorf("took %v", took)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := mem.Object("b", "k"); !bytes.Equal(got, data) || len(res.LeftBehind) != 0 || res.MaybeLeftBehind {
				t.Fatalf("landed %d bytes, LeftBehind %v, maybe %v; want the source, nothing named", len(got), res.LeftBehind, res.MaybeLeftBehind)
			}
		})
	}
}
