package writer_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// One hung request at any step costs one stall window and the write still lands verified; a
// hung abort is cut too, so a failed write still leaves no upload. The hang is injected at the
// Store seam here (it never reports progress); the wire-level version runs through a proxy.
func TestStallAtEveryStep(t *testing.T) {
	// Long enough that a request a loaded server (Ceph RGW, with other tests running beside
	// this one) is slow to answer does not look hung: 300 ms stalled a real part there.
	const window = time.Second
	type tc struct {
		op       string
		multi    bool
		readBack bool
		// then: a second rule that makes the write fail, so the abort runs (and hangs once).
		then *faulty.Rule
		want sperrors.Kind
	}
	forbidPart := faulty.First(faulty.OpUploadPart, 1, faulty.Forbidden())
	cases := []tc{
		{op: faulty.OpPutObject},
		{op: faulty.OpHeadObject},
		{op: faulty.OpGetObject, readBack: true},
		{op: faulty.OpCreateMultipartUpload, multi: true},
		{op: faulty.OpUploadPart, multi: true},
		{op: faulty.OpListParts, multi: true},
		{op: faulty.OpCompleteMultipart, multi: true},
		{op: faulty.OpHeadObject, multi: true},
		{op: faulty.OpAbortMultipart, multi: true, then: &forbidPart, want: sperrors.Permanent},
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, c := range cases {
			name := c.op
			if c.multi {
				name = "multipart-" + name
			}
			t.Run(name, func(t *testing.T) {
				size := 100 << 10
				if c.multi {
					size = 2*part + 1
				}
				data := s3test.RandomBytes(size)
				rules := []faulty.Rule{faulty.First(c.op, 1, faulty.Hang())}
				if c.then != nil {
					rules = append(rules, *c.then)
				}
				fs := faulty.New(env.Store, rules...)
				key := "stall/" + name
				opts := testOpts(env, func(wo *writer.Options) {
					wo.Retry = fastPolicy(func(o *retry.Options) { o.AttemptTimeout = 0 }, func(o *retry.Options) { o.StallTimeout = window })
					wo.ReadBack = c.readBack
					if c.op == faulty.OpHeadObject {
						wo.Savings &^= writer.SaveRereads // else a single PUT's answer stands for its HEAD
					}
				})
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				start := time.Now()
				res, err := writer.Upload(ctx, fs, env.Bucket, key, replayable.reader(data), opts...)
				took := time.Since(start)
				if len(fs.Injected()) == 0 {
					t.Fatalf("the hang was never injected")
				}
				checkOutcome(t, env, key, data, res, err, c.want)
				if c.want == sperrors.Unknown && res.Failures[sperrors.Transient] == 0 {
					t.Errorf("Result.Failures %v does not show the stalled attempt", res.Failures)
				}
				if c.want != sperrors.Unknown && sperrors.Classify(err).Code == sperrors.CodeStalled {
					t.Errorf("the write failed with the stall, not the injected %s failure: %v", c.want, err)
				}
				t.Logf("%s: one hung %s cost %v in all (window %v)", env.Adapter, c.op, took, window)
			})
		}
	})
}

// An attempt cut by the stall window is reported to the observer as such: the retry event of the
// attempt after it names the cut, not only the "context canceled" the request saw.
func TestStallCutNamedInRetryEvent(t *testing.T) {
	mem := newMem(minioLike)
	fs := faulty.New(mem, faulty.First(faulty.OpPutObject, 1, faulty.Hang()))
	var mu sync.Mutex
	var retries []writer.Event
	res, err := writer.Upload(context.Background(), fs, unitBucket, "k", bytes.NewReader(randomBytes(t, 1<<10)),
		func(wo *writer.Options) {
			wo.Retry = fastPolicy(func(o *retry.Options) { o.AttemptTimeout = 0 }, func(o *retry.Options) { o.StallTimeout = 100 * time.Millisecond })
			wo.Observer = func(e writer.Event) {
				if e.Type == writer.EventRetry {
					mu.Lock()
					retries = append(retries, e)
					mu.Unlock()
				}
			}
		})
	if err != nil {
		t.Fatalf("write failed: %v (result %+v)", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) != 1 || retries[0].Kind != sperrors.Transient || retries[0].Err == nil || !strings.Contains(retries[0].Err.Error(), "stall window") {
		t.Fatalf("retry events %+v: want one, Transient, naming the stall window", retries)
	}
}
