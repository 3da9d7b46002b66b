// Package apilist keeps api/, the listings of the exported API of every published module, in
// step with the code: one line per exported identifier (constant, variable, function, type,
// method, struct field, interface method) of every non-internal package, in the style of Go's own
// api/ files. api/safeput.txt is the library's (the root module); api/<dir>.txt is the module in
// that directory (publishedModules). TestAPIListing fails on any difference, so every change to a
// surface the project promises is a deliberate diff of its file. To accept a change:
//
//	go test ./internal/apilist -update
package apilist

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite api/safeput.txt from the code")

// listing is the library's own.
const listing = "../../api/safeput.txt"

// publishedModules are the modules besides the root that others may import, by directory: each
// keeps the compatibility promise from v0.1.0, so each has its listing. cmd/safeput and cabi are
// programs, bench and examples are not for import, and storetest is test support, outside the
// promise (its package doc says so).
var publishedModules = []string{"frontend", "gocloud", "objstore", "otel"}

func TestAPIListing(t *testing.T) {
	checkListing(t, "", listing)
}

func TestModuleAPIListings(t *testing.T) {
	for _, dir := range publishedModules {
		t.Run(dir, func(t *testing.T) { checkListing(t, dir, "../../api/"+dir+".txt") })
	}
}

// checkListing compares the exported API of the module in dir (relative to the repository root;
// "" for the root module) with its listing file.
func checkListing(t *testing.T, dir, listing string) {
	t.Helper()
	got := apiLines(t, dir)
	if *update {
		if err := os.WriteFile(listing, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(listing)
	if err != nil {
		t.Fatalf("%v (regenerate with: go test ./internal/apilist -update)", err)
	}
	want := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	var added, removed []string
	for _, l := range got {
		if !slices.Contains(want, l) {
			added = append(added, "+ "+l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			removed = append(removed, "- "+l)
		}
	}
	if len(added)+len(removed) > 0 {
		t.Fatalf("the exported API differs from %s:\n%s\nIf the change is intended, regenerate the listing with:\n\tgo test ./internal/apilist -update",
			filepath.Base(listing), strings.Join(append(removed, added...), "\n"))
	}
}

// publicPackages loads the root module's public packages from the compiler's export data (what
// importers of the packages see).
func publicPackages(t *testing.T, dir string) []*types.Package {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("../..", dir))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}\t{{.Module}}\t{{.DepOnly}}", "./...")
	cmd.Dir = root
	if dir == "" {
		// GOWORK=off: ./... is then the root module alone, not the workspace's other modules.
		// The other modules need the workspace for the library's unreleased version; ./... in
		// their directory is still theirs alone.
		cmd.Env = append(os.Environ(), "GOWORK=off")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	var public []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			t.Fatalf("go list line %q", sc.Text())
		}
		exports[f[0]] = f[1]
		if f[3] == "false" && !strings.Contains(f[0]+"/", "/internal/") {
			public = append(public, f[0])
		}
	}
	if len(public) == 0 {
		t.Fatal("go list found no public package")
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var pkgs []*types.Package
	for _, path := range public {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs
}

// apiLines lists the exported API of the public packages of the module in dir, sorted.
func apiLines(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	for _, pkg := range publicPackages(t, dir) {
		lines = append(lines, packageLines(pkg)...)
	}
	slices.Sort(lines)
	return lines
}

// packageLines lists pkg's exported identifiers, each prefixed "pkg <path>, ".
func packageLines(pkg *types.Package) []string {
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	typ := func(t types.Type) string { return types.TypeString(t, qual) }
	var out []string
	emit := func(format string, args ...any) {
		out = append(out, "pkg "+pkg.Path()+", "+fmt.Sprintf(format, args...))
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			emit("const %s %s = %s", name, typ(o.Type()), o.Val().ExactString())
		case *types.Var:
			emit("var %s %s", name, typ(o.Type()))
		case *types.Func:
			sig := o.Type().(*types.Signature)
			emit("func %s%s%s", name, typeParams(sig.TypeParams(), typ), signature(sig, typ))
		case *types.TypeName:
			if o.IsAlias() {
				emit("type %s = %s", name, typ(types.Unalias(o.Type())))
				continue
			}
			named, ok := o.Type().(*types.Named)
			if !ok {
				continue
			}
			head := name + typeParams(named.TypeParams(), typ)
			switch u := named.Underlying().(type) {
			case *types.Struct:
				emit("type %s struct", head)
				for i := range u.NumFields() {
					f := u.Field(i)
					switch {
					case !f.Exported():
					case f.Embedded():
						emit("type %s struct, embedded %s", head, typ(f.Type()))
					default:
						emit("type %s struct, %s %s", head, f.Name(), typ(f.Type()))
					}
				}
			case *types.Interface:
				emit("type %s interface", head)
				for m := range u.Methods() {
					if m.Exported() {
						emit("type %s interface, %s%s", head, m.Name(), signature(m.Type().(*types.Signature), typ))
					}
				}
			default:
				emit("type %s %s", head, typ(u))
			}
			if _, isIface := named.Underlying().(*types.Interface); isIface {
				continue
			}
			// The method set of *T includes T's: each method once, with the receiver it needs
			// (promoted methods of embedded fields included: they are part of the surface).
			values := types.NewMethodSet(named)
			ptrs := types.NewMethodSet(types.NewPointer(named))
			for sel := range ptrs.Methods() {
				m := sel.Obj()
				if !m.Exported() {
					continue
				}
				recv := "*" + name
				if values.Lookup(m.Pkg(), m.Name()) != nil {
					recv = name
				}
				emit("method (%s) %s%s", recv, m.Name(), signature(m.Type().(*types.Signature), typ))
			}
		}
	}
	return out
}

// signature prints a signature's parameter and result types without their names, as Go's api
// files do.
func signature(sig *types.Signature, typ func(types.Type) string) string {
	tuple := func(tp *types.Tuple, variadic bool) []string {
		var s []string
		for i := range tp.Len() {
			t := tp.At(i).Type()
			if sl, ok := t.(*types.Slice); ok && variadic && i == tp.Len()-1 {
				s = append(s, "..."+typ(sl.Elem()))
				continue
			}
			s = append(s, typ(t))
		}
		return s
	}
	b := "(" + strings.Join(tuple(sig.Params(), sig.Variadic()), ", ") + ")"
	switch res := tuple(sig.Results(), false); len(res) {
	case 0:
	case 1:
		b += " " + res[0]
	default:
		b += " (" + strings.Join(res, ", ") + ")"
	}
	return b
}

func typeParams(tps *types.TypeParamList, typ func(types.Type) string) string {
	if tps.Len() == 0 {
		return ""
	}
	var s []string
	for i := range tps.Len() {
		tp := tps.At(i)
		s = append(s, tp.Obj().Name()+" "+typ(tp.Constraint()))
	}
	return "[" + strings.Join(s, ", ") + "]"
}
