package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// warmRecorder is a store.Warmer that records what it is asked to open.
type warmRecorder struct {
	store.Store
	mu    sync.Mutex
	asked []string
}

func (w *warmRecorder) Warm(bucket string, n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = append(w.asked, fmt.Sprintf("%s×%d", bucket, n))
}

// TestWarmsThroughWrappers: as a write begins, the writer asks the store (found behind a user's
// wrapper through Unwrap) for the connections its first requests take: one for a single PUT or a
// stream of unknown size, the parts in flight for a multipart write of known size, and one more
// for the checksum probe that goes beside them.
func TestWarmsThroughWrappers(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		write func(st store.Store) error
		want  string
	}{
		{"single PUT", func(st store.Store) error {
			_, err := writer.Upload(ctx, st, unitBucket, "k", bytes.NewReader(randomBytes(t, 1000)))
			return err
		}, unitBucket + "×1"},
		{"multipart of known size, probing: one more for the probe", func(st store.Store) error {
			_, err := writer.Upload(ctx, st, unitBucket, "k", bytes.NewReader(randomBytes(t, 3*5*mib)),
				func(o *writer.Options) { o.PartSize = 5 * mib; o.Concurrency = 2 })
			return err
		}, unitBucket + "×3"},
		{"multipart of known size, no probe", func(st store.Store) error {
			_, err := writer.Upload(ctx, st, unitBucket, "k", bytes.NewReader(randomBytes(t, 3*5*mib)),
				func(o *writer.Options) { o.PartSize = 5 * mib; o.Concurrency = 2; o.Savings &^= writer.SaveProbe })
			return err
		}, unitBucket + "×2"},
		{"stream of unknown size", func(st store.Store) error {
			w, err := writer.New(ctx, st, unitBucket, "k", func(o *writer.Options) { o.PartSize = 5 * mib })
			if err != nil {
				return err
			}
			if _, err := w.Write(randomBytes(t, 6*mib)); err != nil {
				return err
			}
			return w.Close()
		}, unitBucket + "×1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &warmRecorder{Store: newMem(memstore.Rules{})}
			if err := c.write(unwrapping{unwrapping{rec}}); err != nil {
				t.Fatal(err)
			}
			if len(rec.asked) != 1 || rec.asked[0] != c.want {
				t.Fatalf("the store was asked to warm %v, want [%s]", rec.asked, c.want)
			}
		})
	}
}
