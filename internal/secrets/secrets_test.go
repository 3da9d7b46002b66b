package secrets

import (
	"fmt"
	"strings"
	"testing"
)

func reset() {
	mu.Lock()
	defer mu.Unlock()
	current.Store(nil)
}

func TestReplace(t *testing.T) {
	reset()
	t.Cleanup(reset)
	if got := Replace("nothing registered"); got != "nothing registered" {
		t.Fatal(got)
	}
	Register("abc", "", "12345678", "123456789abc", "tok+en/with=signs")
	for in, want := range map[string]string{
		"abc 1234567":               "abc 1234567", // too short to be registered
		"x12345678y":                "xREDACTEDy",
		"123456789abc!":             "REDACTED!",  // the longer value wins where both start
		"q=tok%2Ben%2Fwith%3Dsigns": "q=REDACTED", // its query-escaped form
		"tok+en/with=signs":         "REDACTED",
	} {
		if got := Replace(in); got != want {
			t.Errorf("Replace(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBounded: past the bound the oldest values go; a value registered again as it is used
// stays.
func TestBounded(t *testing.T) {
	reset()
	t.Cleanup(reset)
	Register("in-use-value-0001")
	Register("old-value-0000001")
	for i := range 2 * maxValues {
		Register(fmt.Sprintf("rotated-value-%06d", i))
		Register("in-use-value-0001")
	}
	if n := len(current.Load().seq); n > maxValues {
		t.Errorf("%d values kept, bound %d", n, maxValues)
	}
	if got := Replace("in-use-value-0001 old-value-0000001"); got != "REDACTED old-value-0000001" {
		t.Errorf("got %q", got)
	}
	if last := fmt.Sprintf("rotated-value-%06d", 2*maxValues-1); Replace(last) != Marker {
		t.Errorf("the newest value %s is not redacted", last)
	}
}

// TestKnownValueIsCheap: registering a value already known neither locks nor allocates, so an
// adapter may do it on every request.
func TestKnownValueIsCheap(t *testing.T) {
	reset()
	t.Cleanup(reset)
	Register("session-token-value", "secret-key-value")
	allocs := testing.AllocsPerRun(100, func() { Register("session-token-value", "secret-key-value", "") })
	if allocs != 0 {
		t.Errorf("%v allocations per known registration", allocs)
	}
	if !strings.Contains(Replace("a session-token-value"), Marker) {
		t.Error("not redacted")
	}
}
