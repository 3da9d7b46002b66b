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
	md, _ := CutWAN(string(b))
	md, _ = CutFlush(md)
	md, _ = CutCLIMem(md)
	md, _ = CutTLS(md)
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

// README.md's block of benchmark figures must be the one BENCHMARKS.md's latest run gives, with
// that run's date and command: every figure the README shows comes from the committed report.
// SAFEPUT_UPDATE_README=1 rewrites the block instead.
func TestReadmeBenchmarkFigures(t *testing.T) {
	_, _, r := committedReport(t)
	if r.Date == "" || r.Command == "" {
		t.Fatalf("BENCHMARKS.md's latest run has no date or command: %q, %q", r.Date, r.Command)
	}
	const path = "../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, ReadmeBegin)
	j := strings.Index(doc, ReadmeEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no benchmark figures markers %q ... %q", ReadmeBegin, ReadmeEnd)
	}
	got, want := doc[i:j+len(ReadmeEnd)], ReadmeBlock(r)
	if got == want {
		return
	}
	if os.Getenv("SAFEPUT_UPDATE_README") == "1" {
		if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j+len(ReadmeEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md benchmark figures rewritten")
		return
	}
	t.Errorf("README.md's benchmark figures are not BENCHMARKS.md's; regenerate them with\n"+
		"  cd bench && SAFEPUT_UPDATE_README=1 go test -count=1 -run TestReadmeBenchmarkFigures .\nwant:\n%s", want)
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
	md := Markdown(Env{Command: "test", Params: p, Runs: 1, Machine: "Some CPU, 3 cores, 8.0 GiB RAM, linux/amd64"}, rows, Evaluate(rows, p))
	r, err := ParseReport(md)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cores != 3 {
		t.Errorf("parsed %d cores from the machine line, want 3", r.Cores)
	}
	if r.Params != p || len(r.Rows) != len(rows) {
		t.Fatalf("parsed %+v with %d rows, want %+v with %d", r.Params, len(r.Rows), p, len(rows))
	}
	for i, got := range r.Rows {
		want := rows[i]
		peer, ceiling, _ := Ratios(rows, want)
		if got.Server != want.Server || got.Impl != want.Impl || got.Size != want.Size || got.Kind != want.Kind || got.MiBps != want.MiBps ||
			got.MinMiBps != want.MinMiBps || got.MaxMiBps != want.MaxMiBps ||
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
	if r.Command != "test" {
		t.Errorf("parsed command %q, want %q", r.Command, "test")
	}
}

func roundTo(v, scale float64) float64 { return float64(int64(v*scale+0.5)) / scale }

// The both-sides CPU bullet: the bound is cores / (client + server CPU per GiB), and the pairs
// count says how often the lower sum was the faster upload, within one table only.
func TestCPUBound(t *testing.T) {
	row := func(impl string, role Role, size int64, mibps, cpu, srv float64) TableRow {
		return TableRow{Server: "minio", Impl: impl, Role: role, Size: size, Kind: SourceStream, MiBps: mibps, CPU: cpu, ServerCPU: srv}
	}
	r := Report{Cores: 2, Rows: []TableRow{
		row("safeput/aws", RoleSafeput, 1<<30, 512, 1, 3),  // bound 512 MiB/s: 100 %
		row("minio-go", RolePeer, 1<<30, 128, 1.5, 2.5),    // sum 4, equal to safeput's: not a pair; 25 %
		row("manager", RolePeer, 1<<30, 200, 2, 6),         // sum 8, yet faster than minio-go: disagrees
		row("raw-put", RoleCeiling, 1<<30, 900, 0.1, 0.1),  // not a multipart uploader
		row("safeput/aws", RoleSafeput, 1<<20, 128, 1, 7),  // another table: bound 256, 50 %
		row("transfermanager", RolePeer, 1<<20, 64, 2, 14), // sum 16 against 8: agrees
	}}
	agree, pairs := r.rankedBySum()
	// Pairs with differing sums: (safeput, manager) agrees, (minio-go, manager) disagrees, and
	// (safeput, transfermanager) in the small table agrees.
	if agree != 2 || pairs != 3 {
		t.Errorf("rankedBySum = %d of %d, want 2 of 3", agree, pairs)
	}
	got := r.cpuBound()
	for _, want := range []string{"safeput/aws 4.00–8.00", "minio-go 4.00.", "manager 8.00", "transfermanager 16.00", "On 2 shared cores", "faster than 2 divided by that sum, in GiB/s", "at 25–100 % of that bound", "in 2 of 3 pairs"} {
		if !strings.Contains(got, want) {
			t.Errorf("cpuBound lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "raw-put") {
		t.Errorf("cpuBound counts the single-PUT ceiling:\n%s", got)
	}
	if (Report{Rows: r.Rows}).cpuBound() != "" {
		t.Error("cpuBound without a core count wrote a bullet")
	}
}

// The defaults rows below the throughput target are sorted by what their table shows: a higher
// client+server CPU sum than the best peer's (with the ratio of sums as the bound), a range of
// runs overlapping the best peer's, or neither, named.
func TestMissedBound(t *testing.T) {
	row := func(impl string, role Role, defaults bool, kind string, mibps, lo, hi, vs, cpu, srv float64) TableRow {
		return TableRow{Server: "minio", Impl: impl, Role: role, Defaults: defaults, Size: 1 << 30, Kind: kind,
			MiBps: mibps, MinMiBps: lo, MaxMiBps: hi, VsPeer: vs, CPU: cpu, ServerCPU: srv}
	}
	r := Report{Cores: 2, Rows: []TableRow{
		row("minio-go", RolePeer, false, SourceReaderAt, 600, 580, 620, 1, 0.5, 2.5),
		row("manager", RolePeer, false, SourceReaderAt, 400, 390, 410, 0.67, 1.5, 3),
		row("safeput-defaults/aws", RoleSafeput, true, SourceReaderAt, 540, 500, 560, 0.9, 0.5, 2.8),    // sum 3.3 > 3: bound 0.91
		row("safeput-defaults/minio", RoleSafeput, true, SourceReaderAt, 590, 560, 600, 0.98, 0.4, 2.5), // sum 2.9, overlaps
		row("safeput-cli", RoleSafeput, true, SourceReaderAt, 610, 600, 640, 1.02, 0.6, 2.6),            // met: not counted
		row("minio-go", RolePeer, false, SourceStream, 600, 590, 610, 1, 1, 2),
		row("safeput-defaults/aws", RoleSafeput, true, SourceStream, 500, 480, 520, 0.83, 0.9, 2), // sum 2.9, slower in every run
	}}
	var rows []TableRow
	for _, x := range r.Rows {
		if isDefaults(x) {
			rows = append(rows, x)
		}
	}
	all := func(TableRow) bool { return true }
	got := r.missedBound(rows, all, 1, "the best peer")
	for _, want := range []string{
		"Of the 3 rows below 1.0×, 1 cost this machine more CPU per GiB",
		"(3.30 s against 3.00)", "put them at 0.91× it, and they ran at 0.90×",
		"client spent 0.50 s/GiB against that peer's 0.50, the server 2.80 against 2.50",
		"Of the rest, 1 cost no more than the best peer",
		"1 (minio 1 GiB stream safeput-defaults/aws) cost no more than the best peer and ran slower in every run",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missedBound lacks %q:\n%s", want, got)
		}
	}
	if got := (Report{Rows: r.Rows[:2]}).missedBound(nil, all, 1, "the best peer"); got != "" {
		t.Errorf("no rows missed, yet: %q", got)
	}

	// At equal integrity minio-go (no checksum) is left out: the readerat rows compare with
	// manager, and the stream row has no checksummed peer in its table.
	eq := r.equalIntegrityBullet()
	for _, want := range []string{
		"transfermanager, transfermanager+full-crc32, manager and minio-go+crc32c; minio-go at its defaults sends none",
		"safeput at 1.35–1.53× that peer (manager), ≥ 1.0× in 3 of 3 rows.",
	} {
		if !strings.Contains(eq, want) {
			t.Errorf("equalIntegrityBullet lacks %q:\n%s", want, eq)
		}
	}
	if strings.Contains(eq, "Of the") {
		t.Errorf("equalIntegrityBullet sorts rows that met the target:\n%s", eq)
	}
	r.Rows = append(r.Rows, row("minio-go+crc32c", RolePeer, false, SourceReaderAt, 700, 690, 710, 1.17, 0.5, 2.2))
	eq = r.equalIntegrityBullet()
	for _, want := range []string{"safeput at 0.77–0.87× that peer (minio-go+crc32c), ≥ 1.0× in 0 of 3 rows.", "Of the 3 rows below 1.0×, 3 cost this machine more"} {
		if !strings.Contains(eq, want) {
			t.Errorf("equalIntegrityBullet lacks %q:\n%s", want, eq)
		}
	}
}
