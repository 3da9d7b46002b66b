package bench

import (
	"os"
	"strings"
	"testing"
)

// committedReport reads ../BENCHMARKS.md and splits off its generated analysis.
func committedReport(t *testing.T) (tables, analysis string, r Report) {
	t.Helper()
	b, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	md, _ := CutCLIMem(string(b))
	i := strings.Index(md, "## Latest run")
	j := strings.Index(md, AnalysisHeading)
	if i < 0 || j < i {
		t.Fatalf("BENCHMARKS.md lacks %q followed by %q", "## Latest run", AnalysisHeading)
	}
	tables, analysis = md[i:j], md[j:]
	r, err = ParseReport(tables)
	if err != nil {
		t.Fatalf("BENCHMARKS.md tables: %v", err)
	}
	return tables, analysis, r
}

// Every figure in BENCHMARKS.md's analysis must be the one its own tables give: the analysis is
// regenerated from the committed tables and compared. Fix with
// `cd bench && go run ./cmd/bench -reanalyse ../BENCHMARKS.md`.
func TestBenchmarksProseMatchesTables(t *testing.T) {
	tables, analysis, r := committedReport(t)
	if want := Analysis(r); analysis != want {
		t.Errorf("BENCHMARKS.md analysis differs from what its tables give; run `go run ./cmd/bench -reanalyse ../BENCHMARKS.md` in bench/. Want:\n%s\ngot:\n%s", want, analysis)
	}
	var impls []string
	for _, row := range r.Rows {
		impls = append(impls, row.Impl)
	}
	if want := IntegrityTable(r.Params, impls); !strings.Contains(tables, want) {
		t.Errorf("BENCHMARKS.md integrity table is not the implementations' current one:\n%s", want)
	}
}

// README.md's benchmark sentence must carry BENCHMARKS.md's figures.
func TestReadmeBenchmarkFigures(t *testing.T) {
	_, _, r := committedReport(t)
	doc, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := ReadmeSummary(r); !strings.Contains(Normalize(string(doc)), Normalize(want)) {
		t.Errorf("README.md's benchmark paragraph does not carry BENCHMARKS.md's figures; replace its figures sentence with:\n%s", want)
	}
}

// The generator reads its own tables back for the analysis: the round trip must keep every
// figure the analysis uses.
func TestParseReportRoundTrip(t *testing.T) {
	p := Params{PartSize: 16 << 20, Concurrency: 4, Signing: SigningUnsigned}
	var rows []Row
	for j, srv := range DefaultServers {
		for i, im := range Impls() {
			rows = append(rows, Row{Server: srv, Impl: im.Name, Role: im.Role, Size: 1 << 30, Kind: SourceStream, Runs: 1,
				MiBps: 100 + float64(i) + float64(j)*50, MinMiBps: 90, MaxMiBps: 110, CPUPerGiB: 0.5 + float64(i)/10, ServerCPUPerGiB: 4.25 - 3*float64(j),
				PeakBytes: int64(20+i) << 20, IdleBytes: 11 << 20})
		}
	}
	md := Markdown(Env{Command: "test", Params: p, Runs: 1}, rows, Evaluate(rows, p))
	r, err := ParseReport(md)
	if err != nil {
		t.Fatal(err)
	}
	if r.Params != p || len(r.Rows) != len(rows) {
		t.Fatalf("parsed %+v with %d rows, want %+v with %d", r.Params, len(r.Rows), p, len(rows))
	}
	for i, got := range r.Rows {
		want := rows[i]
		peer, ceiling, _ := Ratios(rows, want)
		if got.Server != want.Server || got.Impl != want.Impl || got.Size != want.Size || got.Kind != want.Kind || got.MiBps != want.MiBps ||
			got.CPU != want.CPUPerGiB || got.ServerCPU != want.ServerCPUPerGiB || got.PeakMiB != mib(want.PeakBytes) ||
			got.IdleMiB != mib(want.IdleBytes) || got.VsPeer != roundTo(peer, 100) || got.VsRawPct != roundTo(ceiling*100, 1) {
			t.Errorf("row %d parsed as %+v from %+v", i, got, want)
		}
	}
	a := Analysis(r)
	for _, srv := range DefaultServers {
		if !strings.Contains(a, "### On "+srv+"\n") {
			t.Errorf("analysis lacks a section for %s:\n%s", srv, a)
		}
	}
	if strings.Count(a, "safeput runs at") != len(DefaultServers) {
		t.Errorf("analysis lacks a server's throughput figures:\n%s", a)
	}
	// Ratios compare within one server's table only.
	if r.Rows[0].VsPeer == r.Rows[len(Impls())].VsPeer {
		t.Errorf("both servers' safeput rows have ratio %v: compared across servers?", r.Rows[0].VsPeer)
	}
	if sum := ReadmeSummary(r); !strings.Contains(sum, "On minio safeput") || !strings.Contains(sum, "On versitygw safeput") {
		t.Errorf("README summary lacks a server: %s", sum)
	}
}

func roundTo(v, scale float64) float64 { return float64(int64(v*scale+0.5)) / scale }
