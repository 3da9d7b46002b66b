package integrity

import (
	"crypto/md5" //nolint:gosec // ETags are MD5s; not for security.
	"fmt"
	"strconv"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// Evidence is what a HEAD answer proves about a committed object.
type Evidence struct {
	// Method is the strongest comparison that matched; verify.MethodLengthOnly when only the length did.
	Method verify.Method
	// Mismatch is set when the answer proves the object differs from what was written.
	Mismatch *Mismatch
	// Missing names each strong comparison that could not be made, and why, for an
	// Unverifiable error or a length-only result.
	Missing []string
	// ETagMatched: the ETag equals our MD5 (or MD5-of-part-MD5s-N). ETagDiffered: it has that
	// shape but another value, which proves nothing on a store whose ETags may not be MD5s.
	ETagMatched, ETagDiffered bool
	// ChecksumReported: the HEAD carried the full-object checksum of our algorithm.
	ChecksumReported bool
}

// Strong reports whether the evidence proves the object is the bytes written.
func (e Evidence) Strong() bool { return e.Mismatch == nil && e.Method.Strong() }

// Assess compares a HeadObject answer with what was written, using every piece of evidence it
// holds: length, the stored full-object checksum, and the ETag as an MD5 (single PUT) or
// MD5-of-part-MD5s-N (multipart). etagIsMD5 says the store is known to make MD5 ETags (its
// profile says so, or an earlier write of the same writer.Uploader matched): only then does a
// different ETag prove a different object; otherwise it is just not evidence.
func Assess(want Expected, head *store.HeadObjectOutput, etagIsMD5 bool) Evidence {
	var ev Evidence
	if head == nil {
		ev.Mismatch = &Mismatch{What: "HeadObject answer", Want: "an answer", Got: "none"}
		return ev
	}
	if head.Size != want.Size {
		ev.Mismatch = &Mismatch{What: "object length", Want: strconv.FormatInt(want.Size, 10), Got: strconv.FormatInt(head.Size, 10)}
		return ev
	}
	ev.Method = verify.MethodLengthOnly
	if want.Checksum.IsZero() {
		ev.Missing = append(ev.Missing, "no checksum was computed (Options.NoChecksum)")
	} else if got := head.Checksums.Get(want.Checksum.Algorithm); got != "" && !compositeValue(got) {
		ev.ChecksumReported = true
		if got != want.Checksum.Value {
			ev.Mismatch = &Mismatch{What: "object " + string(want.Checksum.Algorithm), Want: want.Checksum.Value, Got: got}
			return ev
		}
		ev.Method = MethodFor(want.Checksum.Algorithm)
	} else {
		ev.Missing = append(ev.Missing, fmt.Sprintf("HEAD reported no full-object %s checksum", want.Checksum.Algorithm))
	}
	if want.ETag == "" {
		ev.Missing = append(ev.Missing, "no MD5 was computed to compare with the ETag")
		return ev
	}
	w, _ := ParseETag(want.ETag)
	g, ok := ParseETag(head.ETag)
	switch {
	case !ok || len(g.Hex) != 2*md5.Size:
		ev.Missing = append(ev.Missing, fmt.Sprintf("the ETag %q is not an MD5", head.ETag))
	case g == w:
		ev.ETagMatched = true
		if !ev.Method.Strong() {
			ev.Method = verify.MethodETagMD5
		}
	default:
		ev.ETagDiffered = true
		if etagIsMD5 && !ev.Method.Strong() {
			ev.Mismatch = &Mismatch{What: "object ETag (MD5)", Want: want.ETag, Got: head.ETag}
			return ev
		}
		ev.Missing = append(ev.Missing, fmt.Sprintf("the ETag %q is not our MD5 %q, and this store is not known to make MD5 ETags", head.ETag, want.ETag))
	}
	return ev
}
