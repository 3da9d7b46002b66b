package main

import (
	"os"
	"strings"
	"testing"
)

// BENCHMARKS.md's hand-written part (how to run, method, targets) is this command's header, so
// the targets it states are the constants the harness evaluates.
func TestBenchmarksHeader(t *testing.T) {
	b, err := os.ReadFile("../../../BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), header+"## Latest run") {
		t.Errorf("BENCHMARKS.md does not start with the generator's header; run `go run ./cmd/bench -reanalyse ../BENCHMARKS.md` in bench/")
	}
}
