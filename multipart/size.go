package multipart

import (
	"math"
	"strings"

	"github.com/safeput/safeput/bytesize"
)

// unlimited marks a size limit the store does not have (Garage documents none). It is the
// largest int64, so min/max arithmetic needs no special case; Rules print it as "unlimited".
const unlimited int64 = math.MaxInt64

// Decimal units, as vendors state many limits ("5 GB"); bytesize parses and prints them.
const (
	kb int64 = 1e3
	mb int64 = 1e6
	gb int64 = 1e9
	tb int64 = 1e12
)

// compactSize is bytesize.Format without the space, for the comma-separated rules string.
func compactSize(n int64) string { return strings.ReplaceAll(bytesize.Format(n), " ", "") }

// Saturating arithmetic: limits may be unlimited, and a plan must never wrap around.
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
