package writer

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxStructFields bounds every struct of the package: a type with more fields than this holds
// more than one step's state, which is what made Writer hard to change (issue 53).
const maxStructFields = 20

// oversizedStructs are the structs allowed past the bound, and why.
var oversizedStructs = map[string]string{
	"Result":  "exported: its fields are the public API (25 at v0.1.0)",
	"Options": "exported: one field per setting, as aws-sdk-go-v2's Options (29 at v0.1.0)",
}

// TestStructFieldBound parses the package's source and fails on a struct type with more fields
// than maxStructFields (an embedded type counts as one field).
func TestStructFieldBound(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := spec.Type.(*ast.StructType)
			if !ok {
				return true
			}
			checked++
			got := st.Fields.NumFields()
			if why, ok := oversizedStructs[spec.Name.Name]; ok {
				t.Logf("%s: struct %s has %d fields, allowed past %d: %s", fset.Position(spec.Pos()), spec.Name.Name, got, maxStructFields, why)
				return true
			}
			if got > maxStructFields {
				t.Errorf("%s: struct %s has %d fields, more than %d: split it by step into named sub-structs",
					fset.Position(spec.Pos()), spec.Name.Name, got, maxStructFields)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no struct found: the test is not reading the package's source")
	}
}
