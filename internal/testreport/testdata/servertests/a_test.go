package fixture_test

import (
	"testing"

	kit "github.com/safeput/safeput/storetest/testkit"
)

func TestDirect(t *testing.T) { kit.ForEach(t, nil) }

func TestViaHelper(t *testing.T) { helper(t) }

func helper(t *testing.T) { deeper(t) }

func TestViaMethod(t *testing.T) {
	var h harness
	h.run(t)
}

func TestViaTable(t *testing.T) {
	for _, c := range cases {
		c(t)
	}
}

var cases = []func(*testing.T){TestPlain, deeper}

func TestPlain(t *testing.T) { _ = t.Name(); _ = kit.Adapters }

func TestRaceBound(t *testing.T) {
	if raceEnabled {
		t.Skip()
	}
}

func TestCycle(t *testing.T) { ping(t) }

func ping(t *testing.T) { pong(t) }

func pong(t *testing.T) { ping(t) }

func Example() {}

func ExampleHarness_run() { var h harness; h.run(nil) }

func Testable(t *testing.T) { helper(t) } // not a test: a lower-case letter follows "Test"

func FuzzSeeds(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) { helper(t) }) }
