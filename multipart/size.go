package multipart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte units. Vendors mix binary (MiB) and decimal (MB) units, so both are spelled out.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
	PiB int64 = 1 << 50
	EiB int64 = 1 << 60

	KB int64 = 1e3
	MB int64 = 1e6
	GB int64 = 1e9
	TB int64 = 1e12
	PB int64 = 1e15
	EB int64 = 1e18
)

// Unlimited marks a size limit the store does not have (Garage documents none). It is the
// largest int64, so min/max arithmetic needs no special case; FormatSize prints it as "unlimited".
const Unlimited int64 = math.MaxInt64

type unit struct {
	name string
	size int64
}

// Largest first. FormatSize uses the largest unit, binary or decimal, that divides the value
// exactly, so 5<<20 prints as "5 MiB" and 5e12 as "5 TB", and every output parses back exactly.
var (
	binaryUnits  = []unit{{"EiB", EiB}, {"PiB", PiB}, {"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}
	decimalUnits = []unit{{"EB", EB}, {"PB", PB}, {"TB", TB}, {"GB", GB}, {"MB", MB}, {"KB", KB}}
)

// FormatSize renders n exactly, in the largest unit that divides it: FormatSize(5<<20) ==
// "5 MiB", FormatSize(5e9) == "5 GB", FormatSize(1000001) == "1000001 B". ParseSize reverses it.
func FormatSize(n int64) string {
	switch {
	case n == Unlimited:
		return "unlimited"
	case n == 0:
		return "0 B"
	case n < 0:
		if n == math.MinInt64 {
			return strconv.FormatInt(n, 10) + " B"
		}
		return "-" + FormatSize(-n)
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

// compactSize is FormatSize without the space, for the comma-separated rules string.
func compactSize(n int64) string { return strings.ReplaceAll(FormatSize(n), " ", "") }

// ParseSize reads a non-negative whole number of bytes with an optional unit: "5MiB", "5 MiB",
// "100KB", "5368709120", "7 B", "unlimited". Units are case-insensitive; KiB..EiB are binary and
// KB..EB decimal. Fractions are rejected rather than rounded, so a limit is never silently changed.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "unlimited") {
		return Unlimited, nil
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

// Saturating arithmetic: limits may be Unlimited, and a plan must never wrap around.
func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0, without overflow.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// roundUp rounds a up to a multiple of m, or returns a unchanged if that would overflow.
func roundUp(a, m int64) int64 {
	r := a % m
	if r == 0 {
		return a
	}
	if a > math.MaxInt64-(m-r) {
		return a
	}
	return a + m - r
}
