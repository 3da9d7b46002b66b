package faulty_test

import (
	"testing"

	"github.com/safeput/safeput/storetest/faulty"
)

// A spec's items become rules in order: N calls, or every call, of the fault named in any case.
func TestParse(t *testing.T) {
	rules, err := faulty.Parse("PutObject:SlowDown:2, *:forbidden")
	if err != nil || len(rules) != 2 {
		t.Fatalf("Parse = %+v, %v; want two rules", rules, err)
	}
	if r := rules[0]; r.Op != faulty.OpPutObject || r.Fault != faulty.SlowDown() || r.Times != 2 {
		t.Errorf("rule 1 = %+v, want SlowDown on the first 2 PutObject calls", r)
	}
	if r := rules[1]; r.Op != faulty.AnyOp || r.Fault != faulty.Forbidden() || r.Times != 0 {
		t.Errorf("rule 2 = %+v, want Forbidden on every call", r)
	}
	if rules, err := faulty.Parse(" "); err != nil || rules != nil {
		t.Errorf("Parse of a blank spec = %+v, %v; want no rules", rules, err)
	}
	for _, bad := range []string{"PutObject", "PutObject:Nope", "PutObject:SlowDown:0", "PutObject:SlowDown:x", "a:b:c:d"} {
		if _, err := faulty.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
