package doccheck

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
)

// A Go comment states a contract or a reason; a figure a run measured, or the commit it ran at, is
// stale at the next change and belongs in a generated block (BENCHMARKS.md, written by
// scripts/bench.sh) or in the commit message of that run. A comment may name the section and the
// command that reproduce a figure, without quoting it.
//
// Test files are checked for commit hashes and dates only: a test's comments state the inputs it
// feeds and the bounds it asserts (a fault rate, a fixture's rate, an epoch worked through), which
// read like measurements but are the test's own rules, kept true by its code; listing them all
// here would make this file a second copy of the tests. A hash or a date is a run diary wherever
// it is written.

// commentFigure is measured (the documents' pattern: a single whole time is a rule, "a 20 s stall
// window") with three more shapes that comments use for what a run showed: an approximate size
// ("~6 MiB of RSS", "about 2 MiB more"), a figure said to be measured or seen ("11 µs
// measured", "1.10 MB seen"), and CPU time with decimals or as a range ("0.55 CPU-s/GiB",
// "2.27-2.53 server CPU-s per GiB").
var commentFigure = regexp.MustCompile(measured.String() +
	`|` + num + `(?:[.,]\d+|\s*[–-]\s*\d+(?:[.,]\d+)?)\s*(?:server\s+|client\s+)?CPU[- ]s\b` +
	`|(?:\b(?i:about|roughly|around|nearly|almost)\s+|[≈~]\s*)\d+(?:[.,]\d+)?(?:\s*[–-]\s*\d+(?:[.,]\d+)?)?\s*[KMGT]i?B\b` +
	`|` + rng + `\s*(?:µs|us|ns|ms|s|sec|seconds?|mins?|minutes?|hours?|[KMGT]i?B(?:/s)?|%)\s*(?i:measured|seen|observed)\b`)

// dateOnly is what test files are checked for, besides commit hashes.
var dateOnly = regexp.MustCompile(date)

// commitHash matches a commit named in prose: a hash after "at" or "commit", or alone in
// parentheses, abbreviated (7 to 12 hex digits) or full (40). An MD5 (32 hex digits) is neither,
// a module's pseudo-version (v0.0.0-20260212201848-7aac2a2c5b7c) pins a tool and has a hyphen
// before its hash, and URLs are blanked before the match; hasDigitAndLetter then leaves out
// numbers and words ("(1000001)", "at defaced").
var commitHash = regexp.MustCompile(`(?:\bat|\bcommits?)\s+([0-9a-f]{7,12}|[0-9a-f]{40})\b|\(([0-9a-f]{7,12}|[0-9a-f]{40})\)`)

// url is blanked out of comments before they are read: a link holds hashes and numbers that are
// its address, not a claim.
var url = regexp.MustCompile(`[a-z][a-z0-9+.-]*://[^\s)>\]]+`)

// allowedInGo lists, per Go file, phrases in its comments that hold a match of commentFigure but
// state a rule, a vendor's documented limit or another program's output that a named command
// reproduces, not a figure a run of ours measured, and why. A phrase allows every match in it.
var allowedInGo = map[string][]struct{ phrase, why string }{
	"bench/analysis.go": {
		{"≥ 1.0× the best peer", "the issue's throughput target, which the analysis checks each row against"},
		{"safeput ≥ 1.0× there", "the same target, on the fair comparison"},
	},
	"bytesize/bytesize.go": {
		{`"4.7 GiB"`, "go-humanize's output for 5 GB, which the command the package doc names logs (TestByteSizeAgainstHumanize -v)"},
		{`"1.5GiB"`, "an input bytesize refuses, which TestByteSizeAgainstHumanize checks"},
	},
	"multipart/profiles.go": {
		{"object 48.82 TB", "Tencent COS's documented object limit, the cos profile's MaxObjectSize (TestAllowedInGoRulesHold)"},
		{"5 GB PUT, 48.8 TB object", "Huawei OBS's and Alibaba OSS's documented limits, the obs and oss profiles' (TestAllowedInGoRulesHold)"},
	},
	"retry/rate.go": {
		{"raises it by 5%", "the adaptive rate's step on success, recoverFactor (1.05)"},
	},
	"store/miniogo/miniogo.go": {
		{"0-200 ms, minio.DefaultRetryUnit with jitter", "minio-go's first backoff step, a rule of minio-go (TestAllowedInGoRulesHold)"},
	},
	"store/progress.go": {
		{"below about 3 KiB/s before the default 20 s stall window", "arithmetic: progressChunk (64 KiB) per retry.DefaultStallTimeout (TestAllowedInGoRulesHold)"},
	},
}

// goComments returns src's comments, each line at its own line number (counted from 1 as
// handTyped counts), the code around them blanked: string literals (test data, log messages)
// are not comments. URLs are blanked too.
func goComments(src []byte) string {
	lines := make([]string, strings.Count(string(src), "\n")+1)
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, scanner.ScanComments) // a file that does not scan still yields its comments
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT {
			continue
		}
		first := file.Line(pos) - 1
		for i, l := range strings.Split(lit, "\n") {
			if first+i < len(lines) {
				lines[first+i] += url.ReplaceAllStringFunc(l, func(u string) string { return strings.Repeat(" ", len(u)) })
			}
		}
	}
	return strings.Join(lines, "\n")
}

// commitHashes returns the lines of doc (numbered from 1) that name a commit.
func commitHashes(doc string) []string {
	var out []string
	for i, line := range strings.Split(doc, "\n") {
		for _, m := range commitHash.FindAllStringSubmatch(line, -1) {
			if h := m[1] + m[2]; hasDigitAndLetter(h) {
				out = append(out, lineRef(i+1, m[0], line))
			}
		}
	}
	return out
}

func hasDigitAndLetter(hex string) bool {
	return strings.ContainsAny(hex, "0123456789") && strings.ContainsAny(hex, "abcdef")
}

// goFiles lists the repository's Go files, relative to root, in every module (each go.mod's
// directory is walked from the root: the modules nest in it), and the module directories seen.
func goFiles(t *testing.T) (files []string, modules map[string]int) {
	t.Helper()
	modules = map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			if exists(filepath.Join(path, "go.mod")) {
				modules[rel] += 0
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			files = append(files, rel)
			modules[moduleOf(rel, modules)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, modules
}

// moduleOf is the innermost module directory of modules that holds the file rel.
func moduleOf(rel string, modules map[string]int) string {
	for dir := filepath.ToSlash(filepath.Dir(rel)); ; dir = filepath.ToSlash(filepath.Dir(dir)) {
		if _, ok := modules[dir]; ok {
			return dir
		}
		if dir == "." || dir == "/" {
			return "."
		}
	}
}

// TestNoFiguresInGoComments: no Go comment, in any module, carries a measured figure outside the
// allowed phrases, and none names a commit. State the contract or the reason instead, and where a
// figure matters, name the BENCHMARKS.md section or the command that produces it.
func TestNoFiguresInGoComments(t *testing.T) {
	files, modules := goFiles(t)
	for dir, n := range modules {
		if n == 0 {
			t.Errorf("module %s: no Go file read: is the walk broken?", dir)
		}
	}
	if len(modules) < 2 {
		t.Fatalf("only %d module(s) found: the walk must cover every module of the repository", len(modules))
	}
	for _, rel := range files {
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		doc := goComments(src)
		pattern := commentFigure
		if strings.HasSuffix(rel, "_test.go") {
			pattern = dateOnly
		}
		for _, l := range handTyped(doc, pattern, allowedInGo[rel]) {
			t.Errorf("%s: hand-typed figure in a comment at %s", rel, l)
		}
		for _, l := range commitHashes(doc) {
			t.Errorf("%s: a commit named in a comment at %s", rel, l)
		}
	}
}

// TestAllowedInGoHold: every allowed phrase is still in its file's comments, so the list cannot
// keep an exception for a comment that has gone.
func TestAllowedInGoHold(t *testing.T) {
	for rel, phrases := range allowedInGo {
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		doc := goComments(src)
		for _, a := range phrases {
			if !strings.Contains(doc, a.phrase) {
				t.Errorf("%s: the allowed phrase %q is in none of its comments: drop it from allowedInGo", rel, a.phrase)
			}
			if a.why == "" {
				t.Errorf("%s: the allowed phrase %q says no reason", rel, a.phrase)
			}
		}
	}
}

// TestAllowedInGoRulesHold: an allowed phrase that states a rule of the code or of a library
// states the one in force.
func TestAllowedInGoRulesHold(t *testing.T) {
	for name, want := range map[string]int64{"cos": 48820e9, "obs": 48800e9, "oss": 48800e9} {
		if r, err := multipart.Profile(name); err != nil || r.MaxObjectSize != want {
			t.Errorf("profiles.go's comment gives the %s object limit as %d; the profile has %d (%v)", name, want, r.MaxObjectSize, err)
		}
	}
	if minio.DefaultRetryUnit != 200*time.Millisecond {
		t.Errorf("miniogo.go's comment gives minio-go's first backoff step as 0-200 ms; minio.DefaultRetryUnit is %v", minio.DefaultRetryUnit)
	}
	if retry.DefaultStallTimeout != 20*time.Second {
		t.Errorf("progress.go's comment gives the default stall window as 20 s; retry.DefaultStallTimeout is %v", retry.DefaultStallTimeout)
	}
}

// The Go comment detectors: what they must catch in a comment, and what they must leave.
func TestGoCommentPatterns(t *testing.T) {
	const src = "package p\n" +
		"// A run at 1a2b3c4 of the relay's trace.\n" + // 2: hash
		"/* before (2e0eb8b), after (d8d4525d8d45) */\n" + // 3: two hashes
		"// Measured at commit 0123456789abcdef0123456789abcdef01234567.\n" + // 4: hash (full)
		"// the write took 4.519–4.530 s against minio-go's 8.91 s\n" + // 5: two figures
		"// a fault costs 11 µs measured on the benchmark machine\n" + // 6: figure
		"// which cost every run ~6 MiB of RSS\n" + // 7: figure
		"// a link far from full showed +25% for half more parts, 2.27-2.53 server CPU-s per GiB\n" + // 8: two figures
		"// static builds, 2026-12-06\n" + // 9: date
		"var x = \"took 9.15 s at 1a2b3c4 on 2026-12-06\" // a string is no comment\n" + // 10: nothing
		"// stripped (5d41402abc4b2a76b9719d911017c592, not \"5d41…\"), an MD5 in an example\n" + // 11
		"// at 5d41402abc4b2a76b9719d911017c592 is an MD5 too\n" + // 12
		"// pinned: github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c\n" + // 13
		"// see https://github.com/o/r/commit/1a2b3c4d (at https://x.example/1a2b3c4)\n" + // 14
		"// Format(1000001) == \"1000001 B\"; at defaced; at 10000000 parts\n" + // 15
		"// a 20 s stall window; at most 5 s; within 3 × window + 30 s; 4 × Concurrency\n" + // 16
		"// 16 MiB × 4 part buffers; max 5 GiB; 10000 parts; 5 MiB min part\n" // 17
	doc := goComments([]byte(src))
	lineOf := func(refs []string) map[int]int {
		n := map[int]int{}
		for _, r := range refs {
			var line int
			if _, err := fmt.Sscanf(r, "line %d:", &line); err != nil {
				t.Fatalf("%q: %v", r, err)
			}
			n[line]++
		}
		return n
	}
	hashes := lineOf(commitHashes(doc))
	figures := lineOf(handTyped(doc, commentFigure, nil))
	want := func(what string, got map[int]int, line, n int) {
		t.Helper()
		if got[line] != n {
			t.Errorf("%s on line %d: %d matches, want %d: %s", what, line, got[line], n, strings.Split(src, "\n")[line-1])
		}
	}
	for line, n := range map[int]int{2: 1, 3: 2, 4: 1} {
		want("commit hash", hashes, line, n)
	}
	for line, n := range map[int]int{5: 2, 6: 1, 7: 1, 8: 2, 9: 1} {
		want("figure", figures, line, n)
	}
	for line := 10; line <= 17; line++ {
		want("commit hash", hashes, line, 0)
		want("figure", figures, line, 0)
	}
	if got := handTyped(doc, dateOnly, nil); len(got) != 1 {
		t.Errorf("a test file's check finds %v, want the date on line 9 alone", got)
	}
}
