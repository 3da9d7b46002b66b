// Command testreport turns `go test -json` into what scripts/test.sh prints, and sums the run up.
//
//	go test -json ./... | testreport stream FILE    prints what plain `go test` would (each package's
//	                                                ok/FAIL line, a failed test's output, build
//	                                                errors) and keeps the JSON in FILE
//	testreport summary TIMES FILE...                the slowest tests, each module's wall time
//	                                                (TIMES: lines "module seconds") and the counts
//
// It lives in the test command because the cost of every test should be visible in every run:
// a new slow test shows up in the table the day it lands.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	if len(os.Args) < 3 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "stream":
		err = stream(os.Stdin, os.Stdout, os.Args[2])
	case "summary":
		err = summary(os.Stdout, os.Args[2], os.Args[3:])
	case "servertests":
		err = serverTests(os.Stdout, os.Args[2])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testreport stream FILE < go-test-json | testreport summary TIMES FILE... | testreport servertests DIR")
	os.Exit(2)
}

// stream copies the JSON to path and prints plain go test's output: per package the ok/FAIL
// line, and the whole output of a test that failed (held until it ends, as go test does for
// parallel tests). Lines that are not JSON (build errors) are printed as they come.
func stream(in io.Reader, w io.Writer, path string) error {
	out := &printer{w: w}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	held := map[string][]string{} // package + test -> output so far
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if _, err := f.Write(append(line, '\n')); err != nil {
			return err
		}
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			out.printf("%s\n", line)
			continue
		}
		id := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				// Package-level lines: its ok/FAIL line, panics and build output outside a test.
				if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "--- ") &&
					e.Output != "PASS\n" && e.Output != "FAIL\n" {
					out.printf("%s", e.Output)
				}
				continue
			}
			held[id] = append(held[id], e.Output)
		case "fail":
			if e.Test != "" {
				for _, l := range held[id] {
					out.printf("%s", l)
				}
			}
			delete(held, id)
		case "pass", "skip":
			delete(held, id)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return out.err
}

// printer keeps the first write error, so a report cut short (a closed pipe) is an error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

type result struct {
	run, pkg, test string
	secs           float64
}

func short(pkg string) string { return "." + strings.TrimPrefix(pkg, "github.com/safeput/safeput") }

func summary(w io.Writer, timesPath string, files []string) error {
	out := &printer{w: w}
	var tops, leaves []result
	pkgs := map[string]float64{}
	counts := map[string]int{}
	hasSub := map[string]bool{}
	started := map[string]time.Time{}
	var all []result
	for _, path := range files {
		run := strings.TrimSuffix(filepath.Base(path), ".json")
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			id := run + "\x00" + e.Package + "\x00" + e.Test
			if e.Action == "run" {
				started[id] = e.Time
				continue
			}
			if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
				continue
			}
			if e.Test == "" {
				pkgs[run+" "+short(e.Package)] = e.Elapsed
				continue
			}
			counts[e.Action]++
			// From its start to its end: a test's own Elapsed leaves out the parallel subtests
			// it waited for.
			secs := e.Elapsed
			if t0, ok := started[id]; ok && !e.Time.IsZero() {
				secs = max(secs, e.Time.Sub(t0).Seconds())
			}
			r := result{run, e.Package, e.Test, secs}
			all = append(all, r)
			if i := strings.LastIndex(e.Test, "/"); i >= 0 {
				hasSub[run+"\x00"+e.Package+"\x00"+e.Test[:i]] = true
			}
			if !strings.Contains(e.Test, "/") {
				tops = append(tops, r)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return err
		}
	}
	for _, r := range all {
		if !hasSub[r.run+"\x00"+r.pkg+"\x00"+r.test] {
			leaves = append(leaves, r)
		}
	}
	bySecs := func(rs []result) {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].secs > rs[j].secs })
	}
	bySecs(tops)
	bySecs(leaves)

	out.printf("\n== the slowest tests (wall seconds; a test's time includes its subtests, which may run in parallel)\n")
	for _, r := range tops[:min(15, len(tops))] {
		out.printf("%8.1f  %s %s %s\n", r.secs, r.run, short(r.pkg), r.test)
	}
	out.printf("\n== the slowest single cases (tests without subtests)\n")
	for _, r := range leaves[:min(10, len(leaves))] {
		out.printf("%8.1f  %s %s %s\n", r.secs, r.run, short(r.pkg), r.test)
	}
	var names []string
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Slice(names, func(i, j int) bool { return pkgs[names[i]] > pkgs[names[j]] })
	out.printf("\n== the slowest packages (go test's time for the package's tests)\n")
	for _, p := range names[:min(8, len(names))] {
		out.printf("%8.1f  %s\n", pkgs[p], p)
	}
	if data, err := os.ReadFile(timesPath); err == nil {
		printSteps(out, string(data))
	}
	// The closing line in the form CI reads: N passed, N failed, N skipped.
	out.printf("\ntests: %d passed, %d failed, %d skipped\n", counts["pass"], counts["fail"], counts["skip"])
	return out.err
}

// printSteps prints the run's steps: each test job's wall time, build included, and the CPU
// seconds its processes used (go test, the test binaries, the programs they start; the servers
// are not counted). A job whose CPU is far below its wall time spent it waiting (on servers,
// timeouts, other jobs); the last line says how busy the machine was while the tests ran.
// steps holds lines "LABEL<TAB>WALL<TAB>CPU", CPU "-" where not measured.
func printSteps(out *printer, steps string) {
	out.printf("\n== where the time went (seconds: wall, build included, and the CPU the step's own processes used; test jobs run side by side)\n")
	out.printf("%8s %8s  %s\n", "wall", "cpu", "step")
	for _, l := range strings.Split(strings.TrimSpace(steps), "\n") {
		fs := strings.Split(l, "\t")
		if len(fs) != 3 {
			continue
		}
		wall, err := strconv.Atoi(fs[1])
		if err != nil {
			continue
		}
		out.printf("%8d %8s  %s\n", wall, fs[2], fs[0])
	}
}
