package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// Streams of unknown size share the small buffers they grow through with the writes after them
// (the spares of a write's own budget). Many such writes side by side, in Writes of every size,
// some aborted half way, must still each store exactly their own bytes: a buffer given back while
// something still wrote or read it would show here as another object's bytes.
func TestSmallStreamsSharingBuffersStoreTheirOwnBytes(t *testing.T) {
	mem := newMem(memstore.Rules{})
	up := newUploader(t, mem, func(o *writer.Options) { o.PartSize = 5 * mib })
	ctx := context.Background()
	const workers, perWorker = 4, 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	want := map[string][]byte{}
	for g := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for i := range perWorker {
				key := fmt.Sprintf("o/%d/%d", g, i)
				size := rng.IntN(300 << 10)
				if i%6 == 0 {
					size = 900<<10 + rng.IntN(400<<10) // grows past the largest spare size
				}
				body := make([]byte, size)
				for j := range body {
					body[j] = byte(rng.Uint32())
				}
				w, err := up.New(ctx, unitBucket, key)
				if err != nil {
					t.Error(err)
					return
				}
				abort := i%5 == 4
				for off := 0; off < len(body); {
					n := min(len(body)-off, 1+rng.IntN(96<<10))
					if _, err := w.Write(body[off : off+n]); err != nil {
						t.Error(err)
						return
					}
					off += n
					if abort && off > len(body)/2 {
						break
					}
				}
				if abort {
					if err := w.Abort(ctx); err != nil {
						t.Error(err)
					}
					continue
				}
				if err := w.Close(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				want[key] = body
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for key, body := range want {
		got, ok := mem.Object(unitBucket, key)
		if !ok || !bytes.Equal(got, body) {
			t.Errorf("%s: stored %d bytes (found %v), want its own %d", key, len(got), ok, len(body))
		}
	}
	if len(want) == 0 {
		t.Fatal("no write closed")
	}
}
