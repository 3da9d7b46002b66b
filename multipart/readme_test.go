package multipart

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/safeput/safeput/bytesize"
)

// profileTable renders the profile table of README.md from the profile data, so the
// document cannot drift from the code.
func profileTable() string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var b strings.Builder
	b.WriteString("| Profile | Min part | Max part | Max parts | Max object | Max single PUT | Layout | x-amz-checksum (multipart types) | Content-MD5 | If-None-Match: * PUT / Complete |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, name := range ProfileNames() {
		r, _ := Profile(name)
		var layout []string
		if r.EqualParts {
			layout = append(layout, "equal parts")
		}
		if r.LastPartNotLarger {
			layout = append(layout, "last ≤ others")
		}
		if r.NonEmptyLastPart {
			layout = append(layout, "last ≥ 1 B")
		}
		if r.ContiguousPartNumbers {
			layout = append(layout, "contiguous numbers")
		}
		if len(layout) == 0 {
			layout = []string{"any"}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s / %s |\n", name,
			bytesize.Format(r.MinPartSize), bytesize.Format(r.MaxPartSize), r.MaxParts, bytesize.Format(r.MaxObjectSize),
			bytesize.Format(r.MaxSinglePut), strings.Join(layout, ", "), r.Checksums, yes(r.ContentMD5),
			yes(r.ConditionalPut), yes(r.ConditionalComplete))
	}
	return b.String()
}

func TestReadmeTable(t *testing.T) {
	doc, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := profileTable(); !strings.Contains(string(doc), want) {
		t.Errorf("README.md does not contain the current profile table; replace it with:\n%s", want)
	}
}
