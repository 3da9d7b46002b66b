package writer

import (
	"context"
	stderrors "errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
)

// requester sends one store request under the write's retry policy. Every step sends through
// it, so retries, stall cuts, their events and their counting are the same for all. It owns
// nothing of the write but the policy it applies; what the attempts cost goes to the tally.
type requester struct {
	// ctx is the write's: its end ends every retry.
	ctx         context.Context
	policy      *retry.Policy
	bucket, key string
	upload      openUpload
	facts       *endpointFacts
	events      emitter
	tally       *tally
	log         *zap.Logger
}

// do runs one store operation under the retry policy and counts its attempts.
func (r *requester) do(op string, part int32, fn func(ctx context.Context, attempt int) error) error {
	return r.doSized(op, part, 0, fn)
}

// doSized is do for a request with a body of size bytes (logged with every retry).
func (r *requester) doSized(op string, part int32, size int64, fn func(ctx context.Context, attempt int) error) error {
	uploadID := uploadIDOf(r.upload)
	var last error
	var lastEnd time.Time
	stats, err := r.policy.Do(r.ctx, retry.Op{Name: op, Bucket: r.bucket, Key: r.key, UploadID: uploadID, PartNumber: part, Size: size,
		FirstContact: r.facts.firstContact()},
		func(ctx context.Context, attempt int) error {
			if attempt > 1 {
				// The event says why this attempt is a retry: the previous attempt's failure.
				r.events.emit(Event{Type: EventRetry, UploadID: uploadID, PartNumber: part, Size: size, Attempt: attempt,
					Kind: sperrors.ClassifyContext(r.ctx, last).Kind, Err: last, Elapsed: time.Since(lastEnd)})
			}
			err := fn(ctx, attempt)
			r.facts.storeAnswered(err)
			last = err
			if err != nil {
				lastEnd = time.Now()
				// The policy cut this attempt (its stall window or timeout) while the write goes
				// on: the request saw only "context canceled"; the next attempt's event names
				// the cut, as the final error would (Code errors.CodeStalled).
				if cause := context.Cause(ctx); ctx.Err() != nil && r.ctx.Err() == nil && cause != nil && !stderrors.Is(err, cause) {
					last = fmt.Errorf("attempt cut: %w: %w", cause, err)
				}
			}
			return err
		})
	r.tally.addStats(stats)
	if err != nil {
		if e := asError(err); e != nil {
			if e.Bucket == "" && e.Key == "" {
				e.Bucket, e.Key = r.bucket, r.key
			}
			if e.UploadID == "" {
				e.UploadID = uploadID
			}
			if e.PartNumber == 0 {
				e.PartNumber = part
			}
		}
		r.log.Debug("operation failed", zap.String("op", op), zap.Int32("part", part), zap.Int64("size", size),
			zap.String("upload_id", uploadID), zap.Int("attempt", stats.Attempts), zap.Error(err))
	}
	return err
}

// tally is what the write counted, for its Result and log. Its counters are safe to update from
// any goroutine of the write.
type tally struct {
	start     time.Time
	bytesSent atomic.Int64
	bytesDone atomic.Int64
	md5Bytes  atomic.Int64 // bytes hashed by MD5 (logged when the write lands)

	mu    sync.Mutex
	stats retry.Stats // guarded by mu
}

func newTally(t *tally) *tally {
	t.start = time.Now()
	return t
}

// addStats folds one operation's attempts into the write's.
func (t *tally) addStats(s retry.Stats) {
	t.mu.Lock()
	t.stats.Add(s)
	t.mu.Unlock()
}

// countFailed counts n failures of kind k that no request attempt reported (a layout check's).
func (t *tally) countFailed(k sperrors.Kind, n int) {
	t.mu.Lock()
	if t.stats.ByKind == nil {
		t.stats.ByKind = map[sperrors.Kind]int{}
	}
	t.stats.ByKind[k] += n
	t.mu.Unlock()
}

// ended is the attempts of a write that has ended: no request adds to them any more, so they
// are handed on as they are, not copied as statsNow does.
func (t *tally) ended() retry.Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// statsNow is a copy of the attempts so far.
func (t *tally) statsNow() retry.Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := retry.Stats{ByKind: make(map[sperrors.Kind]int, len(t.stats.ByKind))}
	s.Add(t.stats)
	return s
}
