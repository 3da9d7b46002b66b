package writer

import "testing"

// The decisions of decide_create.go by table, with the behaviour tests that reach each case.

func TestDecideGuardCreate(t *testing.T) {
	for _, c := range []struct {
		name                        string
		createOnly, refused, honors bool
		want                        createGuard
	}{
		{"not create-only: nothing to guard", false, false, true, createGuard{}},
		{"default profile: header and HEAD (TestCreateOnlyRace at strict)", true, false, false, createGuard{header: true, headFirst: true, unguarded: true}},
		{"a profile that says the store honours it: the header alone (TestCreateOnlyRace at the server's profile)", true, false, true, createGuard{header: true}},
		{"refused earlier: the HEAD alone (TestWireConditionalCreateNotImplemented)", true, true, true, createGuard{headFirst: true, unguarded: true}},
		{"refused earlier, default profile", true, true, false, createGuard{headFirst: true, unguarded: true}},
	} {
		if got := guardCreate(c.createOnly, c.refused, c.honors); got != c.want {
			t.Errorf("%s: guardCreate = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestDecideOthersAtKey(t *testing.T) {
	for _, c := range []struct {
		name                           string
		unguarded, mismatch, ownCommit bool
		want                           bool
	}{
		{"guarded commit, mismatch: this write's own damage", false, true, false, false},
		{"unguarded, proven: ours", true, false, false, false},
		{"unguarded, another object (TestCreateOnlyRace)", true, true, false, true},
		{"unguarded, the object this commit made, damaged (FuzzUpload): ours, corrupt", true, true, true, false},
	} {
		if got := othersAtKey(c.unguarded, c.mismatch, c.ownCommit); got != c.want {
			t.Errorf("%s: othersAtKey = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSameETag(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`"9b2cf535f27731c974343645a3985328"`, "9B2CF535F27731C974343645A3985328", true},
		{`W/"abc-2"`, `"abc-2"`, true},
		{"abc", "abd", false},
		{"", "", false},
		{`""`, "", false},
	} {
		if got := sameETag(c.a, c.b); got != c.want {
			t.Errorf("sameETag(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
