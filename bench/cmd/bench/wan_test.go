package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/safeput/safeput/bench"
)

// A full run rewrites BENCHMARKS.md from its own report: the last WAN section must survive it.
func TestKeepWANCarriesTheSectionOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if got := keepWAN(path, "# fresh\n"); got != "# fresh\n" {
		t.Errorf("no file: %q", got)
	}
	old := bench.SpliceWAN("# old\n", "## Over a wide-area link (emulated)\n\nrows\n")
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	got := keepWAN(path, "# fresh\n")
	if !strings.HasPrefix(got, "# fresh\n") || strings.Contains(got, "# old") || !strings.Contains(got, "\nrows\n") {
		t.Errorf("keepWAN: %q", got)
	}
}

func TestWANLinkFlags(t *testing.T) {
	lc, err := wanOptions{rate: "1Gbit", window: "4MiB", rtt: 40 * time.Millisecond}.link()
	if err != nil || lc.Rate != 125_000_000 || lc.Window != 4<<20 || lc.RTT != 40*time.Millisecond {
		t.Errorf("link() = %+v, %v", lc, err)
	}
	for _, bad := range []wanOptions{{rate: "fast", window: "4MiB"}, {rate: "1Gbit", window: "0"}, {rate: "1Gbit", window: "4MiB", rtt: -time.Second}} {
		if _, err := bad.link(); err == nil {
			t.Errorf("link() of %+v succeeded", bad)
		}
	}
}
