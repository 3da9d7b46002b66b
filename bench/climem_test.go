package bench

import (
	"strings"
	"testing"
)

// Each generated section of BENCHMARKS.md is spliced in between its own markers: appended once,
// replaced after, nothing outside it touched, the markers never doubled.
func TestSpliceReplacesOnlyItsSection(t *testing.T) {
	for _, c := range []struct {
		name       string
		splice     func(doc, section string) string
		begin, end string
	}{
		{"CLI memory", SpliceCLIMem, CLIMemBegin, CLIMemEnd},
		{"WAN", SpliceWAN, WANBegin, WANEnd},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := "# Benchmarks\n\nintro\n"
			once := c.splice(doc, "## Section\n\nold rows\n")
			if !strings.HasPrefix(once, doc) || !strings.Contains(once, "old rows") {
				t.Fatalf("first splice did not append the section:\n%s", once)
			}
			twice := c.splice(once+"trailer\n", "## Section\n\nnew rows\n")
			if strings.Contains(twice, "old rows") || !strings.Contains(twice, "new rows") {
				t.Fatalf("second splice did not replace the section:\n%s", twice)
			}
			if !strings.HasPrefix(twice, doc) || !strings.HasSuffix(twice, "trailer\n") {
				t.Fatalf("second splice changed text outside the section:\n%s", twice)
			}
			if strings.Count(twice, c.begin) != 1 || strings.Count(twice, c.end) != 1 {
				t.Fatalf("markers duplicated:\n%s", twice)
			}
		})
	}
}

func TestCLIMemMarkdownFlagsRowsOverTheBound(t *testing.T) {
	cfg := CLIMemConfig{PartSize: 16 << 20, Concurrency: 4}
	recs := []CLIMemRecord{
		{Server: "s", Backend: "aws", Size: 1 << 30, Run: 1, PeakRSS: 70 << 20, Seconds: 8},
		{Server: "s", Backend: "aws", Size: 1 << 30, Run: 2, PeakRSS: 79 << 20, Seconds: 8},
		{Server: "s", Backend: "aws", Size: 4 << 30, Run: 1, PeakRSS: 81 << 20, Seconds: 32},
	}
	md := CLIMemMarkdown(cfg, "cmd", "date", recs)
	for _, want := range []string{
		"| s | aws | 1 GiB | 2 | 79.0 | 80 | yes |", // the worst of two runs
		"| s | aws | 4 GiB | 1 | 81.0 | 80 | **no** |",
		"s, aws: 1 GiB → 4 GiB changes the peak by +2.0 MiB",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
