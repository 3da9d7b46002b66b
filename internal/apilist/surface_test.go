package apilist

import (
	"fmt"
	"go/types"
	"os"
	"slices"
	"strings"
	"testing"
)

// Every package the listing holds is covered by the compatibility promise: the test support,
// which is not (the conformance suite, the in-memory store, the fault injectors, which change with
// the tests they serve), is a module of its own, github.com/safeput/safeput/storetest, and not
// listed.

// maxStableIdentifiers caps the stable surface: exported top-level names plus methods (of
// concrete types and of interfaces) in api/safeput.txt, struct fields aside. It may only come
// down: each name is a promise kept for years once v0.1.0 is tagged. Issue 52 asked for 250; the
// count is printed by the test.
const maxStableIdentifiers = 250

// TestStableSurfaceSize: the stable packages export no more than maxStableIdentifiers names.
func TestStableSurfaceSize(t *testing.T) {
	raw, err := os.ReadFile(listing)
	if err != nil {
		t.Fatal(err)
	}
	perPkg := map[string]int{}
	total := 0
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		path, rest, ok := strings.Cut(strings.TrimPrefix(l, "pkg "), ", ")
		if !ok {
			t.Fatalf("listing line %q", l)
		}
		if strings.Contains(rest, " struct, ") {
			continue
		}
		perPkg[path]++
		total++
	}
	var rows []string
	for p, n := range perPkg {
		rows = append(rows, fmt.Sprintf("%4d %s", n, p))
	}
	slices.Sort(rows)
	t.Logf("stable surface: %d identifiers (cap %d)\n%s", total, maxStableIdentifiers, strings.Join(rows, "\n"))
	if total > maxStableIdentifiers {
		t.Errorf("the stable packages export %d identifiers, over the cap of %d: make the new ones internal, or move test tooling to the storetest module", total, maxStableIdentifiers)
	}
}

// allowedForeign says which other modules' types a public package's API may name: the standard
// library anywhere, this repository's own packages, zap's *Logger (the project's logging rule: a
// *zap.Logger option), and each SDK inside its own adapter only.
func allowedForeign(pkgPath, typePkg string) bool {
	switch {
	case !strings.Contains(strings.SplitN(typePkg, "/", 2)[0], "."): // the standard library
		return true
	case strings.HasPrefix(typePkg, "github.com/safeput/safeput/"):
		return true
	case typePkg == "go.uber.org/zap":
		return true
	case pkgPath == "github.com/safeput/safeput/store/awss3":
		return strings.HasPrefix(typePkg, "github.com/aws/aws-sdk-go-v2/")
	case pkgPath == "github.com/safeput/safeput/store/miniogo":
		return strings.HasPrefix(typePkg, "github.com/minio/minio-go/v7")
	}
	return false
}

// TestNoForeignTypes: no exported name of a public package has a type or signature that names
// a type of another module beyond allowedForeign, so that module's next major version cannot
// break our callers.
func TestNoForeignTypes(t *testing.T) {
	var bad []string
	for _, pkg := range publicPackages(t, "") {
		check := func(what string, typ types.Type) {
			for _, p := range typePackages(typ) {
				if !allowedForeign(pkg.Path(), p) {
					bad = append(bad, fmt.Sprintf("%s: %s names a type of %s", pkg.Path(), what, p))
				}
			}
		}
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			tn, isType := obj.(*types.TypeName)
			if !isType {
				check(name, obj.Type())
				continue
			}
			named, ok := types.Unalias(tn.Type()).(*types.Named)
			if !ok {
				check(name, tn.Type())
				continue
			}
			switch u := named.Underlying().(type) {
			case *types.Struct:
				for i := range u.NumFields() {
					if f := u.Field(i); f.Exported() {
						check(name+"."+f.Name(), f.Type())
					}
				}
			case *types.Interface:
				for m := range u.Methods() {
					if m.Exported() {
						check(name+"."+m.Name(), m.Type())
					}
				}
			default:
				check(name, u)
			}
			ms := types.NewMethodSet(types.NewPointer(named))
			for sel := range ms.Methods() {
				if m := sel.Obj(); m.Exported() {
					check(name+"."+m.Name(), m.Type())
				}
			}
		}
	}
	slices.Sort(bad)
	bad = slices.Compact(bad)
	if len(bad) > 0 {
		t.Errorf("exported API names types of other modules:\n%s", strings.Join(bad, "\n"))
	}
}

// typePackages returns the import paths of the named types typ mentions.
func typePackages(typ types.Type) []string {
	var out []string
	seen := map[types.Type]bool{}
	var walk func(types.Type)
	walk = func(t types.Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		switch x := t.(type) {
		case *types.Alias:
			walk(types.Unalias(x))
		case *types.Named:
			if p := x.Obj().Pkg(); p != nil {
				out = append(out, p.Path())
			}
			if args := x.TypeArgs(); args != nil {
				for a := range args.Types() {
					walk(a)
				}
			}
		case *types.Pointer:
			walk(x.Elem())
		case *types.Slice:
			walk(x.Elem())
		case *types.Array:
			walk(x.Elem())
		case *types.Map:
			walk(x.Key())
			walk(x.Elem())
		case *types.Chan:
			walk(x.Elem())
		case *types.Signature:
			for v := range x.Params().Variables() {
				walk(v.Type())
			}
			for v := range x.Results().Variables() {
				walk(v.Type())
			}
		case *types.Struct:
			for i := range x.NumFields() {
				walk(x.Field(i).Type())
			}
		case *types.Interface:
			for m := range x.Methods() {
				walk(m.Type())
			}
		}
	}
	walk(typ)
	return out
}

// TestNoExportedState: a stable package exports no variable but sentinel errors, so nothing a
// caller assigns changes what another caller of the library sees.
func TestNoExportedState(t *testing.T) {
	raw, err := os.ReadFile(listing)
	if err != nil {
		t.Fatal(err)
	}
	vars := 0
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		path, rest, _ := strings.Cut(strings.TrimPrefix(l, "pkg "), ", ")
		if !strings.HasPrefix(rest, "var ") {
			continue
		}
		vars++
		if !strings.HasSuffix(rest, " error") {
			t.Errorf("%s exports %s: make it a function or a constant", path, rest)
		}
	}
	if vars == 0 {
		t.Error("no exported variable found: the listing's format changed and this test sees nothing")
	}
}
