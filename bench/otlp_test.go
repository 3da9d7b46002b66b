package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// What the official OTLP exporters must still cost for the CLI's own encoder to be worth keeping:
// the bounds cmd/safeput/internal/otlp's package doc states.
const (
	officialBinaryOver = 10 << 20 // bytes added to the binary
	officialRSSOver    = 4 << 20  // bytes added to the resident memory at start
)

// TestOTLPEncoderAgainstExporters keeps the reason the CLI encodes OTLP itself
// (cmd/safeput/internal/otlp, whose package doc quotes this test's bounds): the official
// OTLP/HTTP exporters link gRPC, grpc-gateway and the protobuf registry, which the CLI does not,
// and they add more than officialBinaryOver to a binary and officialRSSOver to its resident
// memory at start. It builds and runs two programs that differ only by those exporters
// (internal/otlpcost) and logs what they measure; it fails when the exporters stop costing that,
// or when the CLI starts linking what its encoder was written to leave out.
func TestOTLPEncoderAgainstExporters(t *testing.T) {
	heavy := []string{"google.golang.org/grpc", "github.com/grpc-ecosystem/grpc-gateway/v2/runtime", "google.golang.org/protobuf/reflect/protoregistry"}
	cli := goListDeps(t, "github.com/safeput/safeput/cmd/safeput")
	official := goListDeps(t, "./internal/otlpcost/official")
	for _, pkg := range heavy {
		if slices.Contains(cli, pkg) {
			t.Errorf("the CLI links %s, which its own OTLP encoder exists to leave out", pkg)
		}
		if !slices.Contains(official, pkg) {
			t.Errorf("the official exporters no longer link %s: check whether the CLI's own OTLP encoder still earns its keep (cmd/safeput/internal/otlp)", pkg)
		}
	}
	if testing.Short() {
		t.Skip("-short: the binaries are not built")
	}
	dir := t.TempDir()
	size := map[string]int64{}
	rss := map[string]int64{}
	for _, prog := range []string{"sdk", "official"} {
		bin := filepath.Join(dir, prog)
		build := exec.Command("go", "build", "-o", bin, "./internal/otlpcost/"+prog)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", prog, err, out)
		}
		fi, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		size[prog] = fi.Size()
		out, err := exec.Command(bin).Output()
		if err != nil {
			t.Fatalf("running %s: %v\n%s", prog, err, out)
		}
		rss[prog] = vmRSS(string(out))
	}
	binary := size["official"] - size["sdk"]
	t.Logf("the official OTLP exporters add %.1f MB to the binary (%d → %d bytes)", float64(binary)/1e6, size["sdk"], size["official"])
	if binary <= officialBinaryOver {
		t.Errorf("the official exporters add %d bytes to the binary, not more than %d: the CLI's OTLP package doc overstates them", binary, officialBinaryOver)
	}
	if rss["sdk"] == 0 || rss["official"] == 0 {
		t.Logf("no resident memory reported on %s: not compared", runtime.GOOS)
		return
	}
	resident := rss["official"] - rss["sdk"]
	t.Logf("and %.1f MiB to the resident memory at start (%d → %d KiB)", float64(resident)/(1<<20), rss["sdk"]>>10, rss["official"]>>10)
	if resident <= officialRSSOver {
		t.Errorf("the official exporters add %d bytes to the resident memory at start, not more than %d: the CLI's OTLP package doc overstates them", resident, officialRSSOver)
	}
}

// goListDeps lists the packages pkg links, as the workspace builds it.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// vmRSS reads the "VmRSS: N kB" line a program of internal/otlpcost prints, in bytes (0: none).
func vmRSS(out string) int64 {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}
