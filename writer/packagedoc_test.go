package writer

import (
	"os"
	"regexp"
	"testing"
)

// TestPackageDocNamesRealFiles: every file the package documentation's map of a write names
// (writer.go's comments) is in the package, so the map cannot point at a file renamed or gone.
func TestPackageDocNamesRealFiles(t *testing.T) {
	src, err := os.ReadFile("writer.go")
	if err != nil {
		t.Fatal(err)
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
