package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// newSafeputCLI runs `safeput put` as a user would, with no --provider and no flag that changes
// what it sends: a stream is piped to its stdin (`put -`), a readerat source is named by its
// path. Its whole process is measured: start-up, credentials, the upload and the verification.
// The process's CPU time reaches the harness through getrusage(RUSAGE_CHILDREN) (cpuTime), beside
// the harness's own memory sampler (as for every row). For a stream, the harness's sendfile into
// the CLI's stdin (pipeFrom) is the producer's work, which no other row has (they read the file
// themselves, as the CLI reads the pipe): it is measured on its own thread, left out of the
// row's CPU and given in the note, with the CLI's own user and system time.
func newSafeputCLI(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	if p.CLI == "" {
		return nil, errors.New("no safeput binary (-cli-binary)")
	}
	return func(ctx context.Context, key string, src Source) (string, error) {
		from := src.Path
		if src.Kind == SourceStream {
			from = "-"
		}
		args := []string{"--endpoint", srv.Endpoint, "--region", srv.Region, "--path-style"}
		if p.CABundleFile != "" {
			args = append(args, "--ca-bundle", p.CABundleFile)
		}
		// The settings every implementation gets, named only where they are not the CLI's own.
		if p.PartSize != writer.DefaultPartSize {
			args = append(args, "--part-size", fmt.Sprint(p.PartSize))
		}
		if p.Concurrency != writer.DefaultConcurrency {
			args = append(args, "--concurrency", fmt.Sprint(p.Concurrency))
		}
		args = append(args, "--json", "put", "--no-progress", from, "s3://"+bucket+"/"+key)
		cmd := exec.CommandContext(ctx, p.CLI, args...)
		cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey)
		if p.CLICacheDir != "" {
			cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+p.CLICacheDir)
		}
		var feed func() (time.Duration, error)
		if src.Kind == SourceStream {
			pr, f, err := pipeFrom(src.Path)
			if err != nil {
				return "", err
			}
			cmd.Stdin, feed = pr, f
		}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			return "", err
		}
		var ferr error
		var fed time.Duration
		if feed != nil {
			// The child has its copy of the read end: ours must go, or a child that died
			// would leave the feed blocked on a pipe that still has a reader.
			_ = cmd.Stdin.(*os.File).Close()
			fed, ferr = feed()
			notCounted(ctx, fed)
		}
		if err := cmd.Wait(); err != nil {
			return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(tail(stderr.String(), 2000)))
		}
		if ferr != nil {
			return "", fmt.Errorf("feeding the CLI's stdin: %w", ferr)
		}
		var res struct {
			Status   string `json:"status"`
			Size     int64  `json:"size"`
			Parts    int    `json:"parts"`
			Verified string `json:"verified"`
		}
		if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
			return "", fmt.Errorf("reading the CLI's --json result %q: %w", tail(stdout.String(), 500), err)
		}
		if res.Status != "landed" || res.Size != src.Size {
			return "", fmt.Errorf("CLI reports %s, %d bytes; want landed, %d", res.Status, res.Size, src.Size)
		}
		ps := cmd.ProcessState
		note := fmt.Sprintf("%d parts, verified %s; CLI user %.2f s, sys %.2f s", res.Parts, res.Verified,
			ps.UserTime().Seconds(), ps.SystemTime().Seconds())
		if feed != nil {
			note += fmt.Sprintf("; stdin feed %.2f s, not counted", fed.Seconds())
		}
		return note, nil
	}, nil
}

// pipeFrom returns the read end of a pipe for the CLI's stdin and a func that fills it from the
// file at path by sendfile(2), closes the write end and returns the CPU time the feed took: the
// kernel moves the bytes, the least CPU a producer can spend on a pipe. The feed runs locked to
// one OS thread (the fd is blocking: a full pipe blocks the thread in the kernel), so that
// thread's own rusage is the feed's CPU.
func pipeFrom(path string) (*os.File, func() (time.Duration, error), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return pr, func() (time.Duration, error) {
		defer f.Close()
		defer pw.Close()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		out, in := int(pw.Fd()), int(f.Fd())
		start := threadCPU()
		for {
			n, err := syscall.Sendfile(out, in, nil, 1<<20)
			switch {
			case errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN):
				continue
			case err != nil:
				return threadCPU() - start, err
			case n == 0:
				return threadCPU() - start, nil
			}
		}
	}, nil
}
