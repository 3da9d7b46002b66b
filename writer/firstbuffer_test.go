package writer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// A small object written as a stream of unknown size (Uploader.New, Write, Close) allocates
// about what the same object costs through Upload of a *bytes.Reader, whose size is known and
// whose one buffer is exactly that size, give or take one object's size: not a whole part buffer
// (16 MiB at defaults) per object, which a flush of many small objects through one Uploader
// would allocate and clear.
func TestSmallStreamAllocatesItsOwnSize(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"))
	up, err := writer.NewUploader(mem)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, size := range []int{4 << 10, 64 << 10, 1 << 20} {
		body := bytes.Repeat([]byte{7}, size)
		stream := func() {
			w, err := up.New(ctx, "b", "small")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		sized := func() {
			if _, err := up.Upload(ctx, "b", "small", bytes.NewReader(body)); err != nil {
				t.Fatal(err)
			}
		}
		allocated := func(write func()) uint64 {
			write() // warm up the Uploader's lazily built state
			before := heapAllocs()
			const writes = 4
			for range writes {
				write()
			}
			return (heapAllocs() - before) / writes
		}
		s, k := allocated(stream), allocated(sized)
		bound := k + uint64(size) + 64<<10
		t.Logf("%d-byte object: %d B allocated per streamed write, %d B per Upload of known size (part %d MiB)", size, s, k, writer.DefaultPartSize>>20)
		if s > bound {
			t.Errorf("%d-byte object: %d B allocated per streamed write, want ≤ %d (the sized Upload's + the object's size + 64 KiB): a whole part buffer per small write?", size, s, bound)
		}
	}
}

// A stream of unknown size lands as written whatever its size and however it is cut: across the
// first buffer's growth steps and the part boundaries, through Write in random pieces and through
// ReadFrom of a reader that returns short reads. Every buffer goes back to the budget, whose
// peak stays within concurrency × part size.
func TestStreamGrowsItsFirstBuffer(t *testing.T) {
	const part = 5 << 20
	sizes := []int{0, 1, 16<<10 - 1, 16 << 10, 16<<10 + 1, 64<<10 + 3, 1 << 20, 1<<20 + 1, 4<<20 + 5, part - 1, part, part + 1, 2*part + 7}
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 2*part+7)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	mem, up, budget := budgetedUploader(t, part, 2)
	ctx := context.Background()
	for _, size := range sizes {
		want := data[:size]
		for _, how := range []string{"write", "readfrom"} {
			key := fmt.Sprintf("%s-%d", how, size)
			w, err := up.New(ctx, "b", key)
			if err != nil {
				t.Fatal(err)
			}
			switch how {
			case "write":
				for rest := want; len(rest) > 0; {
					n := min(len(rest), 1+rng.IntN(300<<10))
					if _, err := w.Write(rest[:n]); err != nil {
						t.Fatalf("%s: %v", key, err)
					}
					rest = rest[n:]
				}
			case "readfrom":
				if _, err := w.ReadFrom(&shortReader{r: bytes.NewReader(want), rng: rng}); err != nil {
					t.Fatalf("%s: %v", key, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			got, ok := mem.Object("b", key)
			if !ok || !bytes.Equal(got, want) {
				t.Fatalf("%s: stored %d bytes (found %v), want the %d written", key, len(got), ok, size)
			}
			if res := w.Result(); res.Size != int64(size) || !res.VerifiedStrong {
				t.Fatalf("%s: Result size %d, verified %s", key, res.Size, res.Verified)
			}
			if n := budget.InUse(); n != 0 {
				t.Fatalf("%s: %d bytes of buffers never returned to the budget", key, n)
			}
		}
	}
	if p := budget.Peak(); p > 2*part {
		t.Errorf("budget peak %d, want ≤ %d", p, 2*part)
	}
}

// shortReader returns at most a random few KiB per Read.
type shortReader struct {
	r   io.Reader
	rng *rand.Rand
}

func (s *shortReader) Read(p []byte) (int, error) {
	return s.r.Read(p[:min(len(p), 1+s.rng.IntN(40<<10))])
}

// Writers sharing one budget whose first buffers grow cannot hold it in a deadlock: each first
// buffer is charged a whole part when taken, so growing never waits, and a writer that finds no
// room waits holding nothing. Three writers, room for two parts.
func TestGrowingBuffersShareABudget(t *testing.T) {
	const part = 5 << 20
	mem, up, budget := budgetedUploader(t, part, 1)
	body := bytes.Repeat([]byte("grow"), (3*part)/4+1)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := up.New(context.Background(), "b", fmt.Sprint("shared-", i))
			if err != nil {
				errs <- err
				return
			}
			for rest := body; len(rest) > 0; rest = rest[min(len(rest), 8<<10):] {
				if _, err := w.Write(rest[:min(len(rest), 8<<10)]); err != nil {
					errs <- err
					return
				}
			}
			errs <- w.Close()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if got, _ := mem.Object("b", fmt.Sprint("shared-", i)); !bytes.Equal(got, body) {
			t.Errorf("shared-%d: stored %d bytes, want %d", i, len(got), len(body))
		}
	}
	if n, p := budget.InUse(), budget.Peak(); n != 0 || p > 2*part {
		t.Errorf("budget in use %d after, peak %d: want 0 and ≤ %d", n, p, 2*part)
	}
}

// budgetedUploader is an Uploader on a fresh in-memory store (profile minio, parts of part bytes,
// concurrency parts at once) whose memory budget holds two parts.
func budgetedUploader(t *testing.T, part int64, concurrency int) (*memstore.Store, *writer.Uploader, *writer.Budget) {
	t.Helper()
	mem := memstore.New(memstore.WithBuckets("b"))
	budget, err := writer.NewBudget(2 * part)
	if err != nil {
		t.Fatal(err)
	}
	up, err := writer.NewUploader(mem, func(o *writer.Options) {
		o.Profile = "minio"
		o.PartSize = part
		o.Concurrency = concurrency
		o.MemoryBudget = budget
	})
	if err != nil {
		t.Fatal(err)
	}
	return mem, up, budget
}
