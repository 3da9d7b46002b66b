package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/safeput/safeput/multipart"
)

// TestLimitGCFollowsThePartBudget checks the GC memory limit a put sets: concurrency × the part
// size the plan picks (raised for a large expected stream) plus the headroom; none when
// GOMEMLIMIT is set or the app is not the real binary.
func TestLimitGCFollowsThePartBudget(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	rules, err := multipart.Profile("strict")
	if err != nil {
		t.Fatal(err)
	}
	tib := int64(1) << 40
	plan, err := rules.Plan(multipart.PlanRequest{Size: multipart.UnknownSize, PartSize: 16 << 20, Concurrency: 4, ExpectedMaxSize: tib})
	if err != nil {
		t.Fatal(err)
	}
	if plan.PartSize <= 16<<20 {
		t.Fatalf("a 1 TiB stream should need parts above 16 MiB, plan says %d", plan.PartSize)
	}
	for _, tc := range []struct {
		name        string
		binary      bool
		gomemlimit  string
		expectedMax int64
		want        int64
	}{
		{"stream at defaults", true, "", 0, 4*16<<20 + gcHeadroom},
		{"large expected stream", true, "", tib, 4*plan.PartSize + gcHeadroom},
		{"GOMEMLIMIT wins", true, "1GiB", 0, math.MaxInt64},
		{"not the real binary", false, "", 0, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv("GOMEMLIMIT", tc.gomemlimit) // empty counts as unset
			a := newApp(nil, nil, nil)
			a.limitGCToBudget = tc.binary
			a.g.concurrency = 4
			a.limitGC(rules, -1, 16<<20, tc.expectedMax)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
