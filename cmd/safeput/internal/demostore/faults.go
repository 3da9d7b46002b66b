package demostore

import (
	"fmt"
	"strings"
)

// Fault is a failure the store plays in place of its usual answer.
type Fault uint8

// The faults the demo replays.
const (
	// ChecksumMismatch answers PutObject or UploadPart with 400 XAmzContentChecksumMismatch
	// (MinIO's code for a body that does not match its x-amz-checksum) and keeps nothing: a body
	// damaged on the way.
	ChecksumMismatch Fault = iota + 1
	// Truncate keeps the first half of a PutObject or UploadPart body and answers success with
	// the ETag of what it kept and the checksum it was sent echoed back: a store that lost the
	// end of the body and says OK.
	Truncate
	// SlowDown answers 503 SlowDown and does nothing: a throttling store.
	SlowDown
	// Forbidden answers 403 AccessDenied and does nothing: credentials the store refuses.
	Forbidden
)

// String names the fault.
func (f Fault) String() string {
	switch f {
	case ChecksumMismatch:
		return "ChecksumMismatch"
	case Truncate:
		return "Truncate"
	case SlowDown:
		return "SlowDown"
	case Forbidden:
		return "Forbidden"
	}
	return "NoFault"
}

// answer is the error the fault answers op with in the store's place; nil for none, and for
// Truncate, which the operation plays itself.
func (f Fault) answer(op, rid string) error {
	switch f {
	case ChecksumMismatch:
		return respErr(op, rid, 400, "XAmzContentChecksumMismatch", "The provided 'x-amz-checksum' header does not match what was computed.")
	case SlowDown:
		return respErr(op, rid, 503, "SlowDown", "Please reduce your request rate.")
	case Forbidden:
		return respErr(op, rid, 403, "AccessDenied", "Access Denied")
	}
	return nil
}

// appliesTo reports whether the fault can happen on op: the body faults only on a request with
// a body.
func (f Fault) appliesTo(op string) bool {
	if f == ChecksumMismatch || f == Truncate {
		return op == "PutObject" || op == "UploadPart"
	}
	return f != 0
}

// AnyOp makes a Rule match every operation.
const AnyOp = "*"

// Rule faults calls of operation Op ("PutObject", "UploadPart", ..., or AnyOp) with Fault. Part,
// when not 0, narrows an UploadPart rule to the calls of that part number, so a write's other
// requests do not shift which call it hits. The rule fires on the first Times calls it matches
// (Times 0: every one).
type Rule struct {
	Op    string
	Part  int32
	Times int
	Fault Fault
}

type ruleState struct {
	Rule
	seen int
}

func (r *ruleState) matches(op string, part int32) bool {
	return (r.Op == AnyOp || r.Op == op) && (r.Part == 0 || r.Part == part) && r.Fault.appliesTo(op)
}

// Injection records one fault played.
type Injection struct {
	Op    string
	Key   string
	Part  int32 // 0 but for UploadPart
	Fault Fault
}

func (i Injection) String() string {
	what := i.Op
	if i.Part > 0 {
		what = fmt.Sprintf("%s part %d", i.Op, i.Part)
	}
	return fmt.Sprintf("%s on %s of %s", i.Fault, what, i.Key)
}

// faultLocked picks the fault for a call: the first rule that fires on it (every matching rule
// counts the call), recorded. s.mu is held.
func (s *Store) faultLocked(op, key string, part int32) Fault {
	var f Fault
	for _, r := range s.rules {
		if !r.matches(op, part) {
			continue
		}
		r.seen++
		if f == 0 && (r.Times == 0 || r.seen <= r.Times) {
			f = r.Fault
		}
	}
	if f != 0 {
		s.injected = append(s.injected, Injection{Op: op, Key: key, Part: part, Fault: f})
	}
	return f
}

// Injected lists the faults played so far, in order, as text ("none" for none).
func (s *Store) Injected() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.injected) == 0 {
		return "none"
	}
	var out []string
	for _, i := range s.injected {
		out = append(out, i.String())
	}
	return strings.Join(out, "; ")
}

// Count returns how many times f was played.
func (s *Store) Count(f Fault) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, i := range s.injected {
		if i.Fault == f {
			n++
		}
	}
	return n
}
