package bench

import (
	"math"
	"slices"
	"testing"

	"github.com/dustin/go-humanize"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/multipart"
)

// TestByteSizeAgainstHumanize keeps the reason bytesize is the library's own (its package doc
// quotes this test's figure): a provider's limits and a rules string must print and parse back
// exactly, and go-humanize, the usual choice, rounds to one decimal. Over every limit in the
// profile table, bytesize gives back each value; humanize's IBytes/ParseBytes and
// Bytes/ParseBytes give back another number for some of them.
func TestByteSizeAgainstHumanize(t *testing.T) {
	var limits []int64
	for _, name := range multipart.ProfileNames() {
		r, err := multipart.Profile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []int64{r.MinPartSize, r.MaxPartSize, r.MaxObjectSize, r.MaxSinglePut} {
			if v > 0 && v != math.MaxInt64 && !slices.Contains(limits, v) {
				limits = append(limits, v)
			}
		}
	}
	if len(limits) < 10 {
		t.Fatalf("only %d distinct limits in the profile table: the test reads it wrong", len(limits))
	}
	lostIEC, lostSI := 0, 0
	for _, v := range limits {
		if back, err := bytesize.Parse(bytesize.Format(v)); err != nil || back != v {
			t.Errorf("bytesize: %d -> %q -> %d, %v", v, bytesize.Format(v), back, err)
		}
		if back, err := humanize.ParseBytes(humanize.IBytes(uint64(v))); err != nil || back != uint64(v) {
			lostIEC++
			t.Logf("humanize IBytes: %d -> %q -> %d", v, humanize.IBytes(uint64(v)), back)
		}
		if back, err := humanize.ParseBytes(humanize.Bytes(uint64(v))); err != nil || back != uint64(v) {
			lostSI++
			t.Logf("humanize Bytes: %d -> %q -> %d", v, humanize.Bytes(uint64(v)), back)
		}
	}
	t.Logf("of %d distinct limits in the profile table, bytesize gives back all; humanize's IBytes gives back %d other numbers, Bytes %d", len(limits), lostIEC, lostSI)
	if lostIEC == 0 && lostSI == 0 {
		t.Error("humanize round-trips every limit now: bytesize's reason to exist (its package doc) no longer holds")
	}
	// A fraction is a limit silently changed: bytesize refuses it, humanize rounds it.
	if _, err := bytesize.Parse("1.5GiB"); err == nil {
		t.Error("bytesize accepted a fraction")
	}
}
