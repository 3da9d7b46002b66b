package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/safeput/safeput/bench"
	"github.com/safeput/safeput/bench/internal/link"
	"github.com/safeput/safeput/bytesize"
)

// flushOptions are the flags of the flush section.
type flushOptions struct {
	sizes, impls, server, batchBytes, cliSize string
	workers, objects, linkObjects, runs       int
	cliRuns                                   int
	only, noCLI, linkOnly, loopbackOnly       bool
	relay                                     bool   // internal: run the link's relay (the child of childLink)
	relayUpstream                             string // the relay's upstream
}

func (f *flushOptions) register() {
	flag.BoolVar(&f.only, "flush-only", false, "run only the flush section (many small objects, one shared client) and replace it in -out, leaving the rest")
	flag.StringVar(&f.sizes, "flush-sizes", "4KiB,64KiB,1MiB", "flush section: object sizes")
	flag.IntVar(&f.workers, "flush-workers", 16, "flush section: workers sharing one client")
	flag.IntVar(&f.objects, "flush-objects", 1000, "flush section: objects per timed batch on loopback")
	flag.IntVar(&f.linkObjects, "flush-link-objects", 400, "flush section: objects per timed batch over the emulated link")
	flag.StringVar(&f.batchBytes, "flush-batch-bytes", "256MiB", "flush section: most bytes one batch writes (fewer objects of a large size)")
	flag.IntVar(&f.runs, "flush-runs", 3, "flush section: batches per implementation, link and size")
	flag.StringVar(&f.impls, "flush-impls", "", "flush section: implementations (default all): "+flushNames())
	flag.StringVar(&f.server, "flush-server", "minio", "flush section: the server, one of SAFEPUT_S3_SERVERS")
	flag.BoolVar(&f.noCLI, "flush-no-cli", false, "flush section: leave out the CLI row")
	flag.StringVar(&f.cliSize, "flush-cli-size", "1MiB", "flush section: the file the CLI row puts over the link")
	flag.IntVar(&f.cliRuns, "flush-cli-runs", 9, "flush section: runs of the CLI row (a few milliseconds decide its target: an odd count of at least 9 for a steady median)")
	flag.BoolVar(&f.loopbackOnly, "flush-loopback-only", false, "flush section: loopback only (no link)")
	flag.BoolVar(&f.linkOnly, "flush-link-only", false, "flush section: the link only (no loopback)")
	flag.BoolVar(&f.relay, "link-relay", false, "internal: run the emulated link's relay to -link-upstream (-wan-rtt, -wan-rate, -wan-window) until stdin closes")
	flag.StringVar(&f.relayUpstream, "link-upstream", "", "internal: the relay's upstream host:port")
}

func flushNames() string {
	var n []string
	for _, f := range bench.FlushImpls() {
		n = append(n, f.Name)
	}
	return strings.Join(n, ", ")
}

// runRelay is the relay child: it prints the address it listens on, then relays until its stdin
// closes (the parent ended, or stopped it).
func runRelay(w wanOptions, upstream string) error {
	lc, err := w.link()
	if err != nil {
		return err
	}
	lc.Upstream = upstream
	r, err := link.Start(lc)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	fmt.Println(r.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// childLink starts the relay as a child process of this binary, so its CPU is not the client's.
func childLink(w wanOptions) bench.LinkStarter {
	return func(lc link.Config) (string, func() error, error) {
		self, err := os.Executable()
		if err != nil {
			return "", nil, err
		}
		cmd := exec.Command(self, "-link-relay", "-link-upstream", lc.Upstream, "-wan-rtt", w.rtt.String(), "-wan-rate", w.rate, "-wan-window", w.window)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return "", nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return "", nil, err
		}
		if err := cmd.Start(); err != nil {
			return "", nil, err
		}
		stop := func() error {
			_ = stdin.Close()
			return cmd.Wait()
		}
		addr, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			_ = stop()
			return "", nil, fmt.Errorf("the relay did not start: %w", err)
		}
		return strings.TrimSpace(addr), stop, nil
	}
}

// runFlush measures the flush section (and the CLI row) on one server and splices it into o.out.
func runFlush(ctx context.Context, o options, f flushOptions, w wanOptions, cm cliMemOptions) error {
	lc, err := w.link()
	if err != nil {
		return err
	}
	sizes, err := parseSizes(f.sizes, "flush-sizes", "64KiB")
	if err != nil {
		return err
	}
	batch, err := bytesize.Parse(f.batchBytes)
	if err != nil || batch <= 0 {
		return fmt.Errorf("flush-batch-bytes %q: want e.g. 256MiB", f.batchBytes)
	}
	srv, err := wanServer(f.server)
	if err != nil {
		return err
	}
	signing := bench.Signing(o.signing)
	if signing != bench.SigningUnsigned && signing != bench.SigningSDKDefault {
		return fmt.Errorf("peer-signing %q: want unsigned or sdk-default", o.signing)
	}
	var links []bench.FlushLink
	if !f.linkOnly {
		links = append(links, bench.FlushLink{Name: "loopback"})
	}
	if !f.loopbackOnly {
		links = append(links, bench.FlushLink{Name: fmt.Sprintf("%s link", w.rtt), Config: lc})
	}
	if len(links) == 0 {
		return errors.New("-flush-loopback-only and -flush-link-only leave no link")
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	trash := os.Getenv(bench.ServerVar(f.server) + "_TRASH")
	cfg := bench.FlushConfig{
		Server: srv, ServerName: f.server, Bucket: "safeput-flush-" + hex.EncodeToString(suffix[:]), Links: links, Sizes: sizes,
		Workers: f.workers, Objects: f.objects, LinkObjects: f.linkObjects, BatchBytes: batch, Runs: f.runs, Impls: fields(f.impls),
		Params: bench.Params{Signing: signing}, StartLink: childLink(w), TrashDir: trash, Log: os.Stderr, ProfileDir: o.profileDir,
		ServerPID: serverPID(f.server, false, o.serverPID),
	}
	loadStart := loadavg()
	recs, err := bench.RunFlush(ctx, cfg)
	if err != nil {
		return err
	}
	env := bench.FlushEnv{
		Command: o.command, Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), ServerName: f.server,
		Versions: strings.Join(versions(o), ", "), Machine: machine(), Workers: f.workers, Runs: f.runs, Signing: signing, Links: links,
	}
	if cm.binary != "" && !f.noCLI {
		cliSize, err := bytesize.Parse(f.cliSize)
		if err != nil || cliSize <= 0 {
			return fmt.Errorf("flush-cli-size %q: want e.g. 1MiB", f.cliSize)
		}
		cache, remove, err := cliCacheDir()
		if err != nil {
			return err
		}
		defer remove()
		row, err := bench.RunCLIRow(ctx, bench.CLIRowConfig{Size: cliSize, WAN: bench.WANConfig{
			Server: srv, ServerName: f.server, Bucket: cfg.Bucket, Link: lc, Runs: f.cliRuns,
			Params: bench.Params{Signing: signing, CLI: cm.binary, CLICacheDir: cache}, Dir: o.dir, TrashDir: trash, Log: os.Stderr,
		}})
		if err != nil {
			return fmt.Errorf("the CLI row: %w", err)
		}
		env.CLI = row
	}
	env.Load = loadStart + " → " + loadavg()
	if busy(loadStart) {
		env.Load += fmt.Sprintf(" — above the %d cores: other work competed for the CPU, so these figures are indicative only", runtime.NumCPU())
	}
	if env.Command == "" {
		env.Command = strings.Join(os.Args, " ")
	}
	return writeSection(o.out, bench.FlushMarkdown(env, recs), bench.SpliceFlush, "the flush section")
}

// keepFlush carries the flush section of the report at path (if any) over to a freshly generated
// report, so a run without it does not drop the last measured one.
func keepFlush(path, report string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return report
	}
	if _, sec := bench.CutFlush(string(old)); sec != "" {
		return bench.SpliceFlush(report, sec)
	}
	return report
}
