package bytesize

import (
	"math"
	"strings"
	"testing"
)

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{KiB, "1 KiB"},
		{5 << 20, "5 MiB"},
		{5 * GiB, "5 GiB"},
		{5*GiB - 5*MiB, "5115 MiB"},
		{5 * giga, "5 GB"},
		{100 * KiB, "100 KiB"},
		{1000, "1 KB"},
		{1000001, "1000001 B"},
		{10000 * 5 * GiB, "50000 GiB"},
		{5 * tera, "5 TB"},
		{-5 * MiB, "-5 MiB"},
		{unlimited, "unlimited"},
		{math.MinInt64, "-9223372036854775808 B"},
	} {
		if got := Format(tc.n); got != tc.want {
			t.Errorf("Format(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"7", 7},
		{"7 B", 7},
		{"7b", 7},
		{"5MiB", 5 * MiB},
		{"5 MiB", 5 * MiB},
		{" 5mib ", 5 * MiB},
		{"5MB", 5 * mega},
		{"100KiB", 100 * KiB},
		{"100KB", 100 * kilo},
		{"5GiB", 5 * GiB},
		{"5GB", 5 * giga},
		{"5TiB", 5 * TiB},
		{"5TB", 5 * tera},
		{"2PiB", 2 * pebi},
		{"7EiB", 7 * exbi},
		{"unlimited", unlimited},
		{"9223372036854775807", unlimited},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, wantErr string }{
		{"", "non-negative whole number"},
		{"-1", "non-negative whole number"},
		{"MiB", "non-negative whole number"},
		{"1.5GiB", `unknown unit ".5GiB"`},
		{"5 XB", `unknown unit "XB"`},
		{"5 MiB B", `unknown unit`},
		{"8EiB", "larger than"},
		{"99999999999999999999", "out of range"},
		{"1e3", `unknown unit "e3"`},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 999, KiB, 5 * MiB, 5*GiB - 5*MiB, 5 * giga, 48800 * giga, 5*TiB - 5*GiB, unlimited, unlimited - 1, 3 * exbi} {
		s := Format(n)
		got, err := Parse(s)
		if err != nil || got != n {
			t.Errorf("Parse(Format(%d) = %q) = %d, %v", n, s, got, err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "5MiB", "5 MiB", "100KB", "unlimited", "9223372036854775807", "8EiB", "-1", "1.5GiB", " 7 b ", "5 MiB B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("Parse(%q) = %d", s, n)
		}
		back, err := Parse(Format(n))
		if err != nil || back != n {
			t.Fatalf("Format(%d) = %q does not round-trip: %d, %v", n, Format(n), back, err)
		}
	})
}
