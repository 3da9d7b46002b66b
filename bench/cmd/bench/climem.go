package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/safeput/safeput/bench"
	"github.com/safeput/safeput/storetest/s3test"
)

// cliMemOptions are the flags of the CLI memory section.
type cliMemOptions struct {
	sizes, backends, binary, timeBin, serverName, versions string
	runs                                                   int
	only                                                   bool
}

func (c *cliMemOptions) register() {
	flag.StringVar(&c.sizes, "cli-mem-sizes", "", "CLI memory section: stdin stream sizes for `safeput put -` (empty: skip the section)")
	flag.StringVar(&c.backends, "cli-mem-backends", "aws,minio", "CLI memory section: --backend values")
	flag.IntVar(&c.runs, "cli-mem-runs", 1, "CLI memory section: runs per backend and size")
	flag.StringVar(&c.binary, "cli-binary", "", "the safeput binary: the safeput-cli rows and the CLI memory section")
	flag.StringVar(&c.timeBin, "time", "/usr/bin/time", "CLI memory section: GNU time, whose %M is the peak RSS")
	flag.StringVar(&c.serverName, "server-name", "", "CLI memory section: how the report names the server given by SAFEPUT_S3_ENDPOINT (default: its endpoint)")
	flag.StringVar(&c.versions, "server-versions", "", "CLI memory section: the servers' versions, for the report")
	flag.BoolVar(&c.only, "cli-mem-only", false, "run only the CLI memory section and replace it in -out, leaving the rest")
}

// runCLIMem measures the CLI's peak RSS on stdin streams and splices the section into o.out.
func runCLIMem(ctx context.Context, o options, c cliMemOptions) error {
	servers := cliMemServers(c.serverName)
	if len(servers) == 0 {
		return errors.New("no S3 server: run scripts/bench.sh, or export SAFEPUT_S3_ENDPOINT, SAFEPUT_S3_ACCESS_KEY and SAFEPUT_S3_SECRET_KEY")
	}
	if c.binary == "" {
		return errors.New("-cli-binary: the safeput binary to measure is required")
	}
	if _, err := os.Stat(c.timeBin); err != nil {
		return fmt.Errorf("GNU time is needed for the CLI memory section (apt-get install time): %w", err)
	}
	sizes, err := parseSizes(c.sizes, "cli-mem-sizes", "1GiB")
	if err != nil {
		return err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	cache, remove, err := cliCacheDir()
	if err != nil {
		return err
	}
	defer remove()
	var recs []bench.CLIMemRecord
	var cfg bench.CLIMemConfig
	for _, srv := range servers {
		cfg = bench.CLIMemConfig{
			Server: srv.Server, ServerName: srv.name, TrashDir: os.Getenv(bench.ServerVar(srv.name) + "_TRASH"), Bucket: "safeput-climem-" + hex.EncodeToString(suffix[:]),
			Binary: c.binary, Time: c.timeBin, Backends: fields(c.backends), Sizes: sizes, Runs: c.runs,
			PartSize: 16 << 20, Concurrency: 4, Dir: o.dir, CacheDir: cache, Log: os.Stderr,
		}
		r, err := bench.RunCLIMemory(ctx, cfg)
		if err != nil {
			return err
		}
		recs = append(recs, r...)
	}
	command := o.command
	if command == "" {
		command = strings.Join(os.Args, " ")
	}
	cfg.Versions = c.versions
	if o.revision != "" {
		cfg.Versions = strings.TrimSuffix("safeput "+o.revision+", "+c.versions, ", ")
	}
	section := bench.CLIMemMarkdown(cfg, command, time.Now().UTC().Format("2006-01-02 15:04 MST"), recs)
	return writeSection(o.out, section, bench.SpliceCLIMem, "the CLI memory section")
}

// keepCLIMem carries the CLI memory section of the report at path (if any) over to a freshly
// generated report, so a run without the section does not drop the last measured one.
func keepCLIMem(path, report string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return report
	}
	s := string(old)
	i, j := strings.Index(s, bench.CLIMemBegin), strings.Index(s, bench.CLIMemEnd)
	if i < 0 || j < i {
		return report
	}
	return bench.SpliceCLIMem(report, strings.TrimPrefix(s[i+len(bench.CLIMemBegin):j], "\n"))
}

type namedServer struct {
	s3test.Server
	name string
}

// cliMemServers lists the servers to measure: every one SAFEPUT_S3_SERVERS names (each from its
// SAFEPUT_S3_<NAME>_* variables, as scripts/s3server.sh exports them), else the one server of
// SAFEPUT_S3_ENDPOINT and friends, named name.
func cliMemServers(name string) []namedServer {
	var out []namedServer
	for _, n := range fields(os.Getenv("SAFEPUT_S3_SERVERS")) {
		p := "SAFEPUT_S3_" + strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z':
				return r - 'a' + 'A'
			case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
				return r
			}
			return '_'
		}, n) + "_"
		srv := s3test.Server{Endpoint: os.Getenv(p + "ENDPOINT"), Region: cmp.Or(os.Getenv(p+"REGION"), "us-east-1"),
			AccessKey: os.Getenv(p + "ACCESS_KEY"), SecretKey: os.Getenv(p + "SECRET_KEY")}
		if srv.Endpoint != "" && srv.AccessKey != "" && srv.SecretKey != "" {
			out = append(out, namedServer{srv, n})
		}
	}
	if len(out) > 0 {
		return out
	}
	if srv, ok := s3test.Lookup(); ok {
		out = append(out, namedServer{srv, cmp.Or(name, srv.Endpoint)})
	}
	return out
}

// cliCacheDir makes the CLI's cache directory (XDG_CACHE_HOME) for one benchmark run, so the CLI
// neither reads nor fills the user's; remove deletes it.
func cliCacheDir() (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", "safeput-bench-cli-cache-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}
