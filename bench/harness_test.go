package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
)

// TestHarnessTiny runs the whole harness once at a tiny size: every implementation, both source
// kinds, each object read back and compared. It proves the benchmark works; it times nothing.
// Like the benchmark itself (scripts/bench.sh) it runs on the first test server only: it checks
// the harness, and the library's behaviour on every server is covered by the other modules.
func TestHarnessTiny(t *testing.T) {
	srv := s3test.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The CLI keeps its endpoint cache in the test's directory, not the user's.
	params := Params{PartSize: 5 << 20, Concurrency: 2, Signing: SigningUnsigned, CLI: buildCLI(t), CLICacheDir: t.TempDir()}
	recs, err := Run(ctx, Config{
		Server: srv,
		Bucket: s3test.NewBucket(t, srv),
		Sizes:  []int64{12 << 20},
		Kinds:  []string{SourceStream, SourceReaderAt},
		Runs:   1,
		Params: params,
		Dir:    t.TempDir(),
		Exec:   InProcess{},
		Log:    tlog{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Impls()) * 2; len(recs) != want {
		t.Fatalf("got %d records, want %d (one per implementation and source kind)", len(recs), want)
	}
	// The CLI rows kept what they learned in the run's own cache directory.
	if kept, err := os.ReadDir(filepath.Join(params.CLICacheDir, "safeput", "endpoints")); err != nil || len(kept) != 1 {
		t.Errorf("the CLI's cache directory holds %v (%v), want one entry", kept, err)
	}
	rows := Summarize(recs)
	verdicts := Evaluate(rows, params)
	if len(verdicts) != 5*2*4 {
		t.Errorf("got %d verdicts, want 40 (5 safeput: 2 profile, 3 defaults × 2 kinds × 4 targets)", len(verdicts))
	}
	md := Markdown(Env{Command: "test", Params: params, Runs: 1}, rows, verdicts)
	for _, im := range Impls() {
		if !strings.Contains(md, "| "+im.Name+" |") {
			t.Errorf("report lacks %s:\n%s", im.Name, md)
		}
	}
}

// buildCLI builds the safeput CLI for the safeput-cli rows.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "safeput")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "cmd", "safeput")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the CLI: %v\n%s", err, out)
	}
	return bin
}

// TestSigningSDKDefault checks that the peers also work with the SDKs' plain-HTTP signing (the
// PEER_SIGNING=sdk-default variant), on a stream, where the SDKs have the least to work with.
func TestSigningSDKDefault(t *testing.T) {
	srv := s3test.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := Run(ctx, Config{
		Server: srv,
		Bucket: s3test.NewBucket(t, srv),
		Sizes:  []int64{11 << 20},
		Kinds:  []string{SourceStream, SourceReaderAt},
		Impls:  []string{"transfermanager", "manager", "minio-go"},
		Runs:   1,
		Params: Params{PartSize: 5 << 20, Concurrency: 2, Signing: SigningSDKDefault},
		Dir:    t.TempDir(),
		Exec:   InProcess{},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	p := Params{PartSize: 16 << 20, Concurrency: 4}
	rows := []Row{
		{Impl: "safeput/aws", Role: RoleSafeput, Size: 1, Kind: SourceStream, MiBps: 130, CPUPerGiB: 1, PeakBytes: 70 << 20},
		{Impl: "manager", Role: RolePeer, Size: 1, Kind: SourceStream, MiBps: 100, CPUPerGiB: 2},
		{Impl: "minio-go", Role: RolePeer, Size: 1, Kind: SourceStream, MiBps: 90, CPUPerGiB: 0.5},
		{Impl: "raw-put", Role: RoleCeiling, Size: 1, Kind: SourceStream, MiBps: 200},
	}
	got := map[string]bool{}
	for _, v := range Evaluate(rows, p) {
		got[v.Target] = v.Met
	}
	want := map[string]bool{
		"throughput ≥ 1.3× best peer":                true,
		"throughput ≥ 85 % of raw single PUT":        false,
		"peak memory ≤ 4 × 16 MiB + 16 MiB = 80 MiB": true,
		"CPU per GiB lower than every peer":          false,
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%q: met=%v (present %v), want %v; all: %v", k, g, ok, w, got)
		}
	}
}

// tlog sends the harness's progress lines to the test log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
