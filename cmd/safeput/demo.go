package main

import (
	"bytes"
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/cmd/safeput/internal/demostore"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

func (a *app) demoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Replay the field failures safeput exists for, offline, against an in-memory store",
		Long: `Replay, with no set-up and no network, the failures safeput exists for: a checksum mismatch in
transit, a store that keeps a truncated object and answers 200, a store that rejects small
parts, a throttling burst, and a permanent error in a flush loop. The store is an in-memory
store with S3 semantics that plays the faults in its answers. Each
scenario prints what was injected, what safeput retried, detected or classified, and checks
the final object byte for byte. Exit 0 only when every promise held, else 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The injected faults make the writer log warnings that are the expected story, not
			// news: stay quiet unless --log-level was asked for.
			if !cmd.Flags().Changed("log-level") {
				a.log = zap.NewNop()
			}
			return a.runDemo(cmd.Context())
		},
	}
}

const demoBucket = "demo"

// check is one promise a scenario verifies.
type check struct {
	Promise string `json:"promise"`
	Held    bool   `json:"held"`
}

type scenarioReport struct {
	Title    string   `json:"title"`
	Injected string   `json:"injected"`
	Observed []string `json:"observed"`
	Checks   []check  `json:"checks"`
}

func (s *scenarioReport) see(format string, args ...any) {
	s.Observed = append(s.Observed, fmt.Sprintf(format, args...))
}

func (s *scenarioReport) expect(promise string, held bool) {
	s.Checks = append(s.Checks, check{promise, held})
}

type demoReport struct {
	Store     string           `json:"store"`
	Scenarios []scenarioReport `json:"scenarios"`
	AllHeld   bool             `json:"all_held"`
}

// demoData is deterministic so a run is reproducible.
func demoData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5afe)) //nolint:gosec // demo payload, not security
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// demoPolicy is a small, fast retry policy with a budget of its own, so the demo runs in
// seconds and one scenario's retries cannot starve another's.
func demoPolicy() *retry.Policy {
	return retry.New(func(o *retry.Options) {
		o.MaxAttempts, o.IntegrityRetries, o.RetryBudget = 6, 2, 100
		o.InitialInterval, o.ThrottleInterval, o.MaxInterval = 5*time.Millisecond, 20*time.Millisecond, 200*time.Millisecond
	})
}

// streamOnly hides everything but Read, so the writer streams through its part buffers.
type streamOnly struct{ io.Reader }

func (a *app) runDemo(ctx context.Context) error {
	rep := demoReport{Store: "an in-memory store with S3 semantics (no network) that plays the injected faults"}
	if !a.g.json {
		_, _ = fmt.Fprintf(a.stdout, "safeput demo\nstore: %s\n", rep.Store)
	}
	scenarios := []func(context.Context) scenarioReport{
		a.demoChecksumMismatch, a.demoTruncation, a.demoSmallParts, a.demoThrottling, a.demoPermanent,
	}
	rep.AllHeld = true
	var broken []string
	for i, run := range scenarios {
		s := safeScenario(ctx, run)
		rep.Scenarios = append(rep.Scenarios, s)
		for _, c := range s.Checks {
			if !c.Held {
				rep.AllHeld = false
				broken = append(broken, fmt.Sprintf("(%d) %s", i+1, c.Promise))
			}
		}
		if !a.g.json {
			printScenario(a.stdout, i+1, s)
		}
	}
	if a.g.json {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else if rep.AllHeld {
		_, _ = fmt.Fprintf(a.stdout, "\nevery promise held: each write landed verified, or failed with a classified error and nothing left behind\n")
	}
	if !rep.AllHeld {
		return withCode(exitInternal, fmt.Errorf("demo: promises broken: %s", strings.Join(broken, "; ")))
	}
	return nil
}

// safeScenario runs one scenario and turns a panic into a broken promise: the demo's point is
// that nothing panics.
func safeScenario(ctx context.Context, run func(context.Context) scenarioReport) (s scenarioReport) {
	defer func() {
		if r := recover(); r != nil {
			s.expect(fmt.Sprintf("no panic (got: %v)", r), false)
		}
	}()
	return run(ctx)
}

func printScenario(w io.Writer, n int, s scenarioReport) {
	_, _ = fmt.Fprintf(w, "\n[%d] %s\n", n, s.Title)
	_, _ = fmt.Fprintf(w, "    injected: %s\n", s.Injected)
	for _, o := range s.Observed {
		_, _ = fmt.Fprintf(w, "    %s\n", o)
	}
	for _, c := range s.Checks {
		mark := "ok    "
		if !c.Held {
			mark = "BROKEN"
		}
		_, _ = fmt.Fprintf(w, "    [%s] %s\n", mark, c.Promise)
	}
}

// landed records the promises of a write that must land: no error, exact bytes, no upload left.
func landed(s *scenarioReport, mem *demostore.Store, key string, want []byte, res *writer.Result, err error) {
	s.expect("the write returned success", err == nil && res != nil)
	if err != nil {
		s.see("error: %v", err)
	}
	if res != nil {
		s.see("result: %s, verified %s, %d requests, failed requests: %s, upload attempts %d",
			layout(res), res.Verified, res.Requests, failureSummary(res.Failures), res.UploadAttempts)
	}
	got, ok := mem.Object(key)
	s.expect(fmt.Sprintf("the stored object equals the %s sent, byte for byte", bytesize.Format(int64(len(want)))), ok && bytes.Equal(got, want))
	s.expect("no incomplete multipart upload left", len(mem.Uploads()) == 0)
}

func layout(r *writer.Result) string {
	if r.Multipart {
		return fmt.Sprintf("multipart, %d parts of %s", r.Parts, bytesize.Format(r.PartSize))
	}
	return "single PUT"
}

// demoUpload is a scenario's upload: through one Uploader of st with the demo's options (its
// writes share one fast retry policy and what they learn about st), each write with its own opts.
// An Uploader that cannot be made (never: the options are fixed) fails every upload with why.
func (a *app) demoUpload(st store.Store) func(ctx context.Context, key string, r io.Reader, opts ...func(*writer.Options)) (*writer.Result, error) {
	up, err := writer.NewUploader(st, func(o *writer.Options) {
		o.Profile = "aws"
		o.PartSize = 5 * mib
		o.Concurrency = 2
		o.Retry = demoPolicy()
		o.Logger = a.log
	})
	return func(ctx context.Context, key string, r io.Reader, opts ...func(*writer.Options)) (*writer.Result, error) {
		if err != nil {
			return nil, err
		}
		return up.Upload(ctx, demoBucket, key, r, opts...)
	}
}

// (1) A body corrupted in transit: the store answers XAmzContentChecksumMismatch to one part.
func (a *app) demoChecksumMismatch(ctx context.Context) scenarioReport {
	s := scenarioReport{Title: "checksum mismatch in transit",
		Injected: "400 XAmzContentChecksumMismatch to the first UploadPart of part 2 (the body did not match its x-amz-checksum)"}
	mem := demostore.New(demoBucket, 0, demostore.Rule{Op: "UploadPart", Part: 2, Times: 1, Fault: demostore.ChecksumMismatch})
	data := demoData(12*int(mib), 1)
	res, err := a.demoUpload(mem)(ctx, "mismatch.bin", streamOnly{bytes.NewReader(data)})
	s.see("faults fired: %s", mem.Injected())
	landed(&s, mem, "mismatch.bin", data, res, err)
	s.expect("the failed part was classified integrity and re-sent from the clean part buffer",
		res != nil && res.Failures[sperrors.Integrity] == 1 && mem.Count(demostore.ChecksumMismatch) == 1)
	return s
}

// (2) A reset mid-body that the store hides: it keeps half the body and answers 200, echoing the
// checksum it was sent. The PUT's answer carries the ETag of what the store kept, not the MD5 of
// what was sent (the aws profile says PUT ETags are MD5s), so the PUT is caught at its receipt and
// sent again from the bytes still held; a short part is caught by the ListParts size check.
func (a *app) demoTruncation(ctx context.Context) scenarioReport {
	s := scenarioReport{Title: "a store that answers 200 but keeps a truncated object",
		Injected: "Truncate on the first PutObject (1 MiB object) and on the first UploadPart of part 2 (12 MiB object): half the body stored, 200 answered, checksum echo faked"}
	mem := demostore.New(demoBucket, 0,
		demostore.Rule{Op: "PutObject", Times: 1, Fault: demostore.Truncate},
		demostore.Rule{Op: "UploadPart", Part: 2, Times: 1, Fault: demostore.Truncate})

	small := demoData(int(mib), 2)
	var events []string
	obs := func(o *writer.Options) {
		o.Observer = func(e writer.Event) {
			if e.Type == writer.EventVerify && e.Err != nil {
				events = append(events, "HEAD verification failed: "+oneLine(e.Err))
			}
		}
	}
	upload := a.demoUpload(mem)
	res, err := upload(ctx, "truncated-put.bin", bytes.NewReader(small), obs)
	if len(events) > 0 {
		s.see("single PUT: %s", strings.Join(events, "; "))
	}
	landed(&s, mem, "truncated-put.bin", small, res, err)
	s.expect("the truncated PUT was caught at its answer (its ETag is not the MD5 sent) and sent again from the held bytes",
		res != nil && res.UploadAttempts == 1 && res.Failures[sperrors.Integrity] == 1 && len(events) == 0)

	large := demoData(12*int(mib), 3)
	var mu sync.Mutex
	starts := map[int32]int{}
	countParts := func(o *writer.Options) {
		o.Observer = func(e writer.Event) {
			if e.Type == writer.EventPartStarted {
				mu.Lock()
				starts[e.PartNumber]++
				mu.Unlock()
			}
		}
	}
	res, err = upload(ctx, "truncated-part.bin", bytes.NewReader(large), countParts)
	mu.Lock()
	var resent []string
	for n, c := range starts {
		if c > 1 {
			resent = append(resent, fmt.Sprintf("part %d sent %d times", n, c))
		}
	}
	mu.Unlock()
	sort.Strings(resent)
	s.see("multipart: faults fired in total: %s", mem.Injected())
	s.see("multipart: the ListParts check found the short part before Complete: %s", strings.Join(resent, ", "))
	landed(&s, mem, "truncated-part.bin", large, res, err)
	s.expect("the truncated part was caught before Complete (ListParts size) and sent again",
		res != nil && mem.Count(demostore.Truncate) == 2 && (len(resent) > 0 || res.UploadAttempts >= 2))
	return s
}

// (3) A store whose minimum part is 8 MiB, written with a 5 MiB part profile.
func (a *app) demoSmallParts(ctx context.Context) scenarioReport {
	s := scenarioReport{Title: "a store that rejects small non-final parts",
		Injected: "a store whose minimum part is 8 MiB (400 EntityTooSmall at Complete); writer with --provider aws and 5 MiB parts"}
	mem := demostore.New(demoBucket, 8*mib)
	data := demoData(12*int(mib), 4)
	upload := a.demoUpload(mem)
	_, err := upload(ctx, "parts.bin", bytes.NewReader(data))
	var se *sperrors.Error
	isErr := stderrors.As(err, &se)
	if isErr {
		s.see("error: kind=%s code=%s (exit %d): %s", se.Kind.String(), se.Code, kindExit(se.Kind), oneLine(err))
	} else {
		s.see("error: %v", err)
	}
	s.expect("the write failed with a compatibility error naming EntityTooSmall",
		isErr && se.Kind == sperrors.Compatibility && se.Code == "EntityTooSmall")
	_, exists := mem.Object("parts.bin")
	s.expect("nothing is visible at the key and the upload was aborted", !exists && len(mem.Uploads()) == 0)

	s.see("retrying with --provider 'profile=aws,min=8MiB' --part-size 8MiB")
	res, err := upload(ctx, "parts.bin", bytes.NewReader(data),
		func(o *writer.Options) { o.Profile = "profile=aws,min=8MiB"; o.PartSize = 8 * mib })
	landed(&s, mem, "parts.bin", data, res, err)
	return s
}

// (4) A throttling burst.
func (a *app) demoThrottling(ctx context.Context) scenarioReport {
	const n = 4
	s := scenarioReport{Title: "a throttling burst",
		Injected: fmt.Sprintf("503 SlowDown on the first %d PutObject calls (retry policy: 6 attempts, 20 ms throttle base, jittered)", n)}
	mem := demostore.New(demoBucket, 0, demostore.Rule{Op: "PutObject", Times: n, Fault: demostore.SlowDown})
	data := demoData(256*int(kib), 5)
	start := time.Now()
	res, err := a.demoUpload(mem)(ctx, "throttled.bin", bytes.NewReader(data))
	s.see("landed after %s of backoff and requests", time.Since(start).Round(time.Millisecond))
	landed(&s, mem, "throttled.bin", data, res, err)
	s.expect(fmt.Sprintf("all %d SlowDown answers were classified throttled and retried with backoff", n),
		res != nil && res.Failures[sperrors.Throttled] == n)
	return s
}

// (5) A permanent error reaches a sync manager's flush loop as a value it can classify.
func (a *app) demoPermanent(ctx context.Context) scenarioReport {
	s := scenarioReport{Title: "a permanent error in a flush loop",
		Injected: "403 AccessDenied on every request; a flush loop of 3 segments classifies failures with errors.Classify"}
	mem := demostore.New(demoBucket, 0, demostore.Rule{Op: demostore.AnyOp, Fault: demostore.Forbidden})
	upload := a.demoUpload(mem) // the flush loop's Uploader

	type channel struct {
		healthy bool
		reason  string
	}
	ch := channel{healthy: true}
	var (
		lastErr  error
		decision string
		attempts int
		panicked any
	)
	func() {
		defer func() { panicked = recover() }()
		for i, seg := range []string{"seg-1", "seg-2", "seg-3"} {
			data := demoData(64*int(kib), uint64(10+i))
			for try := 1; try <= 3; try++ {
				attempts++
				_, err := upload(ctx, "flush/"+seg, bytes.NewReader(data))
				decision, lastErr = demoDecide(err), err
				if decision != "retry" {
					break
				}
			}
			if decision == "terminal" {
				ch.healthy, ch.reason = false, fmt.Sprintf("%s failed: %s", seg, sperrors.KindOf(lastErr).String())
				return
			}
			if decision == "canceled" {
				return
			}
		}
	}()
	var se *sperrors.Error
	isErr := stderrors.As(lastErr, &se)
	if isErr {
		s.see("error returned: kind=%s code=%s status=%d -> decision %s", se.Kind.String(), se.Code, se.StatusCode, decision)
	}
	s.see("flush loop: %d upload call(s), channel healthy=%v (%s)", attempts, ch.healthy, ch.reason)
	s.expect("the error was returned, not panicked", panicked == nil && lastErr != nil)
	s.expect("it is classified permanent (AccessDenied) and the decision is terminal",
		isErr && se.Kind == sperrors.Permanent && se.Code == "AccessDenied" && decision == "terminal")
	s.expect("the loop did not retry a permanent error and marked the channel unhealthy", attempts == 1 && !ch.healthy)
	_, exists := mem.Object("flush/seg-1")
	s.expect("nothing was stored and no upload is left", !exists && len(mem.Uploads()) == 0 && mem.Requests("PutObject") == 0)
	return s
}

// demoDecide is a flush loop's reading of a failure: run the task again, stop quietly, or give up.
func demoDecide(err error) string {
	switch e := sperrors.Classify(err); {
	case err == nil:
		return "none"
	case e.Kind == sperrors.Canceled:
		return "canceled"
	case e.Retryable():
		return "retry"
	}
	return "terminal"
}
