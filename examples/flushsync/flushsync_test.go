package flushsync

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	stderrors "errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/examples/metrics"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// fastPolicy is a short inner retry budget, as Milvus uses for flush: the manager re-drives on
// top of it, so throttling gets 3 attempts here too (the library's default gives it 10), and a
// throttled task reaches the manager. Short intervals keep the test quick.
func fastPolicy() *retry.Policy {
	return retry.New(func(o *retry.Options) { o.MaxAttempts = 3 }, func(o *retry.Options) { o.ThrottleMaxAttempts = 3 }, func(o *retry.Options) { o.InitialInterval = 5 * time.Millisecond },
		func(o *retry.Options) { o.ThrottleInterval = 20 * time.Millisecond }, func(o *retry.Options) { o.MaxInterval = 200 * time.Millisecond })
}

// newUploader is the Uploader a test's writes to st share.
func newUploader(t *testing.T, st store.Store, opts ...func(*writer.Options)) *writer.Uploader {
	t.Helper()
	up, err := writer.NewUploader(st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return up
}

// payload is deterministic, so the check can tell what each task wrote without trusting it.
func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0xf175)) //nolint:gosec // test data
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func segmentFiles(ch, seg int) []File {
	seed := uint64(ch*100 + seg)
	var files []File
	if seg == 0 {
		// 11 MiB with 5 MiB parts: three parts, so part faults have somewhere to land (and the
		// bad channel opens a multipart upload that must be aborted).
		files = append(files, File{Name: "vector.bin", Data: payload(seed+7, 11<<20)})
	}
	return append(files,
		File{Name: "insert.bin", Data: payload(seed, 64<<10+ch*7+seg)},
		File{Name: "stats.json", Data: fmt.Appendf(nil, `{"channel":%d,"segment":%d,"rows":%d}`, ch, seg, 1000+seg)})
}

const (
	channels = 4
	segments = 4
	badChan  = "ch3" // every body write is Forbidden: the terminal channel
)

// faultRules inject, per channel: ch0 SlowDown bursts (one longer than the inner retries, so the
// manager re-drives), ch1 checksum mismatches and connection resets, ch2 lost answers (the
// create-only re-send finds its own object), ch3 Forbidden.
func faultRules() []faulty.Rule {
	return []faulty.Rule{
		{Op: faulty.OpPutObject, KeyPrefix: badChan + "/", Fault: faulty.Forbidden()},
		{Op: faulty.OpUploadPart, KeyPrefix: badChan + "/", Fault: faulty.Forbidden()},

		{Op: faulty.OpPutObject, KeyPrefix: "ch0/segments/1/", Times: 4, Fault: faulty.SlowDown()},
		{Op: faulty.OpUploadPart, KeyPrefix: "ch0/segments/0/", Part: 2, Times: 2, Fault: faulty.SlowDown()},
		{Op: faulty.OpPutObject, KeyPrefix: "ch0/manifests/", Times: 2, Fault: faulty.SlowDown()},

		{Op: faulty.OpUploadPart, KeyPrefix: "ch1/segments/0/", Part: 1, Times: 1, Fault: faulty.ChecksumMismatch()},
		{Op: faulty.OpUploadPart, KeyPrefix: "ch1/segments/0/", Part: 3, Times: 2, Fault: faulty.ResetMidBody()},
		{Op: faulty.OpPutObject, KeyPrefix: "ch1/segments/2/", Times: 3, Fault: faulty.ResetMidBody()},
		{Op: faulty.OpPutObject, KeyPrefix: "ch1/segments/3/", Times: 1, Fault: faulty.ChecksumMismatch()},

		{Op: faulty.OpPutObject, KeyPrefix: "ch2/segments/1/", Times: 1, Fault: faulty.DropResponse()},
		{Op: faulty.OpPutObject, KeyPrefix: "ch2/manifests/2", Times: 1, Fault: faulty.DropResponse()},
		// stats.json of segment 3 fails past the inner retries after insert.bin landed: the
		// re-driven Prepare writes insert.bin again and gets AlreadyExisted.
		{Op: faulty.OpPutObject, KeyPrefix: "ch2/segments/3/stats", Times: 3, Fault: faulty.SlowDown()},
	}
}

func TestManagerThroughFaults(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()

		col := metrics.New("safeput")
		reg := prometheus.NewRegistry()
		reg.MustRegister(col)
		metricsSrv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		defer metricsSrv.Close()

		faults := faulty.New(env.Store, faultRules()...)
		st := col.WrapStore(faults)
		up := newUploader(t, st, func(o *writer.Options) { o.Retry = fastPolicy() }, col.Option(),
			func(o *writer.Options) { o.Profile = env.Profile(); o.PartSize = 5 << 20; o.Concurrency = 2 })

		var terminalReports []string
		reported := make(chan string, channels*segments)
		mgr := NewManager(ctx, Config{Workers: 4, RetryBase: 20 * time.Millisecond, RetryMax: 300 * time.Millisecond,
			OnTerminal: func(task Task, err error) { reported <- task.Name() + ": " + err.Error() }})

		var tasks []*SegmentTask
		newTask := func(ch, seg int) *SegmentTask {
			task := &SegmentTask{Uploader: up, Bucket: env.Bucket, Chan: fmt.Sprintf("ch%d", ch), Segment: int64(seg),
				Files: segmentFiles(ch, seg)}
			tasks = append(tasks, task)
			return task
		}
		// The bad channel's segment 0 goes first, alone in its channel until it has failed: its
		// multipart upload (vector.bin) meets the Forbidden part and is aborted, which the scrape
		// checks count. Submitted with the rest, a later segment's small PutObject could fail
		// first and stop it before it opens an upload (MinIO answered fast enough to show it).
		var badIndex int
		if _, err := fmt.Sscanf(badChan, "ch%d", &badIndex); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Submit(newTask(badIndex, 0)); err != nil {
			t.Fatalf("submit the bad channel's first segment: %v", err)
		}
		select {
		case r := <-reported:
			terminalReports = append(terminalReports, r)
		case <-ctx.Done():
			t.Fatalf("the bad channel's first segment never failed: %v", ctx.Err())
		}
		refused := 0
		for seg := range segments {
			for ch := range channels {
				if ch == badIndex && seg == 0 {
					continue
				}
				task := newTask(ch, seg)
				if err := mgr.Submit(task); err != nil {
					if task.Chan != badChan || !stderrors.Is(err, ErrChannelUnhealthy) {
						t.Fatalf("submit %s: %v", task.Name(), err)
					}
					refused++
				}
			}
		}
		mgr.Close()
		close(reported)
		for r := range reported {
			terminalReports = append(terminalReports, r)
		}

		stats := mgr.Stats()
		t.Logf("[%s] tasks done %d / retried %d / terminal %d / stopped %d / refused after unhealthy %d (faults injected: %d, %v)",
			env.Adapter, stats.Done, stats.Retried, stats.Terminal, stats.Stopped, refused, len(faults.Injected()), time.Since(start).Round(time.Millisecond))
		for _, r := range terminalReports {
			t.Logf("terminal: %s", r)
		}

		healthy := (channels - 1) * segments
		if stats.Done != healthy {
			for _, o := range mgr.Outcomes() {
				if o.Err != nil {
					t.Logf("%s: %s after %d attempts: %v", o.Task.Name(), o.Decision, o.Attempts, o.Err)
				}
			}
			t.Fatalf("done %d tasks, want %d (every task of the healthy channels)", stats.Done, healthy)
		}
		if stats.Retried == 0 {
			t.Error("no task was re-driven; the SlowDown and reset bursts should outlast the inner retries")
		}
		if stats.Terminal == 0 || stats.Terminal+stats.Stopped+refused != segments {
			t.Errorf("bad channel: terminal %d + stopped %d + refused %d, want %d in all and at least one terminal",
				stats.Terminal, stats.Stopped, refused, segments)
		}
		if stats.Panics != 0 {
			t.Errorf("%d panics recovered", stats.Panics)
		}
		if u := mgr.Unhealthy(); len(u) != 1 || u[badChan] == nil {
			t.Errorf("unhealthy channels %v, want only %s", u, badChan)
		} else if k := sperrors.KindOf(u[badChan]); k != sperrors.Permanent {
			t.Errorf("%s unhealthy with kind %s, want permanent: %v", badChan, k, u[badChan])
		}
		for _, o := range mgr.Outcomes() {
			if o.Decision == DecisionTerminal && o.Task.Channel() != badChan {
				t.Errorf("healthy channel task %s failed terminally: %v", o.Task.Name(), o.Err)
			}
		}

		// The check: every manifest entry reads back (raw client, not the adapter under test)
		// byte-identical to what the task wrote; the bad channel left no manifest.
		already := 0
		for _, task := range tasks {
			already += task.AlreadyExisted()
			if task.Chan == badChan {
				if s3test.Exists(t, env.Srv, env.Bucket, task.ManifestKey()) {
					t.Errorf("%s: manifest exists after a terminal failure", task.Name())
				}
				continue
			}
			var m Manifest
			if err := json.Unmarshal(s3test.ReadAll(t, env.Srv, env.Bucket, task.ManifestKey()), &m); err != nil {
				t.Fatalf("%s: manifest: %v", task.Name(), err)
			}
			if len(m.Files) != len(task.Files) {
				t.Fatalf("%s: manifest lists %d files, task wrote %d", task.Name(), len(m.Files), len(task.Files))
			}
			for i, e := range m.Files {
				want := task.Files[i]
				if e.Key != task.FileKey(want.Name) || e.Size != int64(len(want.Data)) || e.Verified == "" {
					t.Errorf("%s: entry %+v does not describe %s (%d bytes)", task.Name(), e, want.Name, len(want.Data))
				}
				if got := s3test.ReadAll(t, env.Srv, env.Bucket, e.Key); !bytes.Equal(got, want.Data) {
					t.Errorf("%s: %s reads back %d bytes, not the %d the task wrote", task.Name(), e.Key, len(got), len(want.Data))
				}
			}
		}
		if already == 0 {
			t.Error("no write reported AlreadyExisted; the lost answers and re-driven Prepare should")
		}
		if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, ""); len(ups) != 0 {
			t.Errorf("incomplete uploads left behind: %v", ups)
		}
		t.Logf("writes that found their own object already landed: %d", already)

		checkScrape(t, metricsSrv.URL)
	})
}

// checkScrape reads the collector over HTTP, as Prometheus would, and checks the counters
// reflect the injected faults.
func checkScrape(t *testing.T, url string) {
	t.Helper()
	got := scrape(t, url)
	positive := []string{
		`safeput_retries_total{kind="throttled"}`,
		`safeput_retries_total{kind="transient"}`,
		`safeput_retries_total{kind="integrity"}`,
		`safeput_failures_total{kind="permanent"}`,
		`safeput_failures_total{kind="throttled"}`,
		`safeput_aborts_total{outcome="ok"}`,
		`safeput_request_failures_total{kind="permanent",op="UploadPart"}`,
		`safeput_parts_total`,
		`safeput_bytes_total`,
		`safeput_upload_duration_seconds_count{outcome="done"}`,
		`safeput_upload_duration_seconds_count{outcome="failed"}`,
	}
	for _, name := range positive {
		if got[name] <= 0 {
			t.Errorf("%s = %v, want > 0", name, got[name])
		}
	}
	if v := got[`safeput_aborts_total{outcome="failed"}`]; v != 0 {
		t.Errorf("aborts failed = %v: an incomplete upload was left behind", v)
	}
	verifiedOK := 0.0
	for name, v := range got {
		if strings.HasPrefix(name, "safeput_verifications_total{") && strings.Contains(name, `outcome="ok"`) {
			verifiedOK += v
		}
	}
	if verifiedOK == 0 {
		t.Error("no verification counted")
	}
	var lines []string
	for name, v := range got {
		if strings.HasPrefix(name, "safeput_") && !strings.Contains(name, "_bucket{") && v != 0 {
			lines = append(lines, fmt.Sprintf("%s %v", name, v))
		}
	}
	t.Logf("scraped:\n%s", strings.Join(lines, "\n"))
}

// scrape fetches the text exposition and returns every sample by its series name.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // loopback test server
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: HTTP %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: bad sample %q", line)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return out
}

// panicky and failing are tasks without a store: the manager's own behaviour.
type fakeTask struct {
	ch, name string
	prepare  func(ctx context.Context) error
}

func (f *fakeTask) Channel() string                   { return f.ch }
func (f *fakeTask) Name() string                      { return f.name }
func (f *fakeTask) Prepare(ctx context.Context) error { return f.prepare(ctx) }
func (f *fakeTask) Commit(context.Context) error      { return nil }

func TestManagerNeverPanics(t *testing.T) {
	mgr := NewManager(context.Background(), Config{Workers: 2, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, MaxAttempts: 3,
		OnTerminal: func(Task, error) { panic("reporting callback bug") }})
	calls := 0
	tasks := []Task{
		&fakeTask{ch: "a", name: "a/panics", prepare: func(context.Context) error { panic("bug in a task") }},
		&fakeTask{ch: "b", name: "b/flaky", prepare: func(context.Context) error {
			calls++ // only this task's goroutine touches it, one attempt at a time
			if calls < 3 {
				return &sperrors.Error{Kind: sperrors.Throttled, Code: "SlowDown"}
			}
			return nil
		}},
		&fakeTask{ch: "c", name: "c/always-transient", prepare: func(context.Context) error {
			return fmt.Errorf("wrapped: %w", &sperrors.Error{Kind: sperrors.Transient})
		}},
		&fakeTask{ch: "d", name: "d/canceled", prepare: func(context.Context) error { return context.Canceled }},
	}
	for _, task := range tasks {
		if err := mgr.Submit(task); err != nil {
			t.Fatal(err)
		}
	}
	mgr.Close()
	got := map[string]Outcome{}
	for _, o := range mgr.Outcomes() {
		got[o.Task.Name()] = o
	}
	check := func(name string, d Decision, kind sperrors.Kind, attempts int) {
		t.Helper()
		o := got[name]
		if o.Decision != d || o.Attempts != attempts || (o.Err != nil && sperrors.KindOf(o.Err) != kind) {
			t.Errorf("%s: decision %s kind %s attempts %d, want %s %s %d (err %v)", name, o.Decision, sperrors.KindOf(o.Err), o.Attempts, d, kind, attempts, o.Err)
		}
	}
	check("a/panics", DecisionTerminal, sperrors.Internal, 1)
	check("b/flaky", DecisionNone, sperrors.Unknown, 3)
	check("c/always-transient", DecisionTerminal, sperrors.Transient, 3)
	check("d/canceled", DecisionCanceled, sperrors.Canceled, 1)
	if s := mgr.Stats(); s.Panics != 1 || s.Done != 1 || s.Terminal != 2 || s.Stopped != 1 || s.Retried != 4 {
		t.Errorf("stats %+v", s)
	}
	if err := mgr.Submit(&fakeTask{ch: "a", name: "a/late"}); err == nil {
		t.Error("submit after Close succeeded")
	}
}

func TestDropInShapes(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		opts := []func(*writer.Options){func(o *writer.Options) { o.Retry = fastPolicy(); o.Profile = env.Profile(); o.PartSize = 5 << 20 }}

		up := newUploader(t, env.Store, opts...)
		cm := &ChunkManager{Uploader: up, Bucket: env.Bucket}
		data := payload(1, 300<<10)
		if err := cm.Write(ctx, "files/a.bin", data); err != nil {
			t.Fatalf("ChunkManager.Write: %v", err)
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, "files/a.bin"); !bytes.Equal(got, data) {
			t.Fatal("ChunkManager.Write: read back differs")
		}

		os := &ObjectStorage{Uploader: up}
		big := payload(2, 7<<20)
		// An io.Reader that is neither sized nor seekable, as a network body would be.
		if err := os.PutObject(ctx, env.Bucket, "files/b.bin", io.MultiReader(bytes.NewReader(big)), int64(len(big))); err != nil {
			t.Fatalf("ObjectStorage.PutObject: %v", err)
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, "files/b.bin"); !bytes.Equal(got, big) {
			t.Fatal("ObjectStorage.PutObject: read back differs")
		}
		unsized := payload(3, 7<<20+1) // its own bytes, so a read-back of b's could not pass
		if err := os.PutObject(ctx, env.Bucket, "files/c.bin", io.MultiReader(bytes.NewReader(unsized)), -1); err != nil {
			t.Fatalf("ObjectStorage.PutObject, unknown size: %v", err)
		}
		if got := s3test.ReadAll(t, env.Srv, env.Bucket, "files/c.bin"); !bytes.Equal(got, unsized) {
			t.Fatalf("ObjectStorage.PutObject, unknown size: read back %d bytes, want the %d sent", len(got), len(unsized))
		}

		// Failures unwrap to *errors.Error through the shapes' own wrapping.
		denied := faulty.New(env.Store, faulty.Always(faulty.OpPutObject, faulty.Forbidden()), faulty.Always(faulty.OpUploadPart, faulty.Forbidden()))
		deniedUp := newUploader(t, denied, opts...)
		err := (&ChunkManager{Uploader: deniedUp, Bucket: env.Bucket}).Write(ctx, "files/denied.bin", data)
		var e *sperrors.Error
		if !stderrors.As(err, &e) || e.Kind != sperrors.Permanent || e.Code != "AccessDenied" || decide(err) != DecisionTerminal {
			t.Fatalf("ChunkManager.Write through Forbidden: %v (as *Error: %+v)", err, e)
		}
		err = (&ObjectStorage{Uploader: deniedUp}).PutObject(ctx, env.Bucket, "files/denied-mp.bin", io.MultiReader(bytes.NewReader(big)), int64(len(big)))
		if !stderrors.As(err, &e) || e.Kind != sperrors.Permanent {
			t.Fatalf("ObjectStorage.PutObject through Forbidden: %v", err)
		}
		// A source shorter than the size the caller promised: nothing is committed.
		err = os.PutObject(ctx, env.Bucket, "files/short.bin", io.MultiReader(bytes.NewReader(big[:6<<20])), int64(len(big)))
		if !stderrors.As(err, &e) || e.Kind != sperrors.Permanent {
			t.Fatalf("short source: %v", err)
		}
		for _, key := range []string{"files/denied.bin", "files/denied-mp.bin", "files/short.bin"} {
			if s3test.Exists(t, env.Srv, env.Bucket, key) {
				t.Errorf("%s exists after a failed write", key)
			}
		}
		if ups := s3test.IncompleteUploads(t, env.Srv, env.Bucket, ""); len(ups) != 0 {
			t.Errorf("incomplete uploads left behind: %v", ups)
		}
	})
}
