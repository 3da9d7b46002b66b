package cabi_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The C ABI's production build (the package and the shared library's main, go list -deps with no
// tags) includes none of the test support under storetest: test_faults reaches a fault
// injector only through the hook a test build sets (internal/testhook, internal/testfaults). The
// test build's list is checked to hold storetest/faulty, so the check is shown to see such
// a package.
func TestReleaseBuildHasNoTestSupport(t *testing.T) {
	list := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append(append([]string{"list", "-deps"}, args...), ".", "./lib")...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	const testSupport = "github.com/safeput/safeput/storetest"
	for _, p := range list() {
		if p == testSupport || strings.HasPrefix(p, testSupport+"/") {
			t.Errorf("the production build imports %s", p)
		}
	}
	if !slices.Contains(list("-tags", "safeput_faults"), testSupport+"/faulty") {
		t.Errorf("the test build does not import %s/faulty: the check looks for the wrong path", testSupport)
	}
}
