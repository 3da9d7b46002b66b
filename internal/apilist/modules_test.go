package apilist

import (
	"bufio"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoModules maps each module directory of the repository (relative to its root) to its
// module path.
func repoModules(t *testing.T, root string) map[string]string {
	t.Helper()
	mods := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if path, ok := strings.CutPrefix(sc.Text(), "module "); ok {
				rel, _ := filepath.Rel(root, filepath.Dir(p))
				mods[filepath.ToSlash(rel)] = strings.TrimSpace(path)
				break
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return mods
}

// owner is the module, among paths, that holds the package path pkg: the longest module path
// that is pkg or a parent of it.
func owner(paths []string, pkg string) string {
	best := ""
	for _, m := range paths {
		if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return best
}

// TestNoCrossModuleInternal: no module of this repository imports another module's internal
// packages. Go allows it (the path check sees one tree), but the importer would then build
// against code outside any release's promise: a sub-module at v0.1.0 could break when the
// library's internals change in v0.1.1.
func TestNoCrossModuleInternal(t *testing.T) {
	const root = "../.."
	mods := repoModules(t, root)
	var paths []string
	for _, p := range mods {
		paths = append(paths, p)
	}
	if len(mods) < 2 {
		t.Fatalf("found %d modules under %s; the walk is broken", len(mods), root)
	}
	var bad []string
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		// The file's module: the deepest module directory above it.
		dir, mod := "", ""
		for md, mp := range mods {
			if (md == "." || strings.HasPrefix(rel, md+"/")) && (mod == "" || len(md) > len(dir)) {
				dir, mod = md, mp
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if !strings.Contains(path+"/", "/internal/") {
				continue
			}
			if o := owner(paths, path); o != "" && o != mod {
				bad = append(bad, rel+" (module "+mod+") imports "+path+" of module "+o)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("parsed %d Go files; the walk is broken", files)
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
