package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	journal "github.com/safeput/safeput/storetest/journaltest"
	"github.com/safeput/safeput/storetest/s3test"
)

// killRuns is how many times each adapter's put is killed (SAFEPUT_KILL_RUNS overrides).
func killRuns() int {
	if n, err := strconv.Atoi(os.Getenv("SAFEPUT_KILL_RUNS")); err == nil && n > 0 {
		return n
	}
	return 16
}

// killInstant is the kill instant of run i of runs for the backend numbered backend (0 or 1):
// the run's span is cut into 2 × runs slices, the backend kills once in each slice of its parity,
// in the order perm gives and at a random point within the slice. Each backend's kills so cover
// the whole run evenly, create to the HEAD after Complete, and the two backends' together land in
// every slice; uniform draws could leave a step without a kill.
func killInstant(rng *rand.Rand, span time.Duration, perm []int, i, backend int) time.Duration {
	width := max(span/time.Duration(2*len(perm)), 1)
	return time.Duration(2*perm[i]+backend)*width + time.Duration(rng.Int64N(int64(width)))
}

// pauses widen the windows a kill must hit: a part in flight, between the last part and
// Complete, between Complete and the HEAD that verifies it.
const pauses = "UploadPart:100ms,CompleteMultipartUpload:150ms,HeadObject:150ms"

// killStats is the distribution the test reports.
type killStats struct {
	phase  map[string]int // what the journal held when the process died
	reused map[int]int    // parts the re-run reused -> runs
	resent map[int]int    // parts the re-run sent -> runs
	// notJournaled: parts of the object not journaled when the process died (in flight, or not
	// yet started) -> runs; the re-run may send only those.
	notJournaled map[int]int
	// completeConsumed counts re-runs after a kill during Complete that found fewer journaled
	// parts listed than recorded (the dying Complete had consumed them) and sent them again.
	completeConsumed int
	// watched counts runs in which the concurrent reader saw an object at the key before the
	// killed process had ended (its Complete had landed).
	watched  int
	recovery map[string]int // recover --run outcomes
}

// TestKillAnywhere SIGKILLs `put --journal` at random instants, through both adapters, and
// checks every time that the key never shows a partial or different object, that recovery and
// a re-run end with the exact object and no incomplete upload, and that a re-run sends again
// only parts that were not yet journaled (in flight or not yet started) when the process died.
//
// Even runs: kill, `recover` (dry run, must change nothing), the same put (resumes), `recover
// --run` (must find nothing). Odd runs: kill, `recover --run` (settles: landed or aborted), the
// same put. Pauses before UploadPart, Complete and the HEAD widen the windows a kill must hit;
// the instants are spread over the whole run (killInstant).
func TestKillAnywhere(t *testing.T) {
	t.Parallel() // beside the package's other waiting tests: most of a run is waiting
	s := s3test.Require(t)
	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("SAFEPUT_KILL_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (SAFEPUT_KILL_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	sources := map[int][]byte{}
	files := map[int]string{}
	for _, mib := range []int{11, 13, 16} {
		sources[mib] = s3test.RandomBytes(mib<<20 + rng.IntN(1<<20))
		files[mib] = writeFile(t, sources[mib])
	}
	sizes := []int{11, 13, 16}
	for b, backend := range []string{"aws", "minio"} {
		t.Run(backend, func(t *testing.T) {
			// The two backends run side by side (each its own bucket, journal and draws from the
			// seed): most of a run is waiting for a kill instant, a pause or the store.
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(b+1)))
			bucket := s3test.NewBucket(t, s)
			dir := filepath.Join(t.TempDir(), "journal")
			common := []string{"--backend", backend, "--provider", "versitygw", "--part-size", "5MiB", "--concurrency", "2"}
			// One uninterrupted run (with the pauses) of the largest source sets the range of kill
			// instants: uniform over the whole run, create to the HEAD after Complete.
			start := time.Now()
			cal := cli(t, s, nil, append(append([]string{"--pause", pauses}, common...), "put", "--journal", dir, files[16], "s3://"+bucket+"/kill/calibrate")...)
			expectCode(t, cal, 0, "calibration put")
			span := time.Since(start)
			t.Logf("%s: an uninterrupted put takes %s: kills land in [0, %s)", backend, span.Round(time.Millisecond), span.Round(time.Millisecond))
			st := killStats{phase: map[string]int{}, reused: map[int]int{}, resent: map[int]int{}, notJournaled: map[int]int{}, recovery: map[string]int{}}
			perm := rng.Perm(killRuns())
			for i := range perm {
				mib := sizes[rng.IntN(len(sizes))]
				key := fmt.Sprintf("kill/%03d", i)
				killAndSettle(t, s, bucket, key, dir, common, files[mib], sources[mib], i%2 == 0, killInstant(rng, span, perm, i, b), &st)
				if t.Failed() {
					return
				}
			}
			t.Logf("%s: journal at the kill: %v", backend, sorted(st.phase))
			t.Logf("%s: recover --run outcomes: %v", backend, sorted(st.recovery))
			t.Logf("%s: a concurrent reader saw the object at the key while the killed put ran in %d runs; it never saw another or a partial one", backend, st.watched)
			t.Logf("%s: re-run of a journaled upload (even runs): parts not journaled at the kill -> runs %v; parts reused -> runs %v; parts sent -> runs %v",
				backend, sortedInt(st.notJournaled), sortedInt(st.reused), sortedInt(st.resent))
			t.Logf("%s: re-runs after a kill during Complete that found the journaled parts consumed and sent them again: %d", backend, st.completeConsumed)
		})
	}
}

func killAndSettle(t *testing.T, s s3test.Server, bucket, key, dir string, common []string, file string, data []byte, resume bool, after time.Duration, st *killStats) {
	t.Helper()
	// Someone reading the key while all this happens must only ever see the whole source.
	w := watchKey(s, bucket, key)
	defer w.stop()
	dst := "s3://" + bucket + "/" + key
	putArgs := append(append([]string{"--path-style"}, common...), "put", "--journal", dir, file, dst)
	killed := exec.Command(bin, append([]string{"--pause", pauses}, putArgs...)...)
	killed.Env = serverEnv(s)
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- killed.Wait() }()
	select {
	case <-done: // finished before the chosen instant: still checked below
		st.phase["finished before the kill"]++
	case <-time.After(after):
		_ = killed.Process.Signal(syscall.SIGKILL)
		<-done
	}
	parts := -1
	completeSent := false // the kill came after the intended object was journaled
	j, err := journal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	all, problems, err := j.List()
	if err != nil || len(problems) != 0 {
		t.Fatalf("%s: journal after the kill: problems %v, err %v", key, problems, err)
	}
	// At most one upload record, plus perhaps the placeholder of its create.
	var recs, placeholders []journal.Record
	for _, r := range all {
		if r.Creating {
			placeholders = append(placeholders, r)
		} else {
			recs = append(recs, r)
		}
	}
	if len(recs) > 1 || len(placeholders) > 1 {
		t.Fatalf("%s: journal after the kill: %+v", key, all)
	}
	switch {
	case len(recs) == 0 && len(placeholders) == 1:
		st.phase["create in flight (placeholder only)"]++
	case len(recs) == 0:
		if killed.ProcessState.Success() {
			break
		}
		st.phase["no record (before create, or settled)"]++
	case recs[0].Object != nil:
		st.phase["intended object recorded (Complete sent or about to be)"]++
		parts = len(recs[0].Parts)
		completeSent = true
	default:
		parts = len(recs[0].Parts)
		st.phase[fmt.Sprintf("%d parts journaled", parts)]++
	}
	checkKey(t, s, bucket, key, data, "after the kill")
	if w.sawAny() {
		st.watched++
	}
	trail := fmt.Sprintf("killed after %s; journal at the kill: %+v", after, all) // for failure messages

	if resume {
		r := cli(t, s, nil, append(common, "--json", "recover", "--journal", dir, "s3://"+bucket)...)
		expectCode(t, r, 0, key+": recover (dry run)")
		checkKey(t, s, bucket, key, data, "after a dry run")
		r = cli(t, s, nil, append(common, "--json", "--log-level", "info", "put", "--journal", dir, file, dst)...)
		expectCode(t, r, 0, key+": resumed put")
		trail += "; the re-run logged: " + r.stderr
		var res putJSON
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%s: put --json: %v\n%s", key, err, r.stdout)
		}
		switch {
		case parts < 0 || res.ResumedParts >= parts || res.AlreadyExisted:
		case completeSent:
			// A Complete the store was still executing when its client died may have taken the
			// parts with it (the Complete was in flight: every part is); they are sent again.
			st.completeConsumed++
		default:
			// Every journaled part is still listed by the store and still in the file.
			t.Fatalf("%s: the re-run reused %d parts, but %d were journaled\n%s", key, res.ResumedParts, parts, trail)
		}
		if parts >= 0 { // the kill left a journaled upload: what did the re-run reuse and send?
			st.reused[res.ResumedParts]++
			st.resent[res.Parts-res.ResumedParts]++
			st.notJournaled[res.Parts-parts]++
		}
		// What is left is at most the placeholder of a create the kill interrupted.
		r = cli(t, s, nil, append(common, "--json", "recover", "--run", "--journal", dir, "s3://"+bucket)...)
		expectCode(t, r, 0, key+": recover --run after the re-run")
		var rep recoverJSON
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%s: recover --json: %v\n%s", key, err, r.stdout)
		}
		if len(rep.Uploads) > len(placeholders) {
			t.Fatalf("%s: records left after a successful re-run: %+v", key, rep.Uploads)
		}
		for _, u := range rep.Uploads {
			st.recovery["after re-run: placeholder "+u.Outcome]++
		}
		trail += "; recover after the re-run: " + r.stdout
	} else {
		r := cli(t, s, nil, append(common, "--json", "recover", "--run", "--journal", dir, "s3://"+bucket)...)
		expectCode(t, r, 0, key+": recover --run")
		var rep recoverJSON
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%s: recover --json: %v\n%s", key, err, r.stdout)
		}
		for _, u := range rep.Uploads {
			st.recovery[u.Outcome]++
			if u.Outcome != "landed" && u.Outcome != "aborted" && u.Outcome != "gone" {
				t.Fatalf("%s: recover outcome %q for %+v", key, u.Outcome, u)
			}
		}
		if len(rep.Uploads) == 0 {
			st.recovery["nothing to recover"]++
		}
		if ups := s3test.IncompleteUploads(t, s, bucket, key); len(ups) != 0 {
			t.Fatalf("%s: incomplete uploads after recover --run: %v", key, ups)
		}
		checkKey(t, s, bucket, key, data, "after recover --run")
		r = cli(t, s, nil, append(common, "put", "--journal", dir, file, dst)...)
		expectCode(t, r, 0, key+": put after recover")
	}
	if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("%s: object differs from the source after the re-run (%d vs %d bytes)", key, len(got), len(data))
	}
	final, err := s.RawClient().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	for _, seen := range w.stop() {
		if seen.size != int64(len(data)) || seen.etag != aws.ToString(final.ETag) {
			t.Fatalf("%s: a reader saw an object of %d bytes, ETag %s at the key; the source is %d bytes, ETag %s",
				key, seen.size, seen.etag, len(data), aws.ToString(final.ETag))
		}
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, key); len(ups) != 0 {
		t.Fatalf("%s: incomplete uploads left: %v\n%s", key, ups, trail)
	}
	if recs, _, _ := j.List(); len(recs) != 0 {
		t.Fatalf("%s: journal records left: %+v", key, recs)
	}
}

type seenObject struct {
	size int64
	etag string
}

// watcher HEADs a key over and over until stopped and keeps every distinct object it saw.
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   map[seenObject]bool
}

func (w *watcher) sawAny() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen) > 0
}

func watchKey(s s3test.Server, bucket, key string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{cancel: cancel, done: make(chan struct{}), seen: map[seenObject]bool{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond) // pacing, not synchronisation
		defer tick.Stop()
		for ctx.Err() == nil {
			if h, err := s.RawClient().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
				w.mu.Lock()
				w.seen[seenObject{aws.ToInt64(h.ContentLength), aws.ToString(h.ETag)}] = true
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the watch and returns what it saw (safe to call twice).
func (w *watcher) stop() []seenObject {
	w.cancel()
	<-w.done
	var out []seenObject
	for o := range w.seen {
		out = append(out, o)
	}
	return out
}

// checkKey: the key holds nothing, or exactly the source; never a partial or other object.
func checkKey(t *testing.T, s s3test.Server, bucket, key string, data []byte, when string) {
	t.Helper()
	if !s3test.Exists(t, s, bucket, key) {
		return
	}
	if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
		t.Fatalf("%s %s: the key shows %d bytes that are not the source's %d", key, when, len(got), len(data))
	}
}

func sorted(m map[string]int) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func sortedInt(m map[int]int) string {
	var keys []int
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d: %d", k, m[k]))
	}
	return "{" + strings.Join(out, ", ") + "}"
}
