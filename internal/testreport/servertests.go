package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// serverPackages are the test helpers through which a test reaches a real S3 server: a test that
// reaches none of them runs only against in-memory stores.
var serverPackages = []string{
	"github.com/safeput/safeput/storetest/s3test",
	"github.com/safeput/safeput/storetest/testkit",
	"github.com/safeput/safeput/storetest/wirekit",
}

// serverless are the names in serverPackages that reach no server: a test using only these
// runs against in-memory stores or servers of its own. (Were one of them to ask for a server,
// the test command's check would name the test.)
var serverless = map[string]bool{
	"s3test.RandomBytes": true, "s3test.BucketName": true, "s3test.Certs": true, "s3test.Server": true,
	"s3test.MinIO": true, "s3test.VersityGW": true, "s3test.Ceph": true,
	"testkit.Env": true, "testkit.Adapters": true, "testkit.Adapter": true,
}

// raceDependent names what a test reads to behave differently without -race (a tighter bound):
// such a test belongs in the race-free pass whether or not it reaches a server.
var raceDependent = []string{"raceEnabled"}

// serverTests prints, one per line and sorted, the top-level tests, fuzz targets and examples in
// dir's _test.go files that may reach a real server or depend on -race: those from which a
// reference to one of serverPackages, or to raceDependent, can be reached through the
// declarations of the test files. The search is by
// name and errs on the side of too many (every method of a name a selector names, every method
// of a type named anywhere), since a test left out is one the test command would not run on
// every server. What it cannot see (a function stored in a variable by an init, say), the test
// command's check against the tests that asked s3test for a server under -race catches.
func serverTests(w io.Writer, dir string) error {
	names, err := reachingTests(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}

// decl is what the test files declare under one name: the names its declarations use, and
// whether it reaches a server package (or raceDependent), itself or through them.
type decl struct {
	refs   map[string]bool // identifiers and selector names used in it
	server bool
}

func reachingTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no _test.go files in %s", dir)
	}
	fset := token.NewFileSet()
	// Keys: "f:NAME" a function or variable, "m:NAME" a method, "t:NAME" a type. The test files'
	// two packages (internal and external) share one namespace here: a collision only adds.
	decls := map[string]*decl{}
	node := func(key string) *decl {
		d := decls[key]
		if d == nil {
			d = &decl{refs: map[string]bool{}}
			decls[key] = d
		}
		return d
	}
	var tops []string
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		server := map[string]string{} // this file's local names of the server packages: their last path element
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(serverPackages, p) {
				continue
			}
			base := p[strings.LastIndex(p, "/")+1:]
			name := base
			if imp.Name != nil {
				name = imp.Name.Name
			}
			server[name] = base
		}
		add := func(key string, n ast.Node) {
			d := node(key)
			ast.Inspect(n, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && server[id.Name] != "" && !serverless[server[id.Name]+"."+x.Sel.Name] {
						d.server = true
					}
					d.refs["m:"+x.Sel.Name] = true
					d.refs["f:"+x.Sel.Name] = true
				case *ast.Ident:
					if slices.Contains(raceDependent, x.Name) {
						d.server = true
					}
					d.refs["f:"+x.Name] = true
					d.refs["t:"+x.Name] = true
				}
				return true
			})
		}
		for _, dl := range f.Decls {
			switch dl := dl.(type) {
			case *ast.FuncDecl:
				if dl.Recv != nil && len(dl.Recv.List) > 0 {
					add("m:"+dl.Name.Name, dl)
					if t := recvType(dl.Recv.List[0].Type); t != "" {
						node("t:" + t).refs["m:"+dl.Name.Name] = true // naming a type names its methods
					}
					continue
				}
				add("f:"+dl.Name.Name, dl)
				if isTop(dl.Name.Name) {
					tops = append(tops, dl.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range dl.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add("f:"+n.Name, s)
						}
					case *ast.TypeSpec:
						add("t:"+s.Name.Name, s)
					}
				}
			}
		}
	}
	// A name reaches a server when one it uses does: grow the set until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, d := range decls {
			for r := range d.refs {
				if !d.server && decls[r] != nil && decls[r].server {
					d.server, changed = true, true
				}
			}
		}
	}
	var out []string
	for _, name := range tops {
		if decls["f:"+name].server {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// isTop reports whether a function name is one go test runs as a top-level test.
func isTop(name string) bool {
	for _, prefix := range []string{"Test", "Fuzz", "Example"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && (rest == "" || rest[0] == '_' || !isLower(rest[0])) {
			return true
		}
	}
	return false
}

func isLower(b byte) bool { return 'a' <= b && b <= 'z' }

// recvType is the base type name of a method's receiver.
func recvType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
