package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/storetest/s3test"
)

// DefaultServers are the test servers the benchmark measures on (scripts/bench.sh starts them):
// Versity's gateway and MinIO. Ceph RGW, the third test server, is left out: its one-OSD
// cluster on this machine measures the cluster, not the client.
var DefaultServers = []string{"versitygw", "minio"}

// Config is one harness run on one server.
type Config struct {
	Server s3test.Server
	Bucket string   // created by Run when it does not exist
	Sizes  []int64  // object sizes
	Kinds  []string // source kinds, SourceStream and/or SourceReaderAt
	Impls  []string // implementation names; empty means all
	Runs   int      // uploads per implementation per size and kind
	Params Params
	Dir    string // where the source files are generated
	Exec   Executor
	Log    io.Writer // progress lines; nil discards
	// ServerPID, when set, is the S3 server's process id: its CPU time (from /proc) around each
	// upload is recorded, as the work an implementation causes on the server (checksums it asks
	// the server to verify, part assembly).
	ServerPID int
	// TrashDir, when set, is where the server keeps deleted objects until a sweep of its own
	// (MinIO: .minio.sys/tmp/.trash, swept first 5 minutes after start); the harness empties
	// it after each delete, so the server's disk (often tmpfs) holds one object at a time.
	TrashDir string
	// ProfileDir, when set, gets a CPU profile of every upload, named IMPL-KIND-SIZE-runN.pprof
	// ("/" in IMPL becomes "_"). Profiling costs a few percent; leave it off for the figures.
	ProfileDir string
}

// Record is one measured upload that read back identical to its source.
type Record struct {
	Server string // the server's name (s3test.Server.Name)
	Impl   string
	Size   int64
	Kind   string
	Run    int
	Sample
}

// ServerVar is the prefix of the variables scripts/s3server.sh exports for the named server
// (SAFEPUT_S3_MINIO for "minio": _ENDPOINT, _PID, _TRASH, ...).
func ServerVar(name string) string {
	return "SAFEPUT_S3_" + strings.ToUpper(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, name))
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat times: 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// procCPU returns user + system seconds of process pid from /proc/PID/stat, or -1.
func procCPU(pid int) float64 {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis are
	// state, ppid, ... with utime and stime 12th and 13th.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return -1
	}
	var ut, st int64
	if _, err := fmt.Sscan(f[11], &ut); err != nil {
		return -1
	}
	if _, err := fmt.Sscan(f[12], &st); err != nil {
		return -1
	}
	return float64(ut+st) / clockTicks
}

// Run uploads every size × kind × implementation Runs times, round-robin: each round runs every
// implementation once, starting one later than the round before, so drift in the machine's load
// falls on all of them alike. Every object is read back and compared with its source before its
// figure counts; an upload error or a difference ends the run with an error.
func Run(ctx context.Context, cfg Config) ([]Record, error) {
	impls, err := cfg.impls()
	if err != nil {
		return nil, err
	}
	if cfg.Runs < 1 || len(cfg.Sizes) == 0 || len(cfg.Kinds) == 0 {
		return nil, errors.New("bench: need at least one run, size and source kind")
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	raw := cfg.Server.RawClient()
	if err := ensureBucket(ctx, raw, cfg.Bucket); err != nil {
		return nil, err
	}
	var recs []Record
	for _, size := range cfg.Sizes {
		data, err := Generate(cfg.Dir, size)
		if err != nil {
			return recs, fmt.Errorf("generate %s: %w", bytesize.Format(size), err)
		}
		recs, err = runSize(ctx, cfg, raw, impls, data, recs, logw)
		_ = os.Remove(data.Path)
		if err != nil {
			return recs, err
		}
	}
	return recs, nil
}

func runSize(ctx context.Context, cfg Config, raw *s3.Client, impls []string, data DataFile, recs []Record, logw io.Writer) ([]Record, error) {
	for _, kind := range cfg.Kinds {
		for run := range cfg.Runs {
			for i := range impls {
				name := impls[(i+run)%len(impls)]
				key := fmt.Sprintf("bench/%s/%s/%d/run%d", name, kind, data.Size, run)
				job := Job{Impl: name, Server: cfg.Server, Bucket: cfg.Bucket, Key: key, Path: data.Path, Size: data.Size, Kind: kind, Params: cfg.Params}
				if cfg.ProfileDir != "" {
					job.CPUProfile = filepath.Join(cfg.ProfileDir, fmt.Sprintf("%s-%s-%d-run%d.pprof", strings.ReplaceAll(name, "/", "_"), kind, data.Size, run+1))
				}
				srvBefore := procCPU(cfg.ServerPID)
				s, err := cfg.Exec.Exec(ctx, job)
				if err != nil {
					return recs, err
				}
				if srvBefore >= 0 {
					if after := procCPU(cfg.ServerPID); after >= 0 {
						s.ServerCPUSeconds = after - srvBefore
					}
				}
				if err := CheckObject(ctx, raw, cfg.Bucket, key, data); err != nil {
					return recs, fmt.Errorf("%s: %w", name, err)
				}
				// Keep the server's disk (often tmpfs) at one object.
				if _, err := raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(cfg.Bucket), Key: aws.String(key)}); err != nil {
					return recs, fmt.Errorf("delete %s: %w", key, err)
				}
				if err := emptyDir(cfg.TrashDir); err != nil {
					return recs, fmt.Errorf("emptying the server's trash: %w", err)
				}
				recs = append(recs, Record{Server: cfg.Server.Name, Impl: name, Size: data.Size, Kind: kind, Run: run, Sample: s})
				_, _ = fmt.Fprintf(logw, "%-9s %-8s %-8s run %d  %-16s %8.1f MiB/s  cpu %6.2f s  peak %6.1f MiB (heap %5.1f)  read back ok  %s\n",
					cfg.Server.Name, bytesize.Format(data.Size), kind, run+1, name, mibps(data.Size, s.Seconds), s.CPUSeconds, mib(s.PeakBytes), mib(s.PeakHeapBytes), s.Note)
			}
		}
	}
	return recs, nil
}

func (cfg Config) impls() ([]string, error) {
	if len(cfg.Impls) == 0 {
		var all []string
		for _, im := range Impls() {
			if im.Name == "safeput-cli" && cfg.Params.CLI == "" {
				continue // no binary to run
			}
			all = append(all, im.Name)
		}
		return all, nil
	}
	for _, n := range cfg.Impls {
		if _, err := ImplByName(n); err != nil {
			return nil, err
		}
	}
	return slices.Clone(cfg.Impls), nil
}

func ensureBucket(ctx context.Context, c *s3.Client, bucket string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		return nil
	}
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return nil
}

func mibps(size int64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(size) / (1 << 20) / seconds
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// emptyDir removes everything in dir (nothing when dir is empty or missing).
func emptyDir(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
