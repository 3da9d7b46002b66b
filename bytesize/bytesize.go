// Package bytesize reads and prints byte sizes in binary and decimal units, exactly, for the
// multipart rules, the CLI and the C ABI.
//
// It is our own because a provider's limits must print and parse back to the same number (a
// rules string is the rules: Rules.String parses to equal Rules), and the usual library,
// go-humanize, rounds to one decimal: of the 14 distinct limits in the profile table, its
// IBytes/ParseBytes give back another number for 8 and Bytes/ParseBytes for 11 ("5 GB" prints as
// "4.7 GiB" and reads back as 5046586572); it also takes "1.5GiB", which this package refuses
// rather than round. The figure, and that it still holds, come from
// cd bench && go test -run TestByteSizeAgainstHumanize -v .
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte units. Vendors mix binary (MiB) and decimal (MB) units, so both are spelled out; the
// decimal ones and those past TiB are unexported (Parse and Format know them all).
const (
	KiB  int64 = 1 << 10
	MiB  int64 = 1 << 20
	GiB  int64 = 1 << 30
	TiB  int64 = 1 << 40
	pebi int64 = 1 << 50
	exbi int64 = 1 << 60

	kilo int64 = 1e3
	mega int64 = 1e6
	giga int64 = 1e9
	tera int64 = 1e12
	peta int64 = 1e15
	exa  int64 = 1e18
)

// unlimited is a size with no limit: the largest int64, so min/max arithmetic needs no special
// case. Format prints it as "unlimited" and Parse reads that back.
const unlimited int64 = math.MaxInt64

type unit struct {
	name string
	size int64
}

// Largest first. Format uses the largest unit, binary or decimal, that divides the value
// exactly, so 5<<20 prints as "5 MiB" and 5e12 as "5 TB", and every output parses back exactly.
var (
	binaryUnits  = []unit{{"EiB", exbi}, {"PiB", pebi}, {"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}
	decimalUnits = []unit{{"EB", exa}, {"PB", peta}, {"TB", tera}, {"GB", giga}, {"MB", mega}, {"KB", kilo}}
)

// Format renders n exactly, in the largest unit that divides it: Format(5<<20) ==
// "5 MiB", Format(5e9) == "5 GB", Format(1000001) == "1000001 B". Parse reverses it.
func Format(n int64) string {
	switch {
	case n == unlimited:
		return "unlimited"
	case n == 0:
		return "0 B"
	case n < 0:
		if n == math.MinInt64 {
			return strconv.FormatInt(n, 10) + " B"
		}
		return "-" + Format(-n)
	}
	best := unit{"B", 1}
	for _, units := range [][]unit{binaryUnits, decimalUnits} {
		for _, u := range units {
			if n%u.size == 0 {
				if u.size > best.size {
					best = u
				}
				break
			}
		}
	}
	return strconv.FormatInt(n/best.size, 10) + " " + best.name
}

// Parse reads a non-negative whole number of bytes with an optional unit: "5MiB", "5 MiB",
// "100KB", "5368709120", "7 B", "unlimited". Units are case-insensitive; KiB..EiB are binary and
// KB..EB decimal. Fractions are rejected rather than rounded, so a limit is never silently changed.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "unlimited") {
		return unlimited, nil
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: want a non-negative whole number with an optional unit (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: number out of range", s)
	}
	name := strings.TrimSpace(t[i:])
	mult := int64(1)
	if name != "" && !strings.EqualFold(name, "B") {
		mult = 0
		for _, units := range [][]unit{binaryUnits, decimalUnits} {
			for _, u := range units {
				if strings.EqualFold(name, u.name) {
					mult = u.size
				}
			}
		}
		if mult == 0 {
			return 0, fmt.Errorf("size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, PiB, EiB, KB, MB, GB, TB, PB, EB)", s, name)
		}
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: larger than %d bytes", s, int64(math.MaxInt64))
	}
	return n * mult, nil
}
