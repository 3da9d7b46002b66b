package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/safeput/safeput/bench/internal/link"
	"github.com/safeput/safeput/bytesize"
)

// The CLI row: one small file put by the CLI at its defaults over the emulated link, against the
// peers' upload of the same file plus the CLI's own start-up, which a peer linked into a
// program does not pay per file.

// CLIRowConfig is a run of the CLI row: WAN holds the server, link, CLI and runs; its sizes and
// implementations are set here.
type CLIRowConfig struct {
	WAN  WANConfig
	Size int64
}

// cliRowPeers are the peers the CLI row compares with: each a fresh client per write, as the CLI
// is a fresh process.
var cliRowPeers = []string{"transfermanager", "manager", "minio-go"}

// CLIRow is the CLI row's figures: medians over the runs, in seconds.
type CLIRow struct {
	Link     link.Config
	Size     int64
	Runs     int
	StartUp  []float64 // `safeput --help`, whole process
	Put      []float64 // `safeput put FILE s3://…`, whole process
	Requests []string  // the requests the put made, each distinct summary
	Peers    map[string][]float64
}

// startUpArgs is the command whose whole process stands for the CLI's start-up: it loads every
// package the CLI links, parses its arguments, prints its usage and exits 0, sending nothing.
var startUpArgs = []string{"--help"}

// RunCLIRow measures the CLI's start-up and its put of one file of cfg.Size over the link beside
// the peers' (RunWAN: each write cold, read back and compared), rounds interleaved.
func RunCLIRow(ctx context.Context, cfg CLIRowConfig) (*CLIRow, error) {
	if cfg.WAN.Params.CLI == "" {
		return nil, errors.New("bench: the CLI row needs the safeput binary")
	}
	if cfg.WAN.Runs < 1 {
		return nil, errors.New("bench: the CLI row needs at least one run")
	}
	row := &CLIRow{Link: cfg.WAN.Link, Size: cfg.Size, Runs: cfg.WAN.Runs, Peers: map[string][]float64{}}
	wan := cfg.WAN
	wan.Sizes = []int64{cfg.Size}
	wan.Impls = append([]string{"safeput-cli"}, cliRowPeers...)
	recs, err := RunWAN(ctx, wan)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Impl == "safeput-cli" {
			row.Put = append(row.Put, r.Seconds)
			if !slices.Contains(row.Requests, r.Requests) {
				row.Requests = append(row.Requests, r.Requests)
			}
			continue
		}
		row.Peers[r.Impl] = append(row.Peers[r.Impl], r.Seconds)
	}
	for range cfg.WAN.Runs {
		s, err := startUp(ctx, cfg.WAN.Params.CLI)
		if err != nil {
			return nil, err
		}
		row.StartUp = append(row.StartUp, s)
	}
	return row, nil
}

// startUp times one whole process of the CLI's start-up command.
func startUp(ctx context.Context, cli string) (float64, error) {
	cmd := exec.CommandContext(ctx, cli, startUpArgs...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s %s: %w", cli, strings.Join(startUpArgs, " "), err)
	}
	return time.Since(t0).Seconds(), nil
}

// BestPeer is the peer with the lowest median time, and that time.
func (r *CLIRow) BestPeer() (string, float64) {
	name, best := "", 0.0
	for _, p := range cliRowPeers {
		if t := median(r.Peers[p]); len(r.Peers[p]) > 0 && (name == "" || t < best) {
			name, best = p, t
		}
	}
	return name, best
}

// Met reports whether the CLI's put took no longer than the best peer's upload plus its start-up.
func (r *CLIRow) Met() bool {
	_, peer := r.BestPeer()
	return median(r.Put) <= peer+median(r.StartUp)
}

// Markdown renders the CLI row under the flush section.
func (r *CLIRow) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	span := func(v []float64) string {
		return fmt.Sprintf("%.3f s (%.3f–%.3f)", median(v), slices.Min(v), slices.Max(v))
	}
	w("### The CLI: one %s file over the %s link\n\n", bytesize.Format(r.Size), r.Link.RTT)
	w("The CLI at its defaults (`safeput put FILE s3://…`, no flag but the endpoint, region and path-style; a cache directory fresh for the run) against the peers' upload of the same file, each a fresh client on a cold connection, as in the WAN section, plus the CLI's start-up, which a peer linked into a program does not pay per file: `safeput %s`, the whole process (it links and initialises everything `put` does, then prints its usage and exits, sending nothing). Medians of %d runs, min–max in brackets; each put read back and compared.\n\n",
		strings.Join(startUpArgs, " "), r.Runs)
	w("| what | time |\n|---|--:|\n")
	w("| safeput put, whole process (%s) | %s |\n", strings.Join(r.Requests, "; or "), span(r.Put))
	w("| safeput %s, whole process: the start-up | %s |\n", strings.Join(startUpArgs, " "), span(r.StartUp))
	for _, p := range cliRowPeers {
		if v := r.Peers[p]; len(v) > 0 {
			w("| %s, its upload alone | %s |\n", p, span(v))
		}
	}
	best, peer := r.BestPeer()
	bound := peer + median(r.StartUp)
	verdict := "✓ met"
	if !r.Met() {
		verdict = "✗ not met"
	}
	w("\nTarget: the CLI's put ≤ the best peer's upload (%s, %.3f s) + the CLI's start-up (%.3f s) = %.3f s; measured %.3f s: %s.\n\n", best, peer, median(r.StartUp), bound, median(r.Put), verdict)
	return b.String()
}
