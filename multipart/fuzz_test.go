package multipart

import (
	"errors"
	"testing"

	"github.com/safeput/safeput/bytesize"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "r2", "strict", "min=5MiB,max=5GiB,parts=10000,equal", "profile=r2,min=8MiB",
		"profile=aws,checksums=none,crc64nvme=full,condput=false", "name=x,min=0,max=unlimited,object=unlimited,single=1",
		"min=,max", ",,", "equal=maybe", "parts=-1", "profile=garage,profile=aws",
	} {
		f.Add(s)
	}
	for _, name := range ProfileNames() {
		r, _ := Profile(name)
		f.Add(r.String())
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("Parse(%q) returned invalid rules: %v", s, err)
		}
		back, err := Parse(r.String())
		if err != nil || back != r {
			t.Fatalf("Parse(%q).String() = %q does not round-trip: %v", s, r.String(), err)
		}
	})
}

// FuzzPlan plans arbitrary requests under arbitrary rules: no panic, and every plan it returns
// satisfies the rules.
func FuzzPlan(f *testing.F) {
	f.Add(5*bytesize.MiB, 5*bytesize.GiB, 10000, 5*tb, 5*gb, uint8(0xff), 100*bytesize.MiB, int64(0), 4, int64(0), int64(0), int64(0))
	f.Add(int64(0), unlimited, 10000, unlimited, unlimited, uint8(0), unlimited, int64(0), 1, int64(0), int64(0), int64(0))
	f.Add(5*bytesize.MiB, 5*bytesize.GiB-5*bytesize.MiB, 10000, 5*bytesize.TiB-5*bytesize.GiB, 5*bytesize.GiB-5*bytesize.MiB, uint8(3), int64(-1), 8*bytesize.MiB, 16, int64(0), bytesize.TiB, bytesize.GiB)
	f.Add(int64(1), int64(1), 1, int64(1), int64(0), uint8(0xff), int64(1), int64(1), 1, int64(1), int64(0), int64(1))
	f.Add(int64(-1), int64(-1), -1, int64(-1), int64(-1), uint8(0), int64(-5), int64(-1), -1, int64(-1), int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, minPart, maxPart int64, maxParts int, maxObject, maxSingle int64, flags uint8,
		size, partSize int64, concurrency int, threshold, hint, budget int64) {
		r := Rules{Name: "fuzz", MinPartSize: minPart, MaxPartSize: maxPart, MaxParts: maxParts,
			MaxObjectSize: maxObject, MaxSinglePut: maxSingle,
			EqualParts: flags&1 != 0, LastPartNotLarger: flags&2 != 0, NonEmptyLastPart: flags&4 != 0, ContiguousPartNumbers: flags&8 != 0}
		p, err := r.Plan(PlanRequest{Size: size, PartSize: partSize, Concurrency: concurrency, Threshold: threshold, ExpectedMaxSize: hint, MemoryBudget: budget})
		if err != nil {
			var re *RuleError
			if errors.As(err, &re) && re.Error() == "" {
				t.Fatal("empty rule error message")
			}
			return
		}
		if budget > 0 && p.Memory > budget {
			t.Fatalf("memory %d over budget %d", p.Memory, budget)
		}
		switch {
		case p.Single:
			if p.Size < 0 || p.Size > r.MaxSinglePut || p.Size > p.Threshold {
				t.Fatalf("bad single plan %+v", p)
			}
		case p.Size == UnknownSize:
			if p.PartSize < max(1, r.MinPartSize) || p.PartSize > r.MaxPartSize || p.Ceiling < hint {
				t.Fatalf("bad stream plan %+v", p)
			}
		default:
			if err := r.checkUniform(p.PartSize, p.Parts, p.LastPartSize); err != nil || p.LastPartSize < 1 || p.LastPartSize > p.PartSize {
				t.Fatalf("plan %+v breaks the rules: %v", p, err)
			}
			if err := p.CheckPart(p.Parts, p.LastPartSize, true); err != nil {
				t.Fatalf("CheckPart(last): %v", err)
			}
		}
	})
}
