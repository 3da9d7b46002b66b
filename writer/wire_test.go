package writer_test

import (
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/writer"
)

// Faults at the wire: a real HTTP proxy between the adapter and the real server breaks
// connections, holds requests, cuts answers and stores altered bodies, and the writer must still
// end every write verified or with a classified error, within its bound, leaving nothing behind.

// wireWindow is the stall window of the wire tests: short, so a hung request costs little.
const wireWindow = 500 * time.Millisecond

func wirePolicy(extra ...func(*retry.Options)) *retry.Policy {
	return fastPolicy(append([]func(*retry.Options){func(o *retry.Options) { o.AttemptTimeout = 0 }, func(o *retry.Options) { o.StallTimeout = wireWindow }}, extra...)...)
}

// noHangPolicy is wirePolicy for the tests whose faults never hold a request (dropped answers,
// altered bodies, stripped headers): they test what a write makes of the fault, not the stall
// bound, so a store slowed by the parallel -race suite gets a window it cannot miss by accident
// (Ceph under load once took no body byte of a part for four 500 ms windows in a row).
func noHangPolicy() *retry.Policy {
	return wirePolicy(func(o *retry.Options) { o.StallTimeout = 5 * time.Second })
}

// campaignWindow is the campaign's stall window on env's server. Ceph RGW has taken longer than
// 500 ms to answer requests nobody held: the first CreateMultipartUpload on a fresh cluster (run
// alone, this test failed every time at 500 ms: two stalled Create attempts were carried out after
// the writer gave up and swept, leaving uploads nobody could name), and once, under the parallel
// suite, all four attempts of one PUT. There the window is long enough that only the injected
// faults stall.
func campaignWindow(env testkit.Env) time.Duration {
	if env.Srv.Name == s3test.Ceph {
		return 3 * time.Second
	}
	return wireWindow
}

// One request held forever at any step costs one stall window; the write lands verified. The
// hold is on the wire: the proxy has taken the whole request and never answers.
func TestWireStallAtEveryStep(t *testing.T) {
	type tc struct {
		op       faultproxy.Op
		multi    bool
		readBack bool
		fail     bool // make the write fail (a 403 on part 1) so the abort runs and hangs once
	}
	cases := []tc{
		{op: faultproxy.PutObject},
		{op: faultproxy.HeadObject},
		{op: faultproxy.GetObject, readBack: true},
		{op: faultproxy.CreateMultipartUpload, multi: true},
		{op: faultproxy.UploadPart, multi: true},
		{op: faultproxy.ListParts, multi: true},
		{op: faultproxy.CompleteMultipartUpload, multi: true},
		{op: faultproxy.HeadObject, multi: true},
		{op: faultproxy.AbortMultipartUpload, multi: true, fail: true},
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 1)
		for _, c := range cases {
			name := string(c.op)
			if c.multi {
				name = "multipart-" + name
			}
			t.Run(name, func(t *testing.T) {
				size := 100 << 10
				if c.multi {
					size = 2*part + 1
				}
				data := s3test.RandomBytes(size)
				rules := []faultproxy.Rule{{Op: c.op, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.Hold}}}
				want := sperrors.Unknown
				if c.fail {
					rules = append(rules, faultproxy.Rule{Op: faultproxy.UploadPart, PartNumber: 1,
						Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 403, Code: "AccessDenied"}})
					want = sperrors.Permanent
				}
				proxy.SetRules(rules...)
				defer proxy.SetRules()
				key := "wire-stall/" + name
				start := time.Now()
				res, err := writer.Upload(context.Background(), st, env.Bucket, key, replayable.reader(data),
					testOpts(env, func(o *writer.Options) {
						o.Retry = wirePolicy()
						o.ReadBack = c.readBack
						if c.op == faultproxy.HeadObject {
							o.Savings &^= writer.SaveRereads // else a single PUT's answer stands for its HEAD
						}
					})...)
				took := time.Since(start)
				if proxy.Stats().Injected[faultproxy.Hold] == 0 {
					t.Fatal("the hold was never injected")
				}
				checkOutcome(t, env, key, data, res, err, want)
				if want == sperrors.Unknown && res.Failures[sperrors.Transient] == 0 {
					t.Errorf("Result.Failures %v does not show the stalled attempt", res.Failures)
				}
				t.Logf("%s: one %s held forever at the wire cost %v in all (window %v)", env.Adapter, c.op, took, wireWindow)
			})
		}
	})
}

// A server that takes every request and never answers, or stops reading every body: the write
// fails Transient (code Stalled) within attempts × window + the clean-up bound, nothing left.
func TestWireHungServer(t *testing.T) {
	const abortTimeout = 3 * time.Second
	cases := []struct {
		name  string
		size  int
		fault faultproxy.Fault
		file  bool // the source is an *os.File: its parts go by sendfile, which must end too
	}{
		{"hold-single", 100 << 10, faultproxy.Fault{Kind: faultproxy.Hold}, false},
		{"hold-multipart", 2*part + 1, faultproxy.Fault{Kind: faultproxy.Hold}, false},
		{"stop-reading-single", part, faultproxy.Fault{Kind: faultproxy.StopReading, Bytes: 64 << 10}, false},
		// Only part bodies stall: the upload is created, then every part stops moving.
		{"stop-reading-parts-file", 2*part + 1, faultproxy.Fault{Kind: faultproxy.StopReading, Bytes: 64 << 10}, true},
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 2)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				op := faultproxy.OpAny
				if c.file {
					op = faultproxy.UploadPart
				}
				proxy.SetRules(faultproxy.Rule{Op: op, Fault: c.fault})
				defer proxy.SetRules()
				data := s3test.RandomBytes(c.size)
				src := replayable.reader(data)
				if c.file {
					src = fileOf(t, data)
				}
				key := "wire-hung/" + c.name
				policy := wirePolicy(func(o *retry.Options) { o.MaxAttempts = 3 })
				start := time.Now()
				res, err := writer.Upload(context.Background(), st, env.Bucket, key, src,
					testOpts(env, func(o *writer.Options) { o.Retry = policy; o.AbortTimeout = abortTimeout; o.Threshold = part })...)
				took := time.Since(start)
				// 3 attempts of one window each, backoff of at most 3 × 20 ms, the clean-up bound,
				// and slack for a loaded machine.
				bound := 3*wireWindow + abortTimeout + 5*time.Second
				t.Logf("%s: %s failed after %v (bound %v): %v", env.Adapter, c.name, took, bound, err)
				if took > bound {
					t.Errorf("returned after %v, bound %v", took, bound)
				}
				var se *sperrors.Error
				if !errors.As(err, &se) || se.Kind != sperrors.Transient || se.Code != sperrors.CodeStalled {
					t.Fatalf("got %v (result %+v), want Transient with code %s", err, res, sperrors.CodeStalled)
				}
				proxy.SetRules()
				checkOutcome(t, env, key, data, res, err, sperrors.Transient)
			})
		}
	})
}

// A server that answers a part before reading its body (503 SlowDown from its headers): the
// part is sent again and the write lands, on every server and adapter, with buffers from one
// small shared budget reused at once. Both adapters' transports are still sending the refused
// body when the call returns (neither sends Expect: 100-continue, so none waits); here that send
// ends with its connection before the part's retry does, so the buffer's fence
// rarely has to keep it: TestLateBodyReadKeepsItsBuffer shows the case where it must.
func TestWireAnswerBeforeBody(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 3)
		proxy.SetRules(faultproxy.Rule{Op: faultproxy.UploadPart, Times: 3,
			Fault: faultproxy.Fault{Kind: faultproxy.AnswerEarly, Code: "SlowDown"}})
		budget, err := writer.NewBudget(3 * part)
		if err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(6*part + 1)
		key := "wire-answer-early"
		w, err := writer.New(context.Background(), st, env.Bucket, key, testOpts(env, func(wo *writer.Options) {
			wo.ReadBackLimit = 0
			wo.Retry = fastPolicy(func(o *retry.Options) { o.MaxAttempts = 6 })
			wo.MemoryBudget = budget
			wo.Concurrency = 2
		})...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Write(data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if n := proxy.Stats().Injected[faultproxy.AnswerEarly]; n != 3 {
			t.Fatalf("%d early answers injected, want 3", n)
		}
		checkOutcome(t, env, key, data, w.Result(), err, sperrors.Unknown)
		if budget.InUse() != 0 {
			t.Errorf("%d bytes of the budget still held", budget.InUse())
		}
		t.Logf("%s: %d part buffers still read by a returned request, left to the GC", env.Adapter, writer.LentDropped(w))
	})
}

// A throttling storm at the wire: 30 % of all requests answered 503 SlowDown (some with
// Retry-After) by the proxy. Every 23 MiB upload (5 MiB parts, 4 in flight) lands identical.
func TestWireThrottleStorm(t *testing.T) {
	uploads := envInt("SAFEPUT_WIRE_STORM_UPLOADS", 6)
	seed := int64(envInt("SAFEPUT_WIRE_SEED", 20261130))
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, seed)
		proxy.SetRules(
			faultproxy.Rule{Op: faultproxy.OpAny, Prob: 0.05, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503, Code: "SlowDown", RetryAfter: "1"}},
			faultproxy.Rule{Op: faultproxy.OpAny, Prob: 0.25 / 0.95, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503, Code: "SlowDown"}},
		)
		data := s3test.RandomBytes(23 << 20)
		for i := range uploads {
			key := fmt.Sprintf("wire-storm/%d", i)
			res, err := writer.Upload(context.Background(), st, env.Bucket, key, replayable.reader(data),
				testOpts(env, func(o *writer.Options) { o.Retry = quickIntervals(); o.Concurrency = 4 })...)
			if err != nil {
				t.Errorf("upload %d through a 30%% storm: %v", i, err)
				continue
			}
			if res.Failures[sperrors.Throttled] == 0 && i == 0 {
				t.Logf("upload %d saw no throttle", i)
			}
			if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("upload %d: read back differs", i)
			}
		}
		st2 := proxy.Stats()
		t.Logf("seed %d: %d uploads, %d requests, %d answered 503", seed, uploads, total(st2.Requests), st2.Injected[faultproxy.Status])
		if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, "wire-storm/"); len(ids) != 0 {
			t.Errorf("incomplete uploads left: %v", ids)
		}
	})
}

func total(m map[faultproxy.Op]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// wireFault is one fault class of the wire campaign, with the ops it applies to and the kinds a
// write may fail with when it is injected (a write that lands is always acceptable).
type wireFault struct {
	name    string
	fault   faultproxy.Fault
	ops     []faultproxy.Op // nil: any op of the upload's path
	failsAs []sperrors.Kind
	// streamFailsAs: extra kinds for a one-pass stream source, which cannot re-send altered bytes.
	streamFailsAs []sperrors.Kind
	// mustFail: the fault cannot be retried away; landing would be a bug.
	mustFail bool
	// every: the fault answers every request of its op, not only the first; multi: the write is
	// always multipart; defaults: no profile, as the CLI at its defaults (an endpoint not yet
	// known is probed, in an upload of its own beside the write's).
	every, multi, defaults bool
}

var (
	bodyOps    = []faultproxy.Op{faultproxy.PutObject, faultproxy.UploadPart}
	singleOps  = []faultproxy.Op{faultproxy.PutObject, faultproxy.HeadObject}
	multiOps   = []faultproxy.Op{faultproxy.CreateMultipartUpload, faultproxy.UploadPart, faultproxy.ListParts, faultproxy.CompleteMultipartUpload, faultproxy.HeadObject}
	transient  = []sperrors.Kind{sperrors.Transient}
	wireFaults = []wireFault{
		{name: "reset-after-4KiB", fault: faultproxy.Fault{Kind: faultproxy.ResetAfterBytes, Bytes: 4 << 10}, failsAs: transient},
		{name: "response-lost", fault: faultproxy.Fault{Kind: faultproxy.DropResponse}, failsAs: transient},
		{name: "hold-forever", fault: faultproxy.Fault{Kind: faultproxy.Hold}, failsAs: transient},
		{name: "hold-300ms", fault: faultproxy.Fault{Kind: faultproxy.Hold, Hold: 300 * time.Millisecond}},
		{name: "stop-reading", fault: faultproxy.Fault{Kind: faultproxy.StopReading}, ops: bodyOps, failsAs: transient},
		{name: "response-cut", fault: faultproxy.Fault{Kind: faultproxy.CutResponse}, failsAs: transient},
		{name: "503-slowdown-retry-after", fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503, Code: "SlowDown", RetryAfter: "1"}, failsAs: []sperrors.Kind{sperrors.Throttled}},
		{name: "500", fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 500, Code: "InternalError"}, failsAs: transient},
		{name: "429", fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 429}, failsAs: []sperrors.Kind{sperrors.Throttled}},
		{name: "stored-truncated", fault: faultproxy.Fault{Kind: faultproxy.StoreTruncated}, ops: bodyOps, failsAs: []sperrors.Kind{sperrors.Integrity}, streamFailsAs: []sperrors.Kind{sperrors.Integrity}},
		{name: "stored-flipped", fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped}, ops: bodyOps, failsAs: []sperrors.Kind{sperrors.Integrity}, streamFailsAs: []sperrors.Kind{sperrors.Integrity}},
		{name: "403", fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 403, Code: "AccessDenied"}, ops: bodyOps, failsAs: []sperrors.Kind{sperrors.Permanent}, mustFail: true},
		// The two patterns of issue 58, which once outlived the bound or landed. A part throttled
		// forever is tried up to 10 times here, each a chance for the campaign's short stall window
		// to cut one under load (then it ends Transient, Stalled); TestWireThrottledForever
		// requires Throttled at the default window.
		{name: "503-every-part-forever", fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503, Code: "SlowDown"}, ops: []faultproxy.Op{faultproxy.UploadPart},
			failsAs: []sperrors.Kind{sperrors.Throttled, sperrors.Transient}, mustFail: true, every: true, multi: true, defaults: true},
		{name: "403-first-part-defaults", fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 403, Code: "AccessDenied"}, ops: []faultproxy.Op{faultproxy.UploadPart},
			failsAs: []sperrors.Kind{sperrors.Permanent}, mustFail: true, multi: true, defaults: true},
	}
)

// The campaign at the wire: every upload gets one fault of a class chosen in turn (so every
// class is injected), on a random request of its path, plus background throttling; single PUT
// and multipart, replayable, stream and file sources (a file's parts go by sendfile), both
// adapters, with ListParts listing every attempt of a re-sent part. It prints its seed and counts
// and fails on any silent corruption, any upload that does not return within its bound, any
// failure of a kind its faults do not explain, and any unreported leftover upload.
func TestWireCampaign(t *testing.T) {
	seed := int64(envInt("SAFEPUT_WIRE_SEED", 20261130))
	uploads := envInt("SAFEPUT_WIRE_UPLOADS", 3*len(wireFaults))
	const bound = 60 * time.Second // per upload: many times the worst case of one fault plus background throttles
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		rng := rand.New(rand.NewSource(seed))
		proxy, st := wirekit.Proxied(t, env, seed)
		// As a store keeping one entry per attempt would: a re-sent part is listed twice.
		proxy.SetListEveryAttempt(true)
		counts := map[string]int{}
		for i := range uploads {
			wf := wireFaults[i%len(wireFaults)]
			multi := rng.Intn(2) == 0 || wf.multi
			src := source(rng.Intn(3))
			size := 64<<10 + rng.Intn(part-64<<10)
			ops := singleOps
			if multi {
				size = 2*part + 1 + rng.Intn(part)
				ops = multiOps
			}
			if wf.ops != nil {
				ops = intersect(ops, wf.ops)
			}
			op := ops[rng.Intn(len(ops))]
			fault := wf.fault
			fault.Rechecksum = op == faultproxy.UploadPart // a COMPOSITE part without its checksum is refused before it is stored
			nth := 1
			if wf.every {
				nth = 0
			}
			proxy.SetRules(
				faultproxy.Rule{Op: op, Nth: nth, Fault: fault},
				faultproxy.Rule{Op: faultproxy.OpAny, Prob: 0.03, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503, Code: "SlowDown"}},
			)
			key := fmt.Sprintf("wire-campaign/%03d-%s-%s-%s", i, wf.name, op, src)
			data := s3test.RandomBytes(size)
			ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
			start := time.Now()
			opts := []func(*writer.Options){func(wo *writer.Options) {
				wo.Retry = wirePolicy(func(o *retry.Options) { o.StallTimeout = campaignWindow(env) })
				wo.AbortTimeout = 10 * time.Second
			}}
			if os.Getenv("SAFEPUT_WIRE_LOG") != "" { // every write's debug log, to replay a failure
				opts = append(opts, func(o *writer.Options) { o.Logger = zaptest.NewLogger(t, zaptest.Level(zap.DebugLevel)) })
			}
			if wf.defaults {
				opts = append(opts, func(o *writer.Options) { o.PartSize = part })
			} else {
				opts = testOpts(env, opts...)
			}
			res, err := writer.Upload(ctx, st, env.Bucket, key, src.readerFor(t, data), opts...)
			took := time.Since(start)
			cancel()
			injected := injectedKinds(proxy, key)
			if took > bound {
				t.Errorf("%s: HANG: returned after %v, bound %v (err %v)", key, took, bound, err)
			}
			outcome := checkWireOutcome(t, env, key, data, res, err, wf, src, injected)
			counts[outcome]++
			counts["source "+src.String()]++
			for _, k := range injected {
				if k == wf.fault.Kind {
					counts["injected "+wf.name]++
				} else {
					counts["injected background "+string(k)]++
				}
			}
		}
		proxy.SetRules()
		counts["stale part entries listed"] = proxy.Stats().Injected[faultproxy.StaleListed]
		t.Logf("seed %d, %s: %d uploads; %s", seed, env.Adapter, uploads, formatCounts(counts))
		for _, wf := range wireFaults {
			if counts["injected "+wf.name] == 0 {
				t.Errorf("fault class %s was never injected", wf.name)
			}
		}
	})
}

func intersect(a, b []faultproxy.Op) []faultproxy.Op {
	var out []faultproxy.Op
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
			}
		}
	}
	return out
}

func injectedKinds(p *faultproxy.Proxy, key string) []faultproxy.Kind {
	var out []faultproxy.Kind
	for _, in := range p.Injected() {
		if in.Key == key {
			out = append(out, in.Kind)
		}
	}
	return out
}

// checkWireOutcome asserts the promise for one campaign upload and names its outcome.
func checkWireOutcome(t *testing.T, env testkit.Env, key string, data []byte, res *writer.Result, err error,
	wf wireFault, src source, injected []faultproxy.Kind) string {
	t.Helper()
	leftover := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key)
	if err == nil {
		if wf.mustFail {
			t.Errorf("%s: landed through a fault that cannot be retried away (%v)", key, injected)
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
			t.Errorf("%s: SILENT CORRUPTION: landed %d bytes, wrote %d, not identical (faults %v)", key, len(got), len(data), injected)
		}
		if !res.VerifiedStrong {
			t.Errorf("%s: landed verified only by %s", key, res.Verified)
		}
		reported := map[string]bool{}
		for _, id := range res.LeftBehind {
			reported[id] = true
		}
		for _, id := range leftover {
			if !reported[id] {
				t.Errorf("%s: unreported incomplete upload %s", key, id)
			}
		}
		if res.UploadAttempts > 1 || len(injected) > 0 {
			return "landed after faults"
		}
		return "landed clean"
	}
	var se *sperrors.Error
	if !errors.As(err, &se) {
		t.Errorf("%s: unclassified error %v", key, err)
		return "unclassified"
	}
	allowed := append([]sperrors.Kind{sperrors.Throttled}, wf.failsAs...) // background throttling
	if src == stream {
		allowed = append(allowed, wf.streamFailsAs...)
	}
	ok := false
	for _, k := range allowed {
		ok = ok || se.Kind == k
	}
	if !ok {
		t.Errorf("%s: failed %s, which its faults (%v) do not explain: %v", key, se.Kind, injected, err)
	}
	if s3test.Exists(t, env.Srv, env.Bucket, key) {
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, key); !bytes.Equal(got, data) {
			t.Errorf("%s: a failed write left a wrong object visible (%d bytes)", key, len(got))
		}
	}
	for _, id := range leftover {
		if !se.AbortFailed || se.UploadID != id {
			t.Errorf("%s: unreported incomplete upload %s (err %v)", key, id, err)
		}
	}
	return "failed " + se.Kind.String()
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// Default settings, a body altered at the wire with its checksum headers stripped (a store or
// middlebox that ignores checksums and answers 200): the write lands identical after a retry or
// fails Integrity, never succeeds with a wrong object.
func TestWireAlteredBodyDefaults(t *testing.T) {
	cases := []struct {
		name string
		rule faultproxy.Rule
		size int
		src  source
	}{
		{"put-flipped", faultproxy.Rule{Op: faultproxy.PutObject, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped}}, 3 << 20, replayable},
		{"put-flipped-stream", faultproxy.Rule{Op: faultproxy.PutObject, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped}}, 3 << 20, stream},
		{"put-truncated", faultproxy.Rule{Op: faultproxy.PutObject, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.StoreTruncated}}, 3 << 20, replayable},
		// Parts: the proxy recomputes the part's checksum over the altered bytes (a middlebox
		// that rewrites both), since MinIO refuses a part of a checksummed upload that arrives
		// without one, which would catch the fault before safeput has to.
		{"part-flipped", faultproxy.Rule{Op: faultproxy.UploadPart, Nth: 2, Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped, Rechecksum: true}}, 23 << 20, replayable},
		{"part-flipped-stream", faultproxy.Rule{Op: faultproxy.UploadPart, Nth: 2, Fault: faultproxy.Fault{Kind: faultproxy.StoreFlipped, Rechecksum: true}}, 23 << 20, stream},
		{"part-truncated", faultproxy.Rule{Op: faultproxy.UploadPart, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.StoreTruncated, Rechecksum: true}}, 23 << 20, replayable},
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 3)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				proxy.SetRules(c.rule)
				defer proxy.SetRules()
				data := s3test.RandomBytes(c.size)
				key := "wire-altered/" + c.name
				// Defaults but the part size (5 MiB, so 23 MiB is multipart) and a quick policy.
				res, err := writer.Upload(context.Background(), st, env.Bucket, key, c.src.reader(data),
					func(o *writer.Options) { o.PartSize = 5 << 20; o.Retry = noHangPolicy() })
				if proxy.Stats().Injected[c.rule.Fault.Kind] == 0 {
					t.Fatal("the alteration was never injected")
				}
				if err != nil {
					if !errors.Is(err, sperrors.Integrity) {
						t.Fatalf("failed with %v, want Integrity (or landing)", err)
					}
					checkOutcome(t, env, key, data, res, err, sperrors.Integrity)
					t.Logf("%s/%s: failed Integrity: %v", env.Adapter, c.name, err)
					return
				}
				checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
				t.Logf("%s/%s: landed, verified %s, failures %v", env.Adapter, c.name, res.Verified, res.Failures)
			})
		}
	})
}

// A store that lists every attempt of a re-sent part (the proxy's ListEveryAttempt mode): a part
// whose first answer was lost, or whose first body the store kept altered while answering 200,
// is listed twice, each attempt with its own size and ETag. Through both adapters on every
// server, the write lands identical and strongly verified, saying the part was listed twice,
// or fails with the kind its fault allows (Integrity for a stream, whose part is gone), leaving
// no incomplete upload.
func TestWireResentPartListedTwice(t *testing.T) {
	cases := []struct {
		name   string
		fault  faultproxy.Fault
		stream sperrors.Kind // a stream's outcome: Unknown lands
	}{
		{"answer-lost", faultproxy.Fault{Kind: faultproxy.DropResponse}, sperrors.Unknown},
		{"stored-truncated", faultproxy.Fault{Kind: faultproxy.StoreTruncated, Rechecksum: true}, sperrors.Integrity},
		{"stored-flipped", faultproxy.Fault{Kind: faultproxy.StoreFlipped, Rechecksum: true}, sperrors.Integrity},
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 32)
		proxy.SetListEveryAttempt(true)
		data := s3test.RandomBytes(23 << 20)
		noted := 0
		for _, c := range cases {
			for _, src := range []source{replayable, stream} {
				t.Run(c.name+"/"+src.String(), func(t *testing.T) {
					proxy.SetRules(faultproxy.Rule{Op: faultproxy.UploadPart, PartNumber: 2, Nth: 1, Fault: c.fault})
					defer proxy.SetRules()
					key := "wire-listed-twice/" + c.name + "-" + src.String()
					before := proxy.Stats().Injected[faultproxy.StaleListed]
					res, err := writer.Upload(context.Background(), st, env.Bucket, key, src.reader(data),
						testOpts(env, func(o *writer.Options) { o.PartSize = 5 << 20; o.Retry = noHangPolicy() })...)
					if proxy.Stats().Injected[c.fault.Kind] == 0 {
						t.Fatal("the fault was never injected")
					}
					if src == stream && c.stream != sperrors.Unknown && err != nil {
						checkOutcome(t, env, key, data, res, err, c.stream)
						return
					}
					checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
					if !res.VerifiedStrong {
						t.Errorf("landed verified only by %s", res.Verified)
					}
					if proxy.Stats().Injected[faultproxy.StaleListed] > before {
						if !listedTwice(res.Notes) {
							t.Errorf("ListParts listed part 2 twice, Notes do not say so: %q", res.Notes)
						}
						noted++
					}
				})
			}
		}
		// The answer lost on a replayable source is always re-sent, and so listed twice.
		if noted == 0 {
			t.Errorf("no write met a part listed twice")
		}
	})
}
