package main

import (
	"slices"
	"testing"
)

// TestServerTestsFollowsEveryPath: a test reaches a server directly, through a helper, a method,
// a table of functions, or another file's import under its own name; one that reads
// raceEnabled counts too; a test that reaches neither (it may use the helpers' serverless
// names), one caught in a cycle of helpers that reach nothing, and a function that only looks
// like a test are left out.
func TestServerTestsFollowsEveryPath(t *testing.T) {
	got, err := reachingTests("testdata/servertests")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ExampleHarness_run", "FuzzSeeds", "TestDirect", "TestRaceBound", "TestViaHelper", "TestViaMethod", "TestViaTable"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestServerTestsOfTheWriter: the writer's own tests that reach a server through each helper
// package are found (one each, by name: each call shape the search has to follow).
func TestServerTestsOfTheWriter(t *testing.T) {
	got, err := reachingTests("../../writer")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"TestRealServerUploadVanished", // s3test.ForEach
		"TestStreamMemoryBound",        // testkit.ForEachSerial, through a helper taking it as a value
		"TestWireHungServer",           // wirekit
	} {
		if !slices.Contains(got, name) {
			t.Errorf("%s is not among the writer's server tests %v", name, got)
		}
	}
	for _, name := range []string{
		"TestDecidePutProves",          // a table of decisions
		"TestSmallReaderAtSourceFails", // the in-memory store, with s3test.RandomBytes
	} {
		if slices.Contains(got, name) {
			t.Errorf("%s, which reaches no server, is listed", name)
		}
	}
}
