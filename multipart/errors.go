package multipart

import (
	"fmt"
	"strconv"

	"github.com/safeput/safeput/bytesize"
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

// The rules a layout, a part or a caller's setting can break: RuleError.Rule names one. They are
// the words of the error message, not constants to compare: a caller acts on the error's Kind
// (Compatibility), and a person reads the rule.
const (
	ruleMinPartSize       = "minimum part size"
	ruleMaxPartSize       = "maximum part size"
	ruleMinParts          = "minimum part count"
	ruleMaxParts          = "maximum part count"
	ruleMaxObjectSize     = "maximum object size"
	ruleMaxSinglePut      = "maximum single PUT"
	ruleEqualParts        = "equal non-final parts"
	ruleLastPartNotLarger = "last part no larger than the others"
	ruleNonEmptyLastPart  = "non-empty last part"
	// ruleCeiling: a stream outgrew its plan: past the declared size, or for an unknown size past
	// part size x part limit (capped at the maximum object size). A larger ExpectedMaxSize gives a
	// larger part size and ceiling.
	ruleCeiling = "plan ceiling"
	// rulePlannedPartSize: a part differs from the plan (a non-final part not exactly PartSize, or
	// a final part empty or larger than PartSize): a writer bug, since plans never do that.
	rulePlannedPartSize = "planned part size"
	// ruleDeclaredSize: a known-size stream ended before its declared size.
	ruleDeclaredSize = "declared size"
)

// RuleError says that a size or count breaks a store's rule. The writer wraps it into its
// Compatibility error; errors.As(err, new(*RuleError)) reaches it.
type RuleError struct {
	Rule    string // the limit broken, in words: "minimum part size", "plan ceiling", ...
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
	case ruleMinPartSize:
		return fmt.Sprintf("%spart size %s is below the minimum %s%s", part, sz(e.Got), sz(e.Limit), of)
	case ruleMaxPartSize:
		return fmt.Sprintf("%spart size %s is above the maximum %s%s", part, sz(e.Got), sz(e.Limit), of)
	case ruleMinParts:
		return fmt.Sprintf("part count %d is below the minimum %d%s", e.Got, e.Limit, of)
	case ruleMaxParts:
		return fmt.Sprintf("%spart count %d is above the maximum %d%s", part, e.Got, e.Limit, of)
	case ruleMaxObjectSize:
		return fmt.Sprintf("object size %s is above the maximum %s%s", sz(e.Got), sz(e.Limit), of)
	case ruleMaxSinglePut:
		return fmt.Sprintf("single PUT size %s is above the maximum %s%s", sz(e.Got), sz(e.Limit), of)
	case ruleEqualParts:
		return fmt.Sprintf("%spart size %s differs from the first part's %s; profile %s requires equal non-final parts", part, sz(e.Got), sz(e.Limit), e.Profile)
	case ruleLastPartNotLarger:
		return fmt.Sprintf("%slast part size %s is above the smallest other part's %s; profile %s requires the last part to be no larger", part, sz(e.Got), sz(e.Limit), e.Profile)
	case ruleNonEmptyLastPart:
		return fmt.Sprintf("%slast part is empty; profile %s requires at least %s", part, e.Profile, sz(e.Limit))
	case ruleCeiling:
		return fmt.Sprintf("%sstream is longer than this plan's ceiling %s (%s by the end of this part) under profile %s; plan with a larger expected size", part, sz(e.Limit), sz(e.Got), e.Profile)
	case ruleDeclaredSize:
		return fmt.Sprintf("%sstream ended at %s, short of the declared size %s (profile %s)", part, sz(e.Got), sz(e.Limit), e.Profile)
	case rulePlannedPartSize:
		return fmt.Sprintf("%spart size %s does not fit the plan: non-final parts are exactly %s, the last 1 B to %s (profile %s)", part, sz(e.Got), sz(e.Limit), sz(e.Limit), e.Profile)
	}
	return fmt.Sprintf("%s%s: got %d, limit %d%s", part, e.Rule, e.Got, e.Limit, of)
}
