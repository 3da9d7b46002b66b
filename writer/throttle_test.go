package writer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// quickIntervals keeps the default attempt limits, throttle allowance and retry budget but
// shortens the sleeps, so storm tests count attempts without waiting for real backoff. What they
// prove (how many attempts a request gets, how many requests an outage costs) does not depend
// on the sleep lengths.
func quickIntervals() *retry.Policy {
	return retry.New(func(o *retry.Options) { o.InitialInterval = time.Millisecond }, func(o *retry.Options) { o.ThrottleInterval = time.Millisecond },
		func(o *retry.Options) { o.MaxInterval = 5 * time.Millisecond })
}

// A throttling storm: 30 % of all requests answered 503 SlowDown at random. With the default
// attempt limits at least 99 of 100 multipart uploads land, read back identical. Each upload has
// the request shape of 23 MiB in 5 MiB parts, 4 in flight (create, 5 parts, list, complete,
// head), scaled down 16 times in bytes to keep the test quick; the wire campaign sends the real
// sizes. The seed is printed so a failure replays.
func TestThrottlingStorm(t *testing.T) {
	const uploads, size, partSize = 100, 23 << 16, 5 << 16
	seed := int64(envInt("SAFEPUT_STORM_SEED", 20261130))
	mem := memstore.New(memstore.WithBuckets("b"), memstore.WithRules(memstore.Rules{MinPartSize: 64 << 10}))
	fs := faulty.New(mem, faulty.Random(seed, 0.3, faulty.SlowDown()))
	policy := quickIntervals()
	data := s3test.RandomBytes(size)
	landed, maxRequests := 0, 0
	for i := range uploads {
		key := fmt.Sprintf("storm/%d", i)
		res, err := writer.Upload(context.Background(), fs, "b", key, bytes.NewReader(data),
			func(o *writer.Options) {
				o.Profile = "min=64KiB,max=5GiB,parts=10000"
				o.PartSize = partSize
				o.Concurrency = 4
				o.Threshold = partSize
				o.Retry = policy
			})
		if err != nil {
			if !errors.Is(err, sperrors.Throttled) {
				t.Errorf("upload %d failed with %v, want only Throttled failures", i, err)
			}
			continue
		}
		got, ok := mem.Object("b", key)
		if !ok || !bytes.Equal(got, data) {
			t.Fatalf("upload %d reported landed but the object differs", i)
		}
		landed++
		maxRequests = max(maxRequests, res.Requests)
		if err := mem.DeleteObject(context.Background(), &store.DeleteObjectInput{Bucket: "b", Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d: %d of %d uploads landed, %d requests faulted, most requests in one upload %d", seed, landed, uploads, len(fs.Injected()), maxRequests)
	if landed < 99 {
		t.Errorf("%d of %d uploads landed through a 30%% throttling storm, want at least 99", landed, uploads)
	}
	if leftover := mem.Uploads("b"); len(leftover) != 0 {
		t.Errorf("incomplete uploads left: %d", len(leftover))
	}
}

// A store in full outage (every request answered 503 SlowDown): 32 writers sharing one retry
// policy send at most one first attempt each plus what the retry budget allows
// (DefaultBudget / 5 retries), every write fails Throttled, nothing is left behind.
func TestOutageRequestBound(t *testing.T) {
	const writers = 32
	mem := memstore.New(memstore.WithBuckets("b"))
	fs := faulty.New(mem, faulty.Always(faulty.AnyOp, faulty.SlowDown()))
	policy := quickIntervals()
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := 100 << 10 // single PUT
			if i%2 == 1 {
				size = 11 << 20 // multipart: CreateMultipartUpload first
			}
			_, errs[i] = writer.Upload(context.Background(), fs, "b", fmt.Sprintf("outage/%d", i), bytes.NewReader(s3test.RandomBytes(size)),
				func(o *writer.Options) { o.Profile = "minio"; o.PartSize = 5 << 20; o.Retry = policy })
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, sperrors.Throttled) {
			t.Errorf("writer %d: %v, want Throttled", i, err)
		}
	}
	sent := len(fs.Injected())
	bound := writers + 500/5 // the default budget of 500 tokens; a retry takes 5 (retry.Options.RetryBudget)
	t.Logf("%d writers in a full outage sent %d requests (bound %d)", writers, sent, bound)
	if sent > bound {
		t.Errorf("%d requests sent, want at most %d (one first attempt per writer + the retry budget)", sent, bound)
	}
	if sent <= writers {
		t.Errorf("%d requests: the writers did not retry at all", sent)
	}
	if leftover := mem.Uploads("b"); len(leftover) != 0 {
		t.Errorf("incomplete uploads left: %d", len(leftover))
	}
}
