package multipart

import (
	"errors"
	"strings"
	"testing"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/store"
	"pgregory.net/rapid"
)

func mustProfile(t testing.TB, name string) Rules {
	t.Helper()
	r, err := Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// layout materializes the part sizes a multipart plan implies.
func layout(p Plan) []int64 {
	sizes := make([]int64, p.Parts)
	for i := range sizes {
		sizes[i] = p.PartSize
	}
	sizes[p.Parts-1] = p.LastPartSize
	return sizes
}

func TestPlanExamples(t *testing.T) {
	for _, tc := range []struct {
		profile string
		req     PlanRequest
		want    Plan // Rules, Concurrency filled in below
	}{
		{"strict", PlanRequest{Size: 0, Concurrency: 4},
			Plan{Single: true, Size: 0, PartSize: 16 * bytesize.MiB, Parts: 1, LastPartSize: 0, Threshold: 16 * bytesize.MiB, Ceiling: 0, Memory: 0}},
		{"strict", PlanRequest{Size: 16 * bytesize.MiB, Concurrency: 4},
			Plan{Single: true, Size: 16 * bytesize.MiB, PartSize: 16 * bytesize.MiB, Parts: 1, LastPartSize: 16 * bytesize.MiB, Threshold: 16 * bytesize.MiB, Ceiling: 16 * bytesize.MiB, Memory: 16 * bytesize.MiB}},
		{"strict", PlanRequest{Size: 16*bytesize.MiB + 1, Concurrency: 4},
			Plan{Size: 16*bytesize.MiB + 1, PartSize: 16 * bytesize.MiB, Parts: 2, LastPartSize: 1, Threshold: 16 * bytesize.MiB, Ceiling: 16*bytesize.MiB + 1, Memory: 32 * bytesize.MiB}},
		// An exact multiple: the last part is full, never an empty trailing part.
		{"b2", PlanRequest{Size: 64 * bytesize.MiB, Concurrency: 8},
			Plan{Size: 64 * bytesize.MiB, PartSize: 16 * bytesize.MiB, Parts: 4, LastPartSize: 16 * bytesize.MiB, Threshold: 16 * bytesize.MiB, Ceiling: 64 * bytesize.MiB, Memory: 64 * bytesize.MiB}},
		// 1 TiB needs parts of at least ceil(1 TiB / 10,000) = 109,951,163 B: 105 MiB.
		{"r2", PlanRequest{Size: bytesize.TiB, Concurrency: 4},
			Plan{Size: bytesize.TiB, PartSize: 105 * bytesize.MiB, Parts: 9987, LastPartSize: 46 * bytesize.MiB, Threshold: 105 * bytesize.MiB, Ceiling: bytesize.TiB, Memory: 4 * 105 * bytesize.MiB}},
		// The largest strict object: 5 TB in 477 MiB parts.
		{"strict", PlanRequest{Size: 5 * tb, Concurrency: 2, Threshold: 5 * bytesize.MiB},
			Plan{Size: 5 * tb, PartSize: 477 * bytesize.MiB, Parts: 9997, LastPartSize: 5*tb - 9996*477*bytesize.MiB, Threshold: 5 * bytesize.MiB, Ceiling: 5 * tb, Memory: 2 * 477 * bytesize.MiB}},
		// A preferred size that is not a whole MiB is rounded up.
		{"oss", PlanRequest{Size: 10 * mb, PartSize: 1 * mb, Concurrency: 1, Threshold: 1},
			Plan{Size: 10 * mb, PartSize: bytesize.MiB, Parts: 10, LastPartSize: 10*mb - 9*bytesize.MiB, Threshold: 1, Ceiling: 10 * mb, Memory: bytesize.MiB}},
		// Unknown size: 1 TiB expected, part size from the hint, ceiling stated.
		{"r2", PlanRequest{Size: UnknownSize, Concurrency: 4, ExpectedMaxSize: 1 * bytesize.TiB},
			Plan{Size: UnknownSize, PartSize: 105 * bytesize.MiB, Threshold: 105 * bytesize.MiB, Ceiling: 10000 * 105 * bytesize.MiB, Memory: 4 * 105 * bytesize.MiB}},
		{"aws", PlanRequest{Size: UnknownSize, Concurrency: 2},
			Plan{Size: UnknownSize, PartSize: 16 * bytesize.MiB, Threshold: 16 * bytesize.MiB, Ceiling: 10000 * 16 * bytesize.MiB, Memory: 32 * bytesize.MiB}},
		// Ceiling capped by the maximum object size.
		{"gcs", PlanRequest{Size: UnknownSize, PartSize: bytesize.GiB, Concurrency: 1, Threshold: 3 * bytesize.GiB},
			Plan{Size: UnknownSize, PartSize: bytesize.GiB, Threshold: 3 * bytesize.GiB, Ceiling: 5 * bytesize.TiB, Memory: 3 * bytesize.GiB}},
		// Garage has no limits: no overflow at the largest size.
		{"garage", PlanRequest{Size: unlimited, Concurrency: 1},
			Plan{Size: unlimited, PartSize: 879609303 * bytesize.MiB, Parts: 10000, LastPartSize: unlimited - 9999*879609303*bytesize.MiB, Threshold: 879609303 * bytesize.MiB, Ceiling: unlimited, Memory: 879609303 * bytesize.MiB}},
	} {
		r := mustProfile(t, tc.profile)
		got, err := r.Plan(tc.req)
		if err != nil {
			t.Errorf("%s %+v: %v", tc.profile, tc.req, err)
			continue
		}
		tc.want.Rules, tc.want.Concurrency = r, tc.req.Concurrency
		if got != tc.want {
			t.Errorf("%s %+v:\ngot  %+v\nwant %+v", tc.profile, tc.req, planFields(got), planFields(tc.want))
		}
	}
}

func planFields(p Plan) Plan { p.Rules = Rules{Name: p.Rules.Name}; return p }

func TestPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		profile string
		req     PlanRequest
		want    string
		rule    string // "" for invalid input
	}{
		{"minio", PlanRequest{Size: 100 * bytesize.MiB, PartSize: 4 * bytesize.MiB, Concurrency: 1}, "part size 4 MiB is below the minimum 5 MiB of profile minio", ruleMinPartSize},
		{"r2", PlanRequest{Size: 100 * bytesize.GiB, PartSize: 5 * bytesize.GiB, Concurrency: 1}, "part size 5 GiB is above the maximum 5115 MiB of profile r2", ruleMaxPartSize},
		{"aws", PlanRequest{Size: 100 * bytesize.GiB, Threshold: 5 * bytesize.GiB, Concurrency: 1}, "single PUT size 5 GiB is above the maximum 5 GB of profile aws", ruleMaxSinglePut},
		{"strict", PlanRequest{Size: 5*tb + 1, Concurrency: 1}, "object size 5000000000001 B is above the maximum 5 TB of profile strict", ruleMaxObjectSize},
		{"wasabi", PlanRequest{Size: UnknownSize, ExpectedMaxSize: 6 * tb, Concurrency: 1}, "object size 6 TB is above the maximum 5 TB of profile wasabi", ruleMaxObjectSize},
		{"strict", PlanRequest{Size: -2, Concurrency: 1}, "object size -2 is negative", ""},
		{"strict", PlanRequest{Size: 1, PartSize: -1, Concurrency: 1}, "part size -1 is negative", ""},
		{"strict", PlanRequest{Size: 1}, "concurrency 0: at least 1 part must be in flight", ""},
		{"strict", PlanRequest{Size: 1, Concurrency: -3}, "concurrency -3", ""},
		{"strict", PlanRequest{Size: 1, Concurrency: 1, Threshold: -1}, "single-PUT threshold -1 is negative", ""},
		{"strict", PlanRequest{Size: UnknownSize, Concurrency: 1, ExpectedMaxSize: -1}, "expected maximum size -1 is negative", ""},
		{"strict", PlanRequest{Size: 1, Concurrency: 1, MemoryBudget: -1}, "memory budget -1 is negative", ""},
		{"strict", PlanRequest{Size: bytesize.GiB, Concurrency: 4, MemoryBudget: 32 * bytesize.MiB},
			"memory budget 32 MiB is below the 64 MiB this plan needs (4 parts in flight x 16 MiB, single-PUT threshold 16 MiB); at most 2 parts in flight would fit", ""},
		{"strict", PlanRequest{Size: UnknownSize, Concurrency: 8, MemoryBudget: 100 * bytesize.MiB},
			"memory budget 100 MiB is below the 128 MiB this plan needs (8 parts in flight x 16 MiB", ""},
		{"strict", PlanRequest{Size: 10 * bytesize.MiB, Concurrency: 1, MemoryBudget: 8 * bytesize.MiB},
			"memory budget 8 MiB is below the 10 MiB a single PUT of this object buffers", ""},
	} {
		_, err := mustProfile(t, tc.profile).Plan(tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: error %v, want it to contain %q", tc.profile, tc.req, err, tc.want)
			continue
		}
		var re *RuleError
		if tc.rule != "" {
			if !errors.As(err, &re) || re.Rule != tc.rule || re.Profile != tc.profile {
				t.Errorf("%s %+v: error %#v, want a *RuleError for %q", tc.profile, tc.req, err, tc.rule)
			}
		} else if errors.As(err, &re) || !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s %+v: error %v should be invalid input, not a rule error", tc.profile, tc.req, err)
		}
	}
	if _, err := (Rules{}).Plan(PlanRequest{Size: 1, Concurrency: 1}); err == nil {
		t.Error("zero Rules planned")
	}
}

func TestValidateLayout(t *testing.T) {
	for _, tc := range []struct {
		profile string
		parts   []int64
		want    string // "" means valid
	}{
		{"r2", []int64{5 * bytesize.MiB, 5 * bytesize.MiB, 1}, ""},
		{"r2", []int64{0}, ""},
		{"minio", []int64{5 * bytesize.MiB, 0}, ""},
		{"garage", []int64{1, 2, 3}, ""},
		{"aws", []int64{6 * bytesize.MiB, 5 * bytesize.MiB, 7 * bytesize.MiB}, ""},
		{"aws", nil, "part count 0 is below the minimum 1 of profile aws"},
		{"minio", []int64{4 * bytesize.MiB, 5 * bytesize.MiB}, "part 1: part size 4 MiB is below the minimum 5 MiB of profile minio"},
		{"aws", []int64{6 * bytesize.GiB}, "part 1: part size 6 GiB is above the maximum 5 GiB of profile aws"},
		{"r2", []int64{6 * bytesize.MiB, 5 * bytesize.MiB, 1}, "part 2: part size 5 MiB differs from the first part's 6 MiB; profile r2 requires equal non-final parts"},
		{"r2", []int64{5 * bytesize.MiB, 6 * bytesize.MiB}, "part 2: last part size 6 MiB is above the smallest other part's 5 MiB; profile r2 requires the last part to be no larger"},
		{"b2", []int64{5 * bytesize.MiB, 0}, "part 2: last part is empty; profile b2 requires at least 1 B"},
		{"strict", make([]int64, 10001), "part count 10001 is above the maximum 10000 of profile strict"},
		{"wasabi", []int64{5 * gb, 5 * gb, 5 * gb}, ""},
		{"digitalocean", append(fill(1000, 5*gb), 1), "object size 5000000000001 B is above the maximum 5 TB of profile digitalocean"},
	} {
		err := validateLayout(mustProfile(t, tc.profile), tc.parts)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s %v: %v", tc.profile, tc.parts, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error\n%v\nwant\n%s", tc.profile, err, tc.want)
		}
	}
	if err := validateLayout(mustProfile(t, "aws"), []int64{-1}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("negative part: %v", err)
	}
}

func fill(n int, size int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = size
	}
	return s
}

func TestCheckPart(t *testing.T) {
	r := mustProfile(t, "r2")
	known, err := r.Plan(PlanRequest{Size: 40 * bytesize.MiB, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := r.Plan(PlanRequest{Size: UnknownSize, PartSize: 5 * bytesize.MiB, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p     Plan
		n     int
		size  int64
		final bool
		want  string
	}{
		{known, 1, 16 * bytesize.MiB, false, ""},
		{known, 3, 8 * bytesize.MiB, true, ""},
		{known, 2, 15 * bytesize.MiB, false, "part 2: part size 15 MiB does not fit the plan: non-final parts are exactly 16 MiB, the last 1 B to 16 MiB (profile r2)"},
		{known, 3, 8 * bytesize.MiB, false, "part 3: stream is longer than this plan's ceiling 40 MiB (40 MiB by the end of this part) under profile r2"},
		{known, 3, 9 * bytesize.MiB, true, "part 3: stream is longer than this plan's ceiling 40 MiB (41 MiB by the end of this part)"},
		{known, 2, 2 * bytesize.MiB, true, "part 2: stream ended at 18 MiB, short of the declared size 40 MiB (profile r2)"},
		{known, 0, bytesize.MiB, true, "part number 0: part numbers start at 1"},
		{known, 1, -1, true, "part 1: size -1 is negative"},
		{stream, 1, 5 * bytesize.MiB, false, ""},
		{stream, 9999, 5 * bytesize.MiB, false, ""},
		{stream, 10000, 5 * bytesize.MiB, true, ""},
		{stream, 10000, 1, true, ""},
		{stream, 10000, 5 * bytesize.MiB, false, "part 10000: stream is longer than this plan's ceiling 50000 MiB (50000 MiB by the end of this part) under profile r2; plan with a larger expected size"},
		{stream, 10001, 1, true, "part 10001: stream is longer than this plan's ceiling"},
		{stream, 7, 0, true, "part 7: part size 0 B does not fit the plan"},
		{stream, 7, 5*bytesize.MiB + 1, true, "part 7: part size 5242881 B does not fit the plan"},
	} {
		err := tc.p.CheckPart(tc.n, tc.size, tc.final)
		if tc.want == "" {
			if err != nil {
				t.Errorf("CheckPart(%d, %d, %v): %v", tc.n, tc.size, tc.final, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckPart(%d, %d, %v) = %v, want %q", tc.n, tc.size, tc.final, err, tc.want)
		}
	}
	single, _ := r.Plan(PlanRequest{Size: bytesize.MiB, Concurrency: 1})
	if err := single.CheckPart(1, bytesize.MiB, true); err == nil || !strings.Contains(err.Error(), "single PUT") {
		t.Errorf("single plan CheckPart: %v", err)
	}
	if err := (Plan{}).CheckPart(1, 1, true); err == nil {
		t.Error("zero Plan accepted a part")
	}
	var re *RuleError
	if err := stream.CheckPart(10001, 1, true); !errors.As(err, &re) || re.Rule != ruleCeiling || re.Limit != stream.Ceiling {
		t.Errorf("ceiling error = %#v", err)
	}
}

// drawRequest draws a valid request for r and size: a preferred part size inside the rules (or
// 0), a threshold inside the maximum single PUT (or 0), a concurrency of 1..64.
func drawRequest(t *rapid.T, r Rules, size int64) PlanRequest {
	req := PlanRequest{Size: size, Concurrency: rapid.IntRange(1, 64).Draw(t, "concurrency")}
	if rapid.Bool().Draw(t, "preferPartSize") {
		req.PartSize = rapid.Int64Range(max(1, r.MinPartSize), min(r.MaxPartSize, 2*bytesize.GiB)).Draw(t, "partSize")
	}
	if rapid.Bool().Draw(t, "setThreshold") {
		req.Threshold = rapid.Int64Range(1, min(r.MaxSinglePut, 6*bytesize.GiB)).Draw(t, "threshold")
	}
	return req
}

// drawSize draws an object size in [0, hi], often near small values and part boundaries.
func drawSize(t *rapid.T, hi int64) int64 {
	return rapid.OneOf(
		rapid.Int64Range(0, min(hi, 64*bytesize.MiB)),
		rapid.Int64Range(0, hi),
		rapid.Map(rapid.Int64Range(0, hi/bytesize.MiB), func(n int64) int64 { return n * bytesize.MiB }),
		rapid.Map(rapid.Int64Range(0, hi/bytesize.MiB), func(n int64) int64 { return min(hi, n*bytesize.MiB+1) }),
		rapid.Int64Range(max(0, hi-bytesize.GiB), hi),
	).Draw(t, "size")
}

// checkKnownPlan asserts every property a known-size plan must have under r.
func checkKnownPlan(t *rapid.T, r Rules, req PlanRequest, p Plan) {
	if p.Single {
		if p.Size > p.Threshold || p.Threshold > r.MaxSinglePut || p.Parts != 1 || p.LastPartSize != p.Size || p.Memory != p.Size {
			t.Fatalf("bad single plan %+v", planFields(p))
		}
		return
	}
	if p.Parts < 1 || p.Parts > r.MaxParts {
		t.Fatalf("part count %d outside 1..%d", p.Parts, r.MaxParts)
	}
	if p.LastPartSize < 1 || p.LastPartSize > p.PartSize {
		t.Fatalf("last part %d outside 1..%d", p.LastPartSize, p.PartSize)
	}
	if int64(p.Parts-1)*p.PartSize+p.LastPartSize != p.Size {
		t.Fatalf("parts do not add up: %+v", planFields(p))
	}
	if req.PartSize > 0 && p.PartSize < req.PartSize {
		t.Fatalf("part size %d below the preferred %d", p.PartSize, req.PartSize)
	}
	// P = max(floor, roundUp(ceil(size/maxParts), 1 MiB)), in whole MiB for every real profile.
	floor := req.PartSize
	if floor == 0 {
		floor = max(defaultPartSize, r.MinPartSize)
	}
	if want := roundUp(max(floor, ceilDiv(p.Size, int64(r.MaxParts))), bytesize.MiB); p.PartSize != want {
		t.Fatalf("part size %d, want %d", p.PartSize, want)
	}
	if p.Memory != int64(min(req.Concurrency, p.Parts))*p.PartSize {
		t.Fatalf("memory %d for %d x %d", p.Memory, min(req.Concurrency, p.Parts), p.PartSize)
	}
	if err := validateLayout(r, layout(p)); err != nil {
		t.Fatalf("plan breaks its own rules: %v", err)
	}
	for _, n := range []int{1, p.Parts / 2, p.Parts - 1} {
		if n >= 1 && n < p.Parts {
			if err := p.CheckPart(n, p.PartSize, false); err != nil {
				t.Fatalf("CheckPart(%d): %v", n, err)
			}
		}
	}
	if err := p.CheckPart(p.Parts, p.LastPartSize, true); err != nil {
		t.Fatalf("CheckPart(last): %v", err)
	}
	if err := p.CheckPart(p.Parts, p.LastPartSize, false); err == nil {
		t.Fatal("CheckPart accepted data past the declared size")
	}
}

// TestPlanSatisfiesEveryProfile: for every profile and random sizes from 0 to its maximum, the
// plan satisfies every rule of that profile.
func TestPlanSatisfiesEveryProfile(t *testing.T) {
	for _, name := range ProfileNames() {
		r := mustProfile(t, name)
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				size := drawSize(t, r.maxMultipartObject())
				req := drawRequest(t, r, size)
				p, err := r.Plan(req)
				if err != nil {
					t.Fatalf("Plan(%+v): %v", req, err)
				}
				checkKnownPlan(t, r, req, p)
			})
		})
	}
}

// TestStrictSatisfiesEveryProfile proves the default: a layout planned with strict, for any size
// strict allows, is accepted by every other profile, and strict promises no capability any lacks.
func TestStrictSatisfiesEveryProfile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		size := drawSize(t, strict.MaxObjectSize)
		req := drawRequest(t, strict, size)
		p, err := strict.Plan(req)
		if err != nil {
			t.Fatalf("Plan(%+v): %v", req, err)
		}
		checkKnownPlan(t, strict, req, p)
		for _, r := range profiles {
			if p.Single {
				if p.Size > r.MaxSinglePut {
					t.Fatalf("single PUT of %d breaks %s's maximum %d", p.Size, r.Name, r.MaxSinglePut)
				}
				continue
			}
			if err := validateLayout(r, layout(p)); err != nil {
				t.Fatalf("strict plan %+v breaks %s: %v", planFields(p), r.Name, err)
			}
			if !narrower(strict, r) {
				t.Fatalf("strict claims more than %s", r.Name)
			}
		}
	})
}

// TestUnknownSizePlan: a stream of any length up to the ceiling fits the plan and the profile;
// one byte more is refused with ruleCeiling at the part where it happens.
func TestUnknownSizePlan(t *testing.T) {
	for _, name := range ProfileNames() {
		r := mustProfile(t, name)
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				req := drawRequest(t, r, UnknownSize)
				req.ExpectedMaxSize = drawSize(t, r.maxMultipartObject())
				p, err := r.Plan(req)
				if err != nil {
					t.Fatalf("Plan(%+v): %v", req, err)
				}
				if p.Single || p.Parts != 0 || p.Ceiling < req.ExpectedMaxSize || p.Ceiling > r.MaxObjectSize {
					t.Fatalf("bad stream plan %+v for %+v", planFields(p), req)
				}
				if p.Memory != max(int64(req.Concurrency)*p.PartSize, p.Threshold) {
					t.Fatalf("memory %d", p.Memory)
				}
				length := rapid.Int64Range(1, p.Ceiling).Draw(t, "length")
				parts := int(ceilDiv(length, p.PartSize))
				sizes := fill(parts, p.PartSize)
				sizes[parts-1] = length - int64(parts-1)*p.PartSize
				if err := validateLayout(r, sizes); err != nil {
					t.Fatalf("stream of %d: %v", length, err)
				}
				for _, n := range []int{1, parts / 2, parts - 1} {
					if n >= 1 && n < parts {
						if err := p.CheckPart(n, p.PartSize, false); err != nil {
							t.Fatalf("CheckPart(%d): %v", n, err)
						}
					}
				}
				if err := p.CheckPart(parts, sizes[parts-1], true); err != nil {
					t.Fatalf("CheckPart(last of %d): %v", length, err)
				}
				// One byte past the ceiling fails on the part that carries it.
				if p.Ceiling == unlimited {
					return // no int64 length is past it
				}
				over := p.Ceiling + 1
				n := int(ceilDiv(over, p.PartSize))
				last := over - int64(n-1)*p.PartSize
				var re *RuleError
				if err := p.CheckPart(n, last, true); !errors.As(err, &re) || re.Rule != ruleCeiling {
					t.Fatalf("stream of %d past ceiling %d: CheckPart(%d, %d) = %v", over, p.Ceiling, n, last, err)
				}
				if n > 1 {
					if err := p.CheckPart(n-1, p.PartSize, false); n-1 == r.MaxParts && err == nil {
						t.Fatal("non-final part at the part limit accepted")
					}
				}
			})
		})
	}
}

// TestPlanRandomRules plans random valid rules at their extremes.
func TestPlanRandomRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genRules().Draw(t, "rules")
		size := rapid.OneOf(rapid.Just(UnknownSize), rapid.Int64Range(0, r.MaxObjectSize)).Draw(t, "size")
		req := PlanRequest{Size: size, Concurrency: rapid.IntRange(1, 1000).Draw(t, "concurrency"),
			ExpectedMaxSize: rapid.Int64Range(0, r.MaxObjectSize).Draw(t, "hint")}
		p, err := r.Plan(req)
		if err != nil {
			var re *RuleError
			if !errors.As(err, &re) || re.Rule != ruleMaxObjectSize {
				t.Fatalf("Plan(%+v) under %s: %v", req, r, err)
			}
			return
		}
		if !p.Single && p.Parts > 0 {
			if err := r.checkUniform(p.PartSize, p.Parts, p.LastPartSize); err != nil {
				t.Fatal(err)
			}
			if p.LastPartSize < 1 || p.LastPartSize > p.PartSize {
				t.Fatalf("last part %d", p.LastPartSize)
			}
		}
		if p.Memory < 0 || p.Ceiling < 0 || p.PartSize < 1 || p.PartSize > r.MaxPartSize {
			t.Fatalf("plan %+v", planFields(p))
		}
	})
}

func BenchmarkPlan(b *testing.B) {
	r := mustProfile(b, "strict")
	reqs := []PlanRequest{
		{Size: 0, Concurrency: 4},
		{Size: 100 * bytesize.MiB, Concurrency: 4},
		{Size: 3 * tb, Concurrency: 8, MemoryBudget: 8 * bytesize.GiB},
		{Size: UnknownSize, Concurrency: 4, ExpectedMaxSize: bytesize.TiB},
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, req := range reqs {
			if _, err := r.Plan(req); err != nil {
				b.Fatal(err)
			}
		}
	}
}
