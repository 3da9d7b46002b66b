package errors

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the tables in doc.go from codeTable and statusTable")

// docRows renders rows as doc-comment code lines with aligned columns.
func docRows(rows [][]string) []string {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	out := make([]string, len(rows))
	for n, r := range rows {
		var b strings.Builder
		b.WriteString("//\t")
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len(c)+2))
			}
		}
		out[n] = strings.TrimRight(b.String(), " ")
	}
	return out
}

func codeDocBlock() []string {
	rows := [][]string{{"Code", "Status", "Kind", "Note"}}
	for _, r := range codeTable {
		kind := r.Kind.String()
		if r.OnComplete != Unknown {
			kind += "; Complete: " + r.OnComplete.String()
		}
		rows = append(rows, []string{r.Code, fmt.Sprint(r.Status), kind, r.Note})
	}
	return docRows(rows)
}

func statusDocBlock() []string {
	rows := [][]string{{"Status", "Kind", "Note"}}
	for _, r := range statusTable {
		rows = append(rows, []string{fmt.Sprint(r.Status), r.Kind.String(), r.Note})
	}
	return docRows(rows)
}

// replaceBlock swaps the code block whose first line starts with header for want.
func replaceBlock(lines []string, header string, want []string) ([]string, bool) {
	for i, l := range lines {
		if !strings.HasPrefix(l, header) {
			continue
		}
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "//\t") {
			j++
		}
		out := append(append(append([]string{}, lines[:i]...), want...), lines[j:]...)
		return out, true
	}
	return lines, false
}

// TestDocTable keeps the tables printed in doc.go equal to codeTable and statusTable.
func TestDocTable(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	got := lines
	var ok bool
	if got, ok = replaceBlock(got, "//\tCode ", codeDocBlock()); !ok {
		t.Fatal("doc.go has no code table (a line starting with //<tab>Code)")
	}
	if got, ok = replaceBlock(got, "//\tStatus ", statusDocBlock()); !ok {
		t.Fatal("doc.go has no status table (a line starting with //<tab>Status)")
	}
	want := []byte(strings.Join(got, "\n"))
	if bytes.Equal(want, src) {
		return
	}
	if *update {
		if err := os.WriteFile("doc.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("doc.go tables differ from codeTable/statusTable; run go test -run TestDocTable ./errors/ -args -update\nwant:\n%s\n%s",
		strings.Join(codeDocBlock(), "\n"), strings.Join(statusDocBlock(), "\n"))
}

// TestDocListsEveryRule checks every rule by name, independently of the rendering above.
func TestDocListsEveryRule(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	for _, r := range codeTable {
		if !strings.Contains(doc, "\t"+r.Code+" ") {
			t.Errorf("doc.go does not list code %s", r.Code)
		}
	}
	for _, r := range statusTable {
		if !strings.Contains(doc, fmt.Sprintf("\t%d ", r.Status)) {
			t.Errorf("doc.go does not list status %d", r.Status)
		}
	}
}
