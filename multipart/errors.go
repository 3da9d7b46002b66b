package multipart

import (
	"fmt"
	"strconv"

	"github.com/safeput/safeput/internal/bytesize"
	"github.com/safeput/safeput/store"
)

// invalidf reports bad caller input (negative sizes, zero concurrency, a malformed rules string):
// it wraps store.ErrInvalidInput so the writer classifies it with other invalid input.
func invalidf(format string, args ...any) error {
	return &inputError{msg: "multipart: " + fmt.Sprintf(format, args...)}
}

type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Unwrap() error { return store.ErrInvalidInput }

// Rule names one limit of Rules (or of a Plan), for RuleError.
type Rule string

// The rules a layout, a part or a caller's setting can break.
const (
	RuleMinPartSize       Rule = "minimum part size"
	RuleMaxPartSize       Rule = "maximum part size"
	RuleMinParts          Rule = "minimum part count"
	RuleMaxParts          Rule = "maximum part count"
	RuleMaxObjectSize     Rule = "maximum object size"
	RuleMaxSinglePut      Rule = "maximum single PUT"
	RuleEqualParts        Rule = "equal non-final parts"
	RuleLastPartNotLarger Rule = "last part no larger than the others"
	RuleNonEmptyLastPart  Rule = "non-empty last part"
	// RuleCeiling: a stream outgrew its plan: past the declared size, or for an unknown size past
	// part size x part limit (capped at the maximum object size). A larger ExpectedMaxSize gives a
	// larger part size and ceiling.
	RuleCeiling Rule = "plan ceiling"
	// RulePlannedPartSize: a part differs from the plan (a non-final part not exactly PartSize, or
	// a final part empty or larger than PartSize): a writer bug, since plans never do that.
	RulePlannedPartSize Rule = "planned part size"
	// RuleDeclaredSize: a known-size stream ended before its declared size.
	RuleDeclaredSize Rule = "declared size"
)

// RuleError says that a size or count breaks a store's rule. The writer wraps it into its
// Compatibility error; errors.As(err, new(*RuleError)) reaches it.
type RuleError struct {
	Rule    Rule
	Profile string
	// Got is the offending value and Limit the rule's bound, in bytes (counts for part-count rules).
	Got, Limit int64
	// Part is the 1-based part number involved, 0 when none.
	Part int
}

func (e *RuleError) Error() string {
	sz := bytesize.Format
	part := ""
	if e.Part > 0 {
		part = "part " + strconv.Itoa(e.Part) + ": "
	}
	of := " of profile " + e.Profile
	switch e.Rule {
	case RuleMinPartSize:
		return fmt.Sprintf("%spart size %s is below the minimum %s%s", part, sz(e.Got), sz(e.Limit), of)
	case RuleMaxPartSize:
		return fmt.Sprintf("%spart size %s is above the maximum %s%s", part, sz(e.Got), sz(e.Limit), of)
	case RuleMinParts:
		return fmt.Sprintf("part count %d is below the minimum %d%s", e.Got, e.Limit, of)
	case RuleMaxParts:
		return fmt.Sprintf("%spart count %d is above the maximum %d%s", part, e.Got, e.Limit, of)
	case RuleMaxObjectSize:
		return fmt.Sprintf("object size %s is above the maximum %s%s", sz(e.Got), sz(e.Limit), of)
	case RuleMaxSinglePut:
		return fmt.Sprintf("single PUT size %s is above the maximum %s%s", sz(e.Got), sz(e.Limit), of)
	case RuleEqualParts:
		return fmt.Sprintf("%spart size %s differs from the first part's %s; profile %s requires equal non-final parts", part, sz(e.Got), sz(e.Limit), e.Profile)
	case RuleLastPartNotLarger:
		return fmt.Sprintf("%slast part size %s is above the smallest other part's %s; profile %s requires the last part to be no larger", part, sz(e.Got), sz(e.Limit), e.Profile)
	case RuleNonEmptyLastPart:
		return fmt.Sprintf("%slast part is empty; profile %s requires at least %s", part, e.Profile, sz(e.Limit))
	case RuleCeiling:
		return fmt.Sprintf("%sstream is longer than this plan's ceiling %s (%s by the end of this part) under profile %s; plan with a larger expected size", part, sz(e.Limit), sz(e.Got), e.Profile)
	case RuleDeclaredSize:
		return fmt.Sprintf("%sstream ended at %s, short of the declared size %s (profile %s)", part, sz(e.Got), sz(e.Limit), e.Profile)
	case RulePlannedPartSize:
		return fmt.Sprintf("%spart size %s does not fit the plan: non-final parts are exactly %s, the last 1 B to %s (profile %s)", part, sz(e.Got), sz(e.Limit), sz(e.Limit), e.Profile)
	}
	return fmt.Sprintf("%s%s: got %d, limit %d%s", part, e.Rule, e.Got, e.Limit, of)
}
