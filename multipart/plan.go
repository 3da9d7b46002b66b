package multipart

import (
	"fmt"

	"github.com/safeput/safeput/bytesize"
)

// defaultPartSize is the part size when the caller states none: at least every documented
// minimum (including Oracle's unverified 10 MiB), and few enough requests for most objects.
const defaultPartSize = 16 * bytesize.MiB

// UnknownSize is PlanRequest.Size for a stream whose length is not known up front.
const UnknownSize int64 = -1

// partAlign is the granularity of planned part sizes: whole MiB keep layouts readable and
// buffers pool-friendly. Plans fall back to byte granularity only when no MiB multiple fits.
const partAlign = bytesize.MiB

// PlanRequest is what the writer knows before the first byte.
type PlanRequest struct {
	// Size is the object's length, or UnknownSize.
	Size int64
	// PartSize is the preferred part size: the plan's part size is at least this (rounded up to a
	// whole MiB), larger only if the part limit needs it. 0 means defaultPartSize (raised to the
	// rules' minimum). A non-zero value outside the rules' part size limits is an error.
	PartSize int64
	// Concurrency is the number of parts in flight; at least 1.
	Concurrency int
	// Threshold: objects of at most this many bytes go in one PutObject. 0 means the part size
	// (capped at the rules' maximum single PUT); above the maximum single PUT is an error.
	Threshold int64
	// ExpectedMaxSize, for an unknown size, is the largest the stream may grow; the part size is
	// chosen so that it fits in the part limit. 0: no hint, the ceiling follows from PartSize.
	// Ignored when Size is known.
	ExpectedMaxSize int64
	// MemoryBudget caps Plan.Memory (what a stream buffers); 0 means no cap.
	MemoryBudget int64
}

// Plan is a part layout that satisfies its Rules.
//
// Known size: Single, or Parts parts numbered 1..Parts, each PartSize bytes but the last,
// which is LastPartSize (1..PartSize). Unknown size: Single is false and Parts is 0; every part
// but the last is PartSize bytes and the stream may reach Ceiling; if it ends at or below
// Threshold the writer sends one PutObject instead.
type Plan struct {
	Rules  Rules
	Single bool
	// Size is the object size, or UnknownSize.
	Size     int64
	PartSize int64
	// Parts and LastPartSize: 1 and Size for a single PUT; 0 and 0 when the size is unknown.
	Parts        int
	LastPartSize int64
	Threshold    int64
	// Ceiling is the most bytes the plan carries: Size when known, otherwise PartSize x MaxParts
	// capped at the rules' maximum object size.
	Ceiling     int64
	Concurrency int
	// Memory is the buffer space the plan needs when its bytes come from a stream: the object
	// for a single PUT; min(Concurrency, Parts) x PartSize for multipart; for an unknown size the
	// larger of Concurrency x PartSize and Threshold (the single-PUT buffer). The writer buffers
	// none of it for an io.ReaderAt of known size (writer.Upload of a file or a *bytes.Reader):
	// each request reads its bytes from the source as it is sent.
	Memory int64
}

// Plan chooses a layout for req under r. Every error names the rule and the numbers: a
// *RuleError when a store rule forbids the request, an error wrapping store.ErrInvalidInput for
// malformed input or an exceeded memory budget.
func (r Rules) Plan(req PlanRequest) (Plan, error) {
	if err := r.Validate(); err != nil {
		return Plan{}, err
	}
	switch {
	case req.Size < 0 && req.Size != UnknownSize:
		return Plan{}, invalidf("object size %d is negative (use UnknownSize for a stream)", req.Size)
	case req.PartSize < 0:
		return Plan{}, invalidf("part size %d is negative", req.PartSize)
	case req.Concurrency < 1:
		return Plan{}, invalidf("concurrency %d: at least 1 part must be in flight", req.Concurrency)
	case req.Threshold < 0:
		return Plan{}, invalidf("single-PUT threshold %d is negative", req.Threshold)
	case req.ExpectedMaxSize < 0:
		return Plan{}, invalidf("expected maximum size %d is negative", req.ExpectedMaxSize)
	case req.MemoryBudget < 0:
		return Plan{}, invalidf("memory budget %d is negative", req.MemoryBudget)
	}
	floor := min(max(defaultPartSize, r.MinPartSize), r.MaxPartSize)
	if req.PartSize > 0 {
		if req.PartSize < r.MinPartSize {
			return Plan{}, r.ruleErr(ruleMinPartSize, req.PartSize, r.MinPartSize, 0)
		}
		if req.PartSize > r.MaxPartSize {
			return Plan{}, r.ruleErr(ruleMaxPartSize, req.PartSize, r.MaxPartSize, 0)
		}
		floor = req.PartSize
	}
	if req.Threshold > r.MaxSinglePut {
		return Plan{}, r.ruleErr(ruleMaxSinglePut, req.Threshold, r.MaxSinglePut, 0)
	}

	target := req.Size // the size the part limit must accommodate
	if req.Size == UnknownSize {
		target = req.ExpectedMaxSize
	}
	if target > r.MaxObjectSize {
		return Plan{}, r.ruleErr(ruleMaxObjectSize, target, r.MaxObjectSize, 0)
	}
	// Sizing for the part limit only matters for multipart; a small object must not fail because
	// of it, so single-PUT candidates skip the check below.
	p := Plan{Rules: r, Size: req.Size, Concurrency: req.Concurrency}
	p.PartSize = r.partSize(floor, min(target, r.maxMultipartObject()))
	p.Threshold = req.Threshold
	if p.Threshold == 0 {
		p.Threshold = min(p.PartSize, r.MaxSinglePut)
	}

	switch {
	case req.Size == UnknownSize:
		if target > r.maxMultipartObject() {
			return Plan{}, r.ruleErr(ruleMaxObjectSize, target, r.maxMultipartObject(), 0)
		}
		p.Ceiling = min(mulSat(p.PartSize, int64(r.MaxParts)), r.MaxObjectSize)
		p.Memory = max(mulSat(int64(req.Concurrency), p.PartSize), p.Threshold)
	case req.Size <= p.Threshold:
		p.Single, p.Parts, p.LastPartSize, p.Ceiling, p.Memory = true, 1, req.Size, req.Size, req.Size
	default:
		if req.Size > r.maxMultipartObject() {
			return Plan{}, r.ruleErr(ruleMaxObjectSize, req.Size, r.maxMultipartObject(), 0)
		}
		n := ceilDiv(req.Size, p.PartSize) // <= MaxParts, as PartSize >= ceil(Size/MaxParts)
		p.Parts = int(n)
		p.LastPartSize = req.Size - (n-1)*p.PartSize
		p.Ceiling = req.Size
		p.Memory = mulSat(min(int64(req.Concurrency), n), p.PartSize)
	}

	if req.MemoryBudget > 0 && p.Memory > req.MemoryBudget {
		if p.Single {
			return Plan{}, invalidf("memory budget %s is below the %s a single PUT of this object buffers; lower the threshold to at most %s", bytesize.Format(req.MemoryBudget), bytesize.Format(p.Memory), bytesize.Format(req.MemoryBudget))
		}
		inflight := int64(req.Concurrency)
		if p.Parts > 0 {
			inflight = min(inflight, int64(p.Parts))
		}
		return Plan{}, invalidf("memory budget %s is below the %s this plan needs (%d parts in flight x %s, single-PUT threshold %s); at most %d parts in flight would fit", bytesize.Format(req.MemoryBudget), bytesize.Format(p.Memory), inflight, bytesize.Format(p.PartSize), bytesize.Format(p.Threshold), req.MemoryBudget/p.PartSize)
	}
	// The planner's arithmetic is checked against the same rules validateLayout applies, so a
	// planner bug surfaces here as an error instead of a store rejecting the upload later.
	if !p.Single && p.Parts > 0 {
		if err := r.checkUniform(p.PartSize, p.Parts, p.LastPartSize); err != nil {
			return Plan{}, fmt.Errorf("multipart: internal planning error: %w", err)
		}
	}
	return p, nil
}

// partSize is max(floor, ceil(target/MaxParts)) rounded up to a whole MiB, or unrounded when the
// rounding would pass the maximum. floor and target are within the rules, so the result is too.
func (r Rules) partSize(floor, target int64) int64 {
	need := max(floor, ceilDiv(target, int64(r.MaxParts)))
	if p := roundUp(need, partAlign); p <= r.MaxPartSize {
		return p
	}
	return need
}

// CheckPart reports whether part n (1-based) of size bytes, final if it is the stream's last,
// fits the plan. The writer calls it before uploading each part; past the ceiling it returns a
// *RuleError with Rule ruleCeiling, and a known-size stream that ends early ruleDeclaredSize.
func (p Plan) CheckPart(n int, size int64, final bool) error {
	switch {
	case p.Single:
		return invalidf("part %d: this plan is a single PUT of %s, not a multipart upload", n, bytesize.Format(p.Size))
	case p.PartSize <= 0:
		return invalidf("part %d: checked against an empty plan", n)
	case n < 1:
		return invalidf("part number %d: part numbers start at 1", n)
	case size < 0:
		return invalidf("part %d: size %d is negative", n, size)
	}
	r := p.Rules
	// Bytes up to the end of this part: every earlier part is exactly PartSize, or it failed here.
	sofar := addSat(mulSat(int64(n-1), p.PartSize), size)
	if n > r.MaxParts || sofar > p.Ceiling || (!final && sofar >= p.Ceiling) {
		return r.ruleErr(ruleCeiling, sofar, p.Ceiling, n)
	}
	if !final {
		if size != p.PartSize {
			return r.ruleErr(rulePlannedPartSize, size, p.PartSize, n)
		}
		return nil
	}
	if size < 1 || size > p.PartSize {
		return r.ruleErr(rulePlannedPartSize, size, p.PartSize, n)
	}
	if p.Size != UnknownSize && sofar != p.Size {
		return r.ruleErr(ruleDeclaredSize, sofar, p.Size, n)
	}
	return nil
}

// validateLayout checks parts, the sizes of parts numbered 1..len(partSizes), against r: count,
// per-part minimum (all but the last) and maximum, equal non-final parts, the last part's limits
// and the object size. Contiguous numbering is implied by the slice. Errors are *RuleError.
func validateLayout(r Rules, partSizes []int64) error {
	if err := r.Validate(); err != nil {
		return err
	}
	n := len(partSizes)
	if n == 0 {
		return r.ruleErr(ruleMinParts, 0, 1, 0)
	}
	if n > r.MaxParts {
		return r.ruleErr(ruleMaxParts, int64(n), int64(r.MaxParts), 0)
	}
	var total int64
	smallest := unlimited // smallest non-final part, for the last-part rule
	for i, s := range partSizes {
		if s < 0 {
			return invalidf("part %d: size %d is negative", i+1, s)
		}
		total = addSat(total, s)
		if i < n-1 {
			if err := r.checkNonFinal(i+1, s, partSizes[0]); err != nil {
				return err
			}
			smallest = min(smallest, s)
		}
	}
	return r.checkFinal(n, partSizes[n-1], smallest, total)
}

// checkUniform is validateLayout for parts-1 parts of size p and a last part of size last,
// in constant time.
func (r Rules) checkUniform(p int64, parts int, last int64) error {
	if parts < 1 {
		return r.ruleErr(ruleMinParts, int64(parts), 1, 0)
	}
	if parts > r.MaxParts {
		return r.ruleErr(ruleMaxParts, int64(parts), int64(r.MaxParts), 0)
	}
	smallest := unlimited
	if parts > 1 {
		if err := r.checkNonFinal(1, p, p); err != nil {
			return err
		}
		smallest = p
	}
	return r.checkFinal(parts, last, smallest, addSat(mulSat(int64(parts-1), p), last))
}

func (r Rules) checkNonFinal(n int, size, first int64) error {
	switch {
	case size < r.MinPartSize:
		return r.ruleErr(ruleMinPartSize, size, r.MinPartSize, n)
	case size > r.MaxPartSize:
		return r.ruleErr(ruleMaxPartSize, size, r.MaxPartSize, n)
	case r.EqualParts && size != first:
		return r.ruleErr(ruleEqualParts, size, first, n)
	}
	return nil
}

// checkFinal checks the last part (number n) and the total; smallest is the smallest other part
// (unlimited when there is none).
func (r Rules) checkFinal(n int, last, smallest, total int64) error {
	switch {
	case last > r.MaxPartSize:
		return r.ruleErr(ruleMaxPartSize, last, r.MaxPartSize, n)
	case r.NonEmptyLastPart && last < 1:
		return r.ruleErr(ruleNonEmptyLastPart, last, 1, n)
	case r.LastPartNotLarger && last > smallest:
		return r.ruleErr(ruleLastPartNotLarger, last, smallest, n)
	case total > r.MaxObjectSize:
		return r.ruleErr(ruleMaxObjectSize, total, r.MaxObjectSize, 0)
	}
	return nil
}

func (r Rules) ruleErr(rule string, got, limit int64, part int) *RuleError {
	return &RuleError{Rule: rule, Profile: r.Name, Got: got, Limit: limit, Part: part}
}
