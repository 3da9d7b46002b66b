package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/bench/internal/link"
	"github.com/safeput/safeput/writer"
)

// Over a far link whose connections are bound by their window (200 ms, 1 MiB in flight per
// connection, 1 Gbit/s shared), an Upload from a file puts more parts in flight than
// Options.Concurrency as the measured rate grows with them (writer/pacing.go), and the object
// lands verified. Needs a test server (scripts/with-s3.sh); skipped without one.
func TestWideningOver200msLink(t *testing.T) {
	const (
		conc = 2
		part = 5 << 20
		size = 12 * part // epochs of 2, 3 and 4 parts, and 3 more
	)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	far := overRelay(ctx, t, link.Config{RTT: 200 * time.Millisecond, Window: 1 << 20, Rate: 125_000_000}, "safeput-wan-widen", size)
	raw, bucket, data, stores := far.raw, far.bucket, far.data, far.stores
	for _, name := range []string{"aws", "minio"} {
		t.Run(name, func(t *testing.T) {
			st, err := stores[name]()
			if err != nil {
				t.Fatal(err)
			}
			src, closer, err := Open(data.Path, data.Size, SourceReaderAt)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			var mu sync.Mutex
			inFlight, peak := 0, 0
			res, err := writer.Upload(ctx, st, bucket, "widen/"+name, src.Reader, func(o *writer.Options) {
				o.PartSize, o.Concurrency = part, conc
				o.Observer = func(e writer.Event) {
					mu.Lock()
					defer mu.Unlock()
					switch e.Type {
					case writer.EventPartStarted:
						inFlight++
						peak = max(peak, inFlight)
					case writer.EventPartDone:
						inFlight--
					}
				}
			})
			if err != nil {
				t.Fatalf("write over the far link failed: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s: %d parts, at most %d in flight (Concurrency %d), %v", name, res.Parts, peak, conc, res.Elapsed)
			if peak <= conc {
				t.Errorf("at most %d parts in flight, want more than Concurrency %d: the rate grew with each widening", peak, conc)
			}
			if peak > 4*conc+2 {
				t.Errorf("%d parts in flight, over 4 × Concurrency and the two a hand-off may add (writer/handoff.go)", peak)
			}
			if res.Size != size || !res.VerifiedStrong {
				t.Errorf("result %+v: want %d bytes, strongly verified", res, size)
			}
			if err := CheckObject(ctx, raw, bucket, "widen/"+name, data); err != nil {
				t.Error(err)
			}
		})
	}
}
