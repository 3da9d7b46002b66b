package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/safeput/safeput/internal/s3test"
	"github.com/safeput/safeput/writer"
)

// newSafeputCLI runs `safeput put` as a user would, with no --provider and no flag that changes
// what it sends: a stream is piped to its stdin (`put -`), a readerat source is named by its
// path. Its whole process is measured: start-up, credentials, the upload and the verification.
// The process's CPU time reaches the harness through getrusage(RUSAGE_CHILDREN) (cpuTime).
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
		if src.Kind == SourceStream {
			cmd.Stdin = src.Reader // a pipe, fed by a copy in this process
		}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(tail(stderr.String(), 2000)))
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
		return fmt.Sprintf("%d parts, verified %s", res.Parts, res.Verified), nil
	}, nil
}
