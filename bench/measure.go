package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
)

// Job is one upload: which implementation, which bytes, where to.
type Job struct {
	Impl   string
	Server s3test.Server
	Bucket string
	Key    string
	Path   string // the generated data file
	Size   int64
	Kind   string // SourceStream or SourceReaderAt
	Params Params
	// CPUProfile, when set, is where a CPU profile of the upload call is written (pprof format).
	CPUProfile string
}

// Sample is what one upload cost.
type Sample struct {
	Seconds    float64 // wall time of the upload call alone
	CPUSeconds float64 // user + system time of the whole process during the upload call
	// PeakBytes is the peak memory during the upload, measured as MemMethod says; IdleBytes is
	// the same measure just before the upload started (runtime, clients, no data).
	PeakBytes int64
	IdleBytes int64
	MemMethod string
	Note      string
	// PeakHeapBytes is the peak HeapInuse in a child (a diagnostic beside its peak RSS).
	PeakHeapBytes int64
	// ServerCPUSeconds is the S3 server's user + system time during the job (0 when unknown).
	ServerCPUSeconds float64
}

// Memory measures.
const (
	MemRSS     = "peak RSS of the child process that ran the upload (VmHWM)"
	MemHeapUse = "peak HeapInuse, sampled every 5 ms in-process"
)

// Executor runs one job and measures it.
type Executor interface {
	Exec(ctx context.Context, job Job) (Sample, error)
}

// RunJob runs job in this process: opens the source, builds the client, then times the upload
// call alone with getrusage deltas around it. idle, when set, gives IdleBytes just before the
// upload starts; sample, when set, is called every 5 ms during the upload and its maximum
// becomes PeakBytes.
func RunJob(ctx context.Context, job Job, idle, sample func() int64) (Sample, error) {
	im, err := ImplByName(job.Impl)
	if err != nil {
		return Sample{}, err
	}
	up, err := im.New(job.Server, job.Bucket, job.Params)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: %w", job.Impl, err)
	}
	src, closer, err := Open(job.Path, job.Size, job.Kind)
	if err != nil {
		return Sample{}, err
	}
	defer closer.Close()

	var s Sample
	if idle != nil {
		s.IdleBytes = idle()
	}
	var stop func() int64
	if sample != nil {
		stop = poll(sample)
	}
	stopProfile, err := startProfile(job.CPUProfile)
	if err != nil {
		return Sample{}, err
	}
	before, err := cpuTime()
	if err != nil {
		stopProfile()
		return Sample{}, err
	}
	var feed uncounted
	start := time.Now()
	note, upErr := up(context.WithValue(ctx, uncountedKey{}, &feed), job.Key, src)
	s.Seconds = time.Since(start).Seconds()
	after, err := cpuTime()
	stopProfile()
	if stop != nil {
		s.PeakBytes = stop()
	}
	if upErr != nil {
		return Sample{}, fmt.Errorf("%s upload of %s: %w", job.Impl, job.Key, upErr)
	}
	if err != nil {
		return Sample{}, err
	}
	s.CPUSeconds = (after - before - time.Duration(feed.Load())).Seconds()
	s.Note = note
	return s, nil
}

// startProfile starts a CPU profile into path (nothing when path is empty) and returns its stop,
// which also writes the allocation profile to path with .heap.pprof for .pprof.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		// Beside it, the heap profile (alloc_space shows what the upload allocated, by site).
		// The profile is as of the last GC, so one is forced (after the measured window).
		runtime.GC()
		if h, err := os.Create(strings.TrimSuffix(path, ".pprof") + ".heap.pprof"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(h, 0)
			_ = h.Close()
		}
	}, nil
}

// uncounted is CPU time the harness spent during an upload on work that is not the uploader's
// (feeding a CLI's stdin), in nanoseconds: RunJob takes it out of the sample's CPU.
type uncounted struct{ atomic.Int64 }

type uncountedKey struct{}

// notCounted adds d to the upload's uncounted CPU, if ctx is RunJob's.
func notCounted(ctx context.Context, d time.Duration) {
	if u, ok := ctx.Value(uncountedKey{}).(*uncounted); ok {
		u.Add(int64(d))
	}
}

// threadCPU is the calling OS thread's user + system time (the caller must be locked to it).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTime is user + system time of this process, all threads, and of its children that have
// been waited for (the safeput-cli implementation's CLI process; nothing for the others).
func cpuTime() (time.Duration, error) {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err != nil {
			return 0, fmt.Errorf("getrusage: %w", err)
		}
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total, nil
}

// PeakRSS is this process's peak resident set so far, in bytes: VmHWM from /proc/self/status.
//
// Not getrusage's ru_maxrss: Linux carries the parent's high-water mark into a child across
// execve (and Go starts children with vfork, sharing the parent's memory until exec), so a
// child's ru_maxrss is at least the harness's own peak. VmHWM belongs to the child's own address
// space, which exec created afresh.
func PeakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// HeapInuse reads the runtime's in-use heap spans without stopping the world.
func HeapInuse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	var n uint64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			n += v.Value.Uint64()
		}
	}
	return int64(n)
}

// poll calls f every 5 ms until the returned stop is called, which returns the maximum seen.
func poll(f func() int64) (stop func() int64) {
	var mu sync.Mutex
	peak := f()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v := f()
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
		}
	}()
	return func() int64 {
		close(done)
		<-finished
		v := f()
		mu.Lock()
		defer mu.Unlock()
		return max(peak, v)
	}
}

// InProcess runs each job in the calling process. Memory is peak HeapInuse (RSS would carry
// the peak of every earlier job). Used by the tests and the go test benchmarks.
type InProcess struct{}

// Exec implements Executor.
func (InProcess) Exec(ctx context.Context, job Job) (Sample, error) {
	s, err := RunJob(ctx, job, HeapInuse, HeapInuse)
	s.MemMethod = MemHeapUse
	return s, err
}

// Child runs each job in a fresh process of Binary (started as `Binary -child` with the job as
// JSON on stdin; it must call ChildMain), so that every upload starts from a cold process and its peak RSS is its
// own: in a long-lived process one upload's peak would hide the next one's.
type Child struct {
	Binary string
}

// Exec implements Executor.
func (c Child) Exec(ctx context.Context, job Job) (Sample, error) {
	arg, err := json.Marshal(job)
	if err != nil {
		return Sample{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.Binary, "-child")
	// The job (with the server's credentials) goes through stdin, not argv, which ps shows.
	cmd.Stdin = bytes.NewReader(arg)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Sample{}, fmt.Errorf("%s child: %w: %s", job.Impl, err, strings.TrimSpace(tail(stderr.String(), 2000)))
	}
	var s Sample
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		return Sample{}, fmt.Errorf("%s child: bad output %q: %w", job.Impl, tail(stdout.String(), 500), err)
	}
	return s, nil
}

// ChildMain is the child side of Child: it runs the job read as JSON from in and prints the
// Sample as JSON on stdout. Peak and idle memory are VmHWM after and before the upload call.
func ChildMain(ctx context.Context, in io.Reader) error {
	var job Job
	if err := json.NewDecoder(in).Decode(&job); err != nil {
		return fmt.Errorf("bad job: %w", err)
	}
	// The high-water mark only grows: read just before the upload it is the runtime, the client
	// and the open file; read after, it is the peak the upload reached.
	// Peak HeapInuse is sampled too: it tells the Go heap apart from the rest of the RSS.
	s, err := RunJob(ctx, job, PeakRSS, HeapInuse)
	if err != nil {
		return err
	}
	s.PeakHeapBytes = s.PeakBytes
	s.PeakBytes, s.MemMethod = PeakRSS(), MemRSS
	return json.NewEncoder(os.Stdout).Encode(s)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
