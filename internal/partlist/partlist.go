// Package partlist holds the ListParts rules both store adapters apply, so an answer means the
// same through either (store.Store's ListParts doc states them): one place to change, not two.
package partlist

import (
	"fmt"
	"slices"
	"strings"

	"github.com/safeput/safeput/store"
)

// MaxPages bounds a listing so a store that keeps answering "truncated" cannot loop forever.
const MaxPages = 100_000

// ETag strips surrounding spaces and one pair of double quotes.
func ETag(raw string) string {
	s := strings.TrimSpace(raw)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// Entry checks one listed entry (its part number, as listed, and its ETag, already through
// ETag) and says what is wrong with it, or "" when nothing is.
func Entry(number int64, hasNumber bool, etag string) string {
	switch {
	case !hasNumber:
		return "part listed without a part number"
	case number < 1 || number > store.MaxPartNumber:
		return fmt.Sprintf("part number %d listed, outside 1..%d", number, store.MaxPartNumber)
	case etag == "":
		return fmt.Sprintf("part %d listed without an ETag", number)
	}
	return ""
}

// NextMarker checks a truncated page's next marker against the one it was asked with, on
// page number page (0-based); it says what is wrong, or "" when the listing may go on.
func NextMarker(next, marker int64, ok bool, page int) string {
	switch {
	case !ok:
		return fmt.Sprintf("truncated part listing without a usable next part-number marker after %d", marker)
	case next <= marker:
		return fmt.Sprintf("truncated part listing with next part-number marker %d, not after %d", next, marker)
	case page+1 >= MaxPages:
		return fmt.Sprintf("part listing still truncated after %d pages", MaxPages)
	}
	return ""
}

// Sort orders parts by number; entries of one number keep their listed order (stable).
func Sort(parts []store.Part) {
	slices.SortStableFunc(parts, func(a, b store.Part) int { return int(a.PartNumber) - int(b.PartNumber) })
}
