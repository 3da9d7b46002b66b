package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/safeput/safeput/bench"
	"github.com/safeput/safeput/bench/internal/link"
	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/storetest/s3test"
)

// wanOptions are the flags of the WAN section.
type wanOptions struct {
	sizes, rate, window, server, impls string
	rtt                                time.Duration
	runs                               int
	only, trace, far                   bool
}

func (w *wanOptions) register() {
	flag.BoolVar(&w.only, "wan-only", false, "run only the WAN section (uploads through an emulated link) and replace it in -out, leaving the rest")
	flag.StringVar(&w.sizes, "wan-sizes", "1MiB,8MiB,64MiB,512MiB", "WAN section: object sizes")
	flag.DurationVar(&w.rtt, "wan-rtt", 40*time.Millisecond, "WAN section: the link's round-trip time")
	flag.StringVar(&w.rate, "wan-rate", "1Gbit", "WAN section: the link's rate, shared by all connections (bits per second: 1Gbit, 100Mbit)")
	flag.StringVar(&w.window, "wan-window", "4MiB", "WAN section: bytes in flight per connection and direction")
	flag.IntVar(&w.runs, "wan-runs", 3, "WAN section: writes per implementation and size")
	flag.StringVar(&w.server, "wan-server", "minio", "WAN section: the server behind the link, one of SAFEPUT_S3_SERVERS")
	flag.BoolVar(&w.far, "wan-far", false, "WAN section: write the far-link part (a longer round trip, set with -wan-rtt) and leave the rest")
	flag.BoolVar(&w.trace, "wan-trace", false, "WAN section: print every request line the relay carries and the MB it carried toward the server per 100 ms (stderr): which requests each write makes, and whether it kept the link full")
	flag.StringVar(&w.impls, "wan-impls", "", "WAN section: implementations (default all): "+wanNames())
}

func wanNames() string {
	var n []string
	for _, w := range bench.WANImpls() {
		n = append(n, w.Name)
	}
	return strings.Join(n, ", ")
}

// wanLink reads the link flags.
func (w wanOptions) link() (link.Config, error) {
	rate, err := bench.ParseRate(w.rate)
	if err != nil {
		return link.Config{}, err
	}
	win, err := bytesize.Parse(w.window)
	if err != nil || win <= 0 {
		return link.Config{}, fmt.Errorf("wan-window %q: want e.g. 4MiB", w.window)
	}
	if w.rtt < 0 {
		return link.Config{}, fmt.Errorf("wan-rtt %v: want ≥ 0", w.rtt)
	}
	return link.Config{RTT: w.rtt, Rate: rate, Window: win}, nil
}

// runWAN measures the WAN section on one server and splices it into o.out.
func runWAN(ctx context.Context, o options, w wanOptions, cm cliMemOptions) error {
	lc, err := w.link()
	if err != nil {
		return err
	}
	sizes, err := parseSizes(w.sizes, "wan-sizes", "8MiB")
	if err != nil {
		return err
	}
	srv, err := wanServer(w.server)
	if err != nil {
		return err
	}
	signing := bench.Signing(o.signing)
	if signing != bench.SigningUnsigned && signing != bench.SigningSDKDefault {
		return fmt.Errorf("peer-signing %q: want unsigned or sdk-default", o.signing)
	}
	params := bench.Params{Signing: signing, CLI: cm.binary}
	if cm.binary != "" {
		cache, remove, err := cliCacheDir()
		if err != nil {
			return err
		}
		defer remove()
		params.CLICacheDir = cache
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	cfg := bench.WANConfig{
		Server: srv, ServerName: w.server, Bucket: "safeput-wan-" + hex.EncodeToString(suffix[:]), Link: lc,
		Sizes: sizes, Runs: w.runs, Impls: fields(w.impls), Params: params, Dir: o.dir,
		TrashDir: os.Getenv(bench.ServerVar(w.server) + "_TRASH"), Log: os.Stderr,
	}
	if w.trace {
		cfg.Trace = os.Stderr
	}
	loadStart := loadavg()
	recs, err := bench.RunWAN(ctx, cfg)
	if err != nil {
		return err
	}
	load := loadStart + " → " + loadavg()
	if busy(loadStart) {
		load += fmt.Sprintf(" — above the %d cores: other work competed for the CPU, so these figures are indicative only", runtime.NumCPU())
	}
	env := bench.WANEnv{
		Command: o.command, Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), ServerName: w.server,
		Versions: strings.Join(versions(o), ", "), Link: lc, Runs: w.runs, Signing: signing, Machine: machine(), Load: load,
	}
	if env.Command == "" {
		env.Command = strings.Join(os.Args, " ")
	}
	if w.far {
		env.Title = "Over a far link (emulated)"
	}
	section := bench.WANMarkdown(env, recs)
	splice := func(doc, section string) string {
		_, block := bench.CutWAN(doc)
		return bench.SpliceWAN(doc, bench.JoinWAN(block, section, w.far))
	}
	return writeSection(o.out, section, splice, "the WAN section")
}

// wanServer is the named server of SAFEPUT_S3_SERVERS, or the one of SAFEPUT_S3_ENDPOINT when
// that names none.
func wanServer(name string) (s3test.Server, error) {
	all := s3test.LookupAll()
	if len(all) == 1 && all[0].Name == s3test.External {
		return all[0], nil
	}
	if i := slices.IndexFunc(all, func(s s3test.Server) bool { return s.Name == name }); i >= 0 {
		return all[i], nil
	}
	return s3test.Server{}, fmt.Errorf("-wan-server: %s is not running (SAFEPUT_S3_SERVERS=%s)", name, os.Getenv("SAFEPUT_S3_SERVERS"))
}

// keepWAN carries the WAN section of the report at path (if any) over to a freshly generated
// report, so a run without it does not drop the last measured one.
func keepWAN(path, report string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return report
	}
	if _, wan := bench.CutWAN(string(old)); wan != "" {
		return bench.SpliceWAN(report, wan)
	}
	return report
}
