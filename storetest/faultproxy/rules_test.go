package faultproxy

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		method, target, copySource string
		want                       Op
	}{
		{"PUT", "/b/k", "", PutObject},
		{"PUT", "/b/dir/k%20x", "", PutObject},
		{"PUT", "/b/k?partNumber=3&uploadId=u1", "", UploadPart},
		{"PUT", "/b/k?partNumber=3&uploadId=u1", "/src/k", Other}, // UploadPartCopy
		{"PUT", "/b/k", "/src/k", Other},                          // CopyObject
		{"PUT", "/b/k?tagging", "", Other},
		{"PUT", "/b", "", Other}, // CreateBucket
		{"POST", "/b/k?uploads", "", CreateMultipartUpload},
		{"POST", "/b/k?uploadId=u1", "", CompleteMultipartUpload},
		{"POST", "/b?delete", "", Other},
		{"DELETE", "/b/k?uploadId=u1", "", AbortMultipartUpload},
		{"DELETE", "/b/k", "", DeleteObject},
		{"DELETE", "/b", "", Other},
		{"GET", "/b/k?uploadId=u1", "", ListParts},
		{"GET", "/b/k?uploadId=u1&part-number-marker=2", "", ListParts},
		{"GET", "/b?uploads&prefix=p", "", ListMultipartUploads},
		{"GET", "/b?list-type=2", "", Other},
		{"GET", "/b/k", "", GetObject},
		{"GET", "/b/k?attributes", "", Other},
		{"HEAD", "/b/k", "", HeadObject},
		{"HEAD", "/b", "", Other},
		{"GET", "/", "", Other},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.copySource != "" {
			r.Header.Set("X-Amz-Copy-Source", c.copySource)
		}
		if got := Classify(r); got != c.want {
			t.Errorf("Classify(%s %s copy=%q) = %s, want %s", c.method, c.target, c.copySource, got, c.want)
		}
	}
}

func TestParseTarget(t *testing.T) {
	r := httptest.NewRequest("PUT", "/bkt/dir/a%20b?partNumber=7&uploadId=xyz", nil)
	want := target{Bucket: "bkt", Key: "dir/a b", UploadID: "xyz", PartNumber: 7}
	got := parseTarget(r)
	if got.Header == nil {
		t.Error("parseTarget kept no headers")
	}
	got.Header = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseTarget = %+v, want %+v", got, want)
	}
}

type req struct {
	op   Op
	part int32
}

func newDecider(seed int64, rules ...Rule) *Proxy {
	p := &Proxy{
		rng:   rand.New(rand.NewPCG(uint64(seed), 0x5afe_f00d)), //nolint:gosec // test
		stats: Stats{Requests: map[Op]int{}, Injected: map[Kind]int{}},
	}
	p.SetRules(rules...)
	return p
}

// fired runs the requests through the rules and returns the kind injected per request ("" none).
func fired(p *Proxy, reqs []req) []Kind {
	var got []Kind
	for _, r := range reqs {
		f, ok := p.decide(r.op, target{Bucket: "b", Key: "k", PartNumber: r.part})
		if !ok {
			f.Kind = ""
		}
		got = append(got, f.Kind)
	}
	return got
}

func TestRules(t *testing.T) {
	reset := Fault{Kind: ResetAfterBytes}
	drop := Fault{Kind: DropResponse}
	slow := Fault{Kind: Status, Status: 503, Code: "SlowDown"}
	put, p1, p2, p3 := req{PutObject, 0}, req{UploadPart, 1}, req{UploadPart, 2}, req{UploadPart, 3}
	cases := []struct {
		name  string
		rules []Rule
		reqs  []req
		want  []Kind
	}{
		{"op", []Rule{{Op: UploadPart, Fault: slow}}, []req{put, p1, p2}, []Kind{"", Status, Status}},
		{"any op", []Rule{{Op: OpAny, Fault: slow}}, []req{put, p1, {HeadObject, 0}}, []Kind{Status, Status, Status}},
		{"part number", []Rule{{Op: UploadPart, PartNumber: 2, Fault: drop}}, []req{p1, p2, p3, p2}, []Kind{"", DropResponse, "", DropResponse}},
		{"nth", []Rule{{Op: OpAny, Nth: 3, Fault: reset}}, []req{put, p1, p2, p3, put}, []Kind{"", "", ResetAfterBytes, "", ""}},
		{"nth counts matching requests only", []Rule{{Op: UploadPart, PartNumber: 2, Nth: 2, Fault: reset}}, []req{p2, p1, put, p2, p2}, []Kind{"", "", "", ResetAfterBytes, ""}},
		{"times", []Rule{{Op: PutObject, Times: 2, Fault: slow}}, []req{put, p1, put, put}, []Kind{Status, "", Status, ""}},
		{"first that fires wins", []Rule{{Op: UploadPart, PartNumber: 1, Fault: reset}, {Op: OpAny, Fault: slow}}, []req{p1, put, p2}, []Kind{ResetAfterBytes, Status, Status}},
		// Each rule counts every request it matches, also those an earlier rule took.
		{"counters are per rule", []Rule{{Op: UploadPart, Nth: 1, Fault: reset}, {Op: UploadPart, Nth: 2, Fault: drop}}, []req{p1, p2, p3}, []Kind{ResetAfterBytes, DropResponse, ""}},
		{"no rules", nil, []req{put, p1}, []Kind{"", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newDecider(1, c.rules...)
			got := fired(p, c.reqs)
			if !slices.Equal(got, c.want) {
				t.Fatalf("fired %q, want %q", got, c.want)
			}
			if inj, n := p.Injected(), injectedCount(c.want); len(inj) != n {
				t.Errorf("injection log has %d entries, want %d", len(inj), n)
			}
			if s := p.Stats(); s.Requests[PutObject] != count(c.reqs, PutObject) || s.Requests[UploadPart] != count(c.reqs, UploadPart) {
				t.Errorf("stats %v do not count the requests %v", s.Requests, c.reqs)
			}
		})
	}
}

func count(reqs []req, op Op) int {
	n := 0
	for _, r := range reqs {
		if r.op == op {
			n++
		}
	}
	return n
}

func TestProbabilityIsSeeded(t *testing.T) {
	reqs := make([]req, 1000)
	for i := range reqs {
		reqs[i] = req{UploadPart, int32(i%10 + 1)}
	}
	rule := Rule{Op: OpAny, Prob: 0.3, Fault: Fault{Kind: Status}}
	a, b := fired(newDecider(42, rule), reqs), fired(newDecider(42, rule), reqs)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different faults for the same requests")
	}
	if c := fired(newDecider(43, rule), reqs); slices.Equal(a, c) {
		t.Error("seeds 42 and 43 gave the same 1000 draws")
	}
	n := injectedCount(a)
	// Binomial(1000, 0.3): mean 300, sd 14.5; the seed is fixed, so this is not flaky.
	if n < 200 || n > 400 {
		t.Errorf("Prob 0.3 fired %d of 1000", n)
	}

	limited := fired(newDecider(42, Rule{Op: OpAny, Prob: 0.5, Times: 5, Fault: Fault{Kind: Status}}), reqs)
	if n := injectedCount(limited); n != 5 {
		t.Errorf("Prob 0.5 with Times 5 fired %d times, want 5", n)
	}
}

func injectedCount(kinds []Kind) int {
	n := 0
	for _, k := range kinds {
		if k != "" {
			n++
		}
	}
	return n
}

func TestSetRulesResetsCounters(t *testing.T) {
	rule := Rule{Op: PutObject, Nth: 1, Fault: Fault{Kind: DropResponse}}
	p := newDecider(1, rule)
	put := req{PutObject, 0}
	if got := fired(p, []req{put, put}); !slices.Equal(got, []Kind{DropResponse, ""}) {
		t.Fatalf("first rules: %q", got)
	}
	p.SetRules(rule)
	if got := fired(p, []req{put}); !slices.Equal(got, []Kind{DropResponse}) {
		t.Fatalf("after SetRules the nth count did not restart: %q", got)
	}
	if s := p.Stats(); s.Requests[PutObject] != 3 || s.Injected[DropResponse] != 2 {
		t.Errorf("stats = %+v, want 3 PutObject and 2 DropResponse across SetRules", s)
	}
}

// A rule with Header fires only on requests carrying it: a store refusing HEAD's checksum mode
// but answering a plain HEAD.
func TestRuleHeader(t *testing.T) {
	p := newDecider(1, Rule{Op: HeadObject, Header: "x-amz-checksum-mode", Fault: Fault{Kind: Status, Status: 501}})
	withMode := http.Header{}
	withMode.Set("X-Amz-Checksum-Mode", "ENABLED")
	var got []Kind
	for _, h := range []http.Header{nil, withMode, {}} {
		f, ok := p.decide(HeadObject, target{Bucket: "b", Key: "k", Header: h})
		if !ok {
			f.Kind = ""
		}
		got = append(got, f.Kind)
	}
	if want := []Kind{"", Status, ""}; !slices.Equal(got, want) {
		t.Fatalf("fired %q, want %q", got, want)
	}
}
