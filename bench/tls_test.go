package bench

import (
	"os"
	"strings"
	"testing"
)

// tinyReport is a report of every implementation on every default server, with figures that
// differ by scale, as Markdown renders it.
func tinyReport(t *testing.T, scale float64) string {
	t.Helper()
	p := Params{PartSize: 16 << 20, Concurrency: 4, Signing: SigningUnsigned}
	var rows []Row
	for _, srv := range DefaultServers {
		for i, im := range Impls() {
			rows = append(rows, Row{Server: srv, Impl: im.Name, Role: im.Role, Defaults: im.Defaults, Size: 1 << 30, Kind: SourceStream, Runs: 1,
				MiBps: scale * (100 + float64(i)), MinMiBps: 90, MaxMiBps: 110, CPUPerGiB: scale * (0.5 + float64(i)/10), ServerCPUPerGiB: 2,
				PeakBytes: int64(20+i) << 20, IdleBytes: 11 << 20})
		}
	}
	return Markdown(Env{Command: "test", Params: p, Runs: 1, Machine: "Some CPU, 2 cores, 8.0 GiB RAM, linux/amd64"}, rows, Evaluate(rows, p))
}

// plainDoc is a document as a plain run writes it (a "# Head" header, tinyReport's tables and
// their analysis), with the report parsed from it.
func plainDoc(t *testing.T) (string, Report) {
	t.Helper()
	plainMD := tinyReport(t, 1)
	r, err := ParseReport(plainMD)
	if err != nil {
		t.Fatal(err)
	}
	return "# Head\n\n" + plainMD + Analysis(r), r
}

// A TLS run replaces only its own block, which sits before the CLI memory block, compares each
// row with the plain run's, and survives a plain run's reanalysis unchanged.
func TestTLSBlockSplicesAndCompares(t *testing.T) {
	doc, r := plainDoc(t)
	doc = SpliceCLIMem(doc, "## CLI memory\n\nfigures\n")

	blk, err := TLSBlock(tinyReport(t, 0.5), doc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(blk, TLSHeading) || strings.Contains(blk, "## Latest run") {
		t.Fatalf("TLS block's heading not renamed:\n%s", blk)
	}
	if !strings.Contains(blk, "| minio | 1 GiB | stream | safeput/aws | 100.0 → 50.0 (-50 %) | 0.50 → 0.25 |") {
		t.Errorf("TLS block lacks the comparison row for minio safeput/aws:\n%s", blk)
	}
	once := SpliceTLS(doc, blk)
	twice := SpliceTLS(once, blk)
	if once != twice || strings.Count(once, TLSBegin) != 1 {
		t.Fatalf("splicing twice changed the document or duplicated the block")
	}
	if i, j := strings.Index(once, TLSEnd), strings.Index(once, CLIMemBegin); i < 0 || j < i {
		t.Errorf("TLS block is not before the CLI memory block")
	}
	rest, got := CutTLS(once)
	if got != blk || rest != doc {
		t.Errorf("CutTLS does not undo SpliceTLS")
	}
	// The plain tables are parsed without the TLS block's.
	if p, ok := plainReport(once); !ok || len(p.Rows) != len(r.Rows) || p.Rows[0].MiBps != r.Rows[0].MiBps {
		t.Errorf("plain report read from the spliced document: %v rows (want %d)", len(p.Rows), len(r.Rows))
	}
	out, err := Reanalyse(once, "# Head\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if out != once {
		t.Errorf("reanalysis changed a document that was current:\n%s", out)
	}
}

// The committed BENCHMARKS.md's TLS comparison is the one its two runs' tables give.
func TestBenchmarksTLSBlockIsCurrent(t *testing.T) {
	b, err := os.ReadFile("../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, blk := CutTLS(string(b))
	if blk == "" {
		t.Fatal("BENCHMARKS.md has no TLS block (TLS=1 scripts/bench.sh makes it)")
	}
	want, err := RefreshTLSBlock(blk, string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want != blk {
		t.Errorf("BENCHMARKS.md's TLS block differs from what its tables give; run `go run ./cmd/bench -reanalyse ../BENCHMARKS.md` in bench/. Want:\n%s", want)
	}
}

// The integrity tables describe the implementations, not a measurement: a reanalysis brings
// both the plain run's and the TLS run's up to date with the code.
func TestReanalyseRefreshesBothIntegrityTables(t *testing.T) {
	doc, r := plainDoc(t)
	blk, err := TLSBlock(tinyReport(t, 0.5), doc)
	if err != nil {
		t.Fatal(err)
	}
	current := SpliceTLS(doc, blk)
	cli := cliIntegrity(r.Params)
	if strings.Count(current, cli) != 2 {
		t.Fatalf("want the CLI's description in both integrity tables, found %d", strings.Count(current, cli))
	}
	stale := strings.ReplaceAll(current, cli, "an old description")
	out, err := Reanalyse(stale, "# Head\n\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "an old description") || out != current {
		t.Errorf("reanalysis left a stale integrity description:\n%s", out)
	}
}
