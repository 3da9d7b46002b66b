package writer

import (
	"os"
	"regexp"
	"testing"
)

// TestPackageDocNamesRealFiles: every file the package documentation's flow of a write (doc.go)
// and its map of the files (writer.go's comments) name is in the package, so neither can point
// at a file renamed or gone.
func TestPackageDocNamesRealFiles(t *testing.T) {
	var src []byte
	for _, f := range []string{"doc.go", "writer.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	comment := regexp.MustCompile(`(?m)^//.*$`)
	file := regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)
	named := 0
	for _, line := range comment.FindAll(src, -1) {
		for _, name := range file.FindAll(line, -1) {
			named++
			if _, err := os.Stat(string(name)); err != nil {
				t.Errorf("writer.go's documentation names %s, which is not in the package: %v", name, err)
			}
		}
	}
	if named < 10 {
		t.Fatalf("the documentation names %d files; the map of a write is missing", named)
	}
}
