package integrity

import (
	"crypto/md5" //nolint:gosec // ETags are MD5s; not for security.
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// MethodFor returns the method that compares a stored checksum of algorithm a.
func MethodFor(a store.ChecksumAlgorithm) verify.Method {
	return verify.Method(strings.ToLower(string(a)))
}

// Mismatch is a verification failure of ours: what was compared, expected and found. The writer
// classifies it as an Integrity error.
type Mismatch struct {
	What       string // "part 3 checksum", "object length", ...
	PartNumber int32
	Want, Got  string
}

func (m *Mismatch) Error() string {
	return fmt.Sprintf("verification failed: %s: want %s, store has %s", m.What, m.Want, m.Got)
}

// ETag is a parsed S3 ETag.
type ETag struct {
	// Hex is the digest part; for a single-PUT object on an MD5-ETag store, the body's MD5.
	Hex string
	// Parts is n for a multipart ETag "…-n", 0 otherwise.
	Parts int
}

// ParseETag reads an ETag as stores send it: quoted or not, optionally W/-prefixed, "hex" or
// "hex-n". It never panics; a malformed ETag gives ok false.
func ParseETag(s string) (e ETag, ok bool) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "W/")
	s = strings.Trim(s, `"`)
	if s == "" {
		return ETag{}, false
	}
	digest, count, multipart := strings.Cut(s, "-")
	if _, err := hex.DecodeString(digest); err != nil || len(digest) == 0 {
		return ETag{}, false
	}
	e.Hex = strings.ToLower(digest)
	if multipart {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > store.MaxPartNumber {
			return ETag{}, false
		}
		e.Parts = n
	}
	return e, true
}

// IsMD5 reports whether the ETag has the shape of an MD5 (32 hex digits, single-part).
func (e ETag) IsMD5() bool { return e.Parts == 0 && len(e.Hex) == 2*md5.Size }

// Receipt is what safeput sent for one part or a single PUT, to check the store's answer against.
type Receipt struct {
	PartNumber int32
	Size       int64
	Checksum   store.Checksum
	// MD5 is the body's MD5 when it was computed (Content-MD5 or an MD5-ETag store), else zero.
	MD5    [md5.Size]byte
	HasMD5 bool
}

// CheckReceipt compares an UploadPart or PutObject answer with what was sent, while the caller
// still holds the bytes: an echoed checksum must equal ours, and on a store whose ETag is an MD5
// (etagIsMD5) a well-formed MD5 ETag must equal the MD5 we computed. It returns the method that
// proved the receipt ("" when the store echoed nothing checkable) or a *Mismatch.
//
// A part's answer must carry an ETag (Complete needs it). A single PUT's (PartNumber 0) may
// not: some stores answer 200 without one, and the HEAD that follows decides.
func CheckReceipt(sent Receipt, etag string, echoed store.Checksums, etagIsMD5 bool) (verify.Method, error) {
	if etag == "" && sent.PartNumber != 0 {
		return "", &Mismatch{What: "receipt ETag", PartNumber: sent.PartNumber, Want: "an ETag", Got: "none"}
	}
	var method verify.Method
	if !sent.Checksum.IsZero() {
		if got := echoed.Get(sent.Checksum.Algorithm); got != "" {
			if got != sent.Checksum.Value {
				return "", &Mismatch{What: partWhat(sent.PartNumber, "echoed "+string(sent.Checksum.Algorithm)), PartNumber: sent.PartNumber, Want: sent.Checksum.Value, Got: got}
			}
			method = MethodFor(sent.Checksum.Algorithm)
		}
	}
	if etagIsMD5 && sent.HasMD5 {
		if e, ok := ParseETag(etag); ok && e.IsMD5() {
			if want := hex.EncodeToString(sent.MD5[:]); e.Hex != want {
				return "", &Mismatch{What: partWhat(sent.PartNumber, "ETag (MD5)"), PartNumber: sent.PartNumber, Want: want, Got: e.Hex}
			}
			if method == "" {
				method = verify.MethodETagMD5
			}
		}
	}
	return method, nil
}

func partWhat(n int32, what string) string {
	if n == 0 {
		return what
	}
	return fmt.Sprintf("part %d %s", n, what)
}

// CheckLayout compares the store's ListParts answer with the parts sent, before Complete: every
// part present, with the size sent and (when both are known) the ETag received and the part
// checksum sent. When one part's ETag is the MD5 of the bytes sent (Receipt.MD5), the store's
// part ETags are MD5s of what it received, so a part whose MD5-shaped ETag is not its MD5 was
// damaged on the way, even on a store that checks no checksum. It returns the
// part numbers that are missing or wrong, and a *Mismatch describing the first.
//
// A part number listed more than once (a store keeping one entry per attempt of a re-sent part)
// is judged by the entry that matches the receipt: the size sent, the ETag received and, where
// the entry lists one, the checksum sent. Entries that match carry that ETag, so Complete names
// one thing however many match; when none matches the part is wrong, as any part kept wrong.
func CheckLayout(sent []Receipt, etags map[int32]string, listed []store.Part) (bad []int32, err error) {
	byNumber := make(map[int32]store.Part, len(listed))
	entries := make(map[int32]int, len(listed))
	for _, p := range listed {
		entries[p.PartNumber]++
		if entries[p.PartNumber] == 1 {
			byNumber[p.PartNumber] = p
		}
	}
	unsettled := map[int32]bool{}
	for _, s := range sent {
		if entries[s.PartNumber] < 2 {
			continue
		}
		if p, ok := matchingEntry(s, etags[s.PartNumber], listed); ok {
			byNumber[s.PartNumber] = p
		} else {
			unsettled[s.PartNumber] = true
		}
	}
	etagOf := func(n int32) string {
		if p, ok := byNumber[n]; ok && p.ETag != "" {
			return p.ETag
		}
		return etags[n]
	}
	damaged := DamagedByETag(sent, etagOf)
	for _, s := range sent {
		p, ok := byNumber[s.PartNumber]
		switch {
		case !ok:
			bad = append(bad, s.PartNumber)
			if err == nil {
				err = &Mismatch{What: partWhat(s.PartNumber, "in ListParts"), PartNumber: s.PartNumber, Want: "present", Got: "missing"}
			}
		case unsettled[s.PartNumber]:
			bad = append(bad, s.PartNumber)
			if err == nil {
				err = &Mismatch{What: partWhat(s.PartNumber, "in ListParts"), PartNumber: s.PartNumber,
					Want: "an entry matching the receipt (size, ETag, checksum)", Got: fmt.Sprintf("%d entries, none matching", entries[s.PartNumber])}
			}
		case p.Size != s.Size:
			bad = append(bad, s.PartNumber)
			if err == nil {
				err = &Mismatch{What: partWhat(s.PartNumber, "size"), PartNumber: s.PartNumber, Want: strconv.FormatInt(s.Size, 10), Got: strconv.FormatInt(p.Size, 10)}
			}
		case etags[s.PartNumber] != "" && p.ETag != "" && trimETag(p.ETag) != trimETag(etags[s.PartNumber]):
			bad = append(bad, s.PartNumber)
			if err == nil {
				err = &Mismatch{What: partWhat(s.PartNumber, "ETag"), PartNumber: s.PartNumber, Want: etags[s.PartNumber], Got: p.ETag}
			}
		case !s.Checksum.IsZero() && p.Checksums.Get(s.Checksum.Algorithm) != "" && p.Checksums.Get(s.Checksum.Algorithm) != s.Checksum.Value:
			// The store kept different bytes than were sent, whatever its receipt said.
			bad = append(bad, s.PartNumber)
			if err == nil {
				err = &Mismatch{What: partWhat(s.PartNumber, "stored "+string(s.Checksum.Algorithm)), PartNumber: s.PartNumber, Want: s.Checksum.Value, Got: p.Checksums.Get(s.Checksum.Algorithm)}
			}
		case damaged[s.PartNumber]:
			bad = append(bad, s.PartNumber)
			if err == nil {
				err = &Mismatch{What: partWhat(s.PartNumber, "ETag (MD5)"), PartNumber: s.PartNumber, Want: hex.EncodeToString(s.MD5[:]), Got: etagOf(s.PartNumber)}
			}
		}
		delete(byNumber, s.PartNumber)
	}
	for n := range byNumber {
		bad = append(bad, n)
		if err == nil {
			err = &Mismatch{What: partWhat(n, "in ListParts"), PartNumber: n, Want: "absent (never sent)", Got: "present"}
		}
	}
	return bad, err
}

// matchingEntry returns the first entry of s's part number that matches the receipt: the size
// sent, the ETag received (etag) and the checksum sent where the entry lists that algorithm.
func matchingEntry(s Receipt, etag string, listed []store.Part) (store.Part, bool) {
	for _, p := range listed {
		if p.PartNumber != s.PartNumber || p.Size != s.Size {
			continue
		}
		if etag != "" && trimETag(p.ETag) != trimETag(etag) {
			continue
		}
		if !s.Checksum.IsZero() {
			if got := p.Checksums.Get(s.Checksum.Algorithm); got != "" && got != s.Checksum.Value {
				continue
			}
		}
		return p, true
	}
	return store.Part{}, false
}

// DamagedByETag returns the parts (by number) that were damaged on the way, as their ETags show:
// when one part's ETag is the MD5 of the bytes sent (Receipt.MD5), the store's part ETags are MD5s
// of what it received (128 bits do not match by chance), so every part whose MD5-shaped ETag is
// not its MD5 got other bytes. A store whose ETags are never content MD5s (SSE-KMS) shows no
// match, so nothing is called damaged there. etagOf gives the store's ETag of a part.
func DamagedByETag(sent []Receipt, etagOf func(part int32) string) map[int32]bool {
	var md5ETags bool
	differs := map[int32]bool{}
	for _, s := range sent {
		e, ok := ParseETag(etagOf(s.PartNumber))
		if !s.HasMD5 || !ok || !e.IsMD5() {
			continue
		}
		if strings.EqualFold(e.Hex, hex.EncodeToString(s.MD5[:])) {
			md5ETags = true
		} else {
			differs[s.PartNumber] = true
		}
	}
	if !md5ETags {
		return nil
	}
	return differs
}

func trimETag(s string) string { return strings.Trim(strings.TrimPrefix(s, "W/"), `"`) }

// Expected is what the object at the key must be after commit.
type Expected struct {
	Size int64
	// Checksum is the full-object checksum (zero when none was computed).
	Checksum store.Checksum
	// ETag is the locally computed ETag (MD5 or multipart MD5-of-MD5s), "" when not computed.
	ETag string
}

// CheckHead compares a HeadObject answer with what was written and names the strongest method
// it could use. Length is always compared; then the stored full-object checksum when the store
// returned one; then the ETag when expected.ETag is set and the store's ETag has that shape.
func CheckHead(want Expected, head *store.HeadObjectOutput) (verify.Method, error) {
	if head == nil {
		return "", &Mismatch{What: "HeadObject answer", Want: "an answer", Got: "none"}
	}
	if head.Size != want.Size {
		return "", &Mismatch{What: "object length", Want: strconv.FormatInt(want.Size, 10), Got: strconv.FormatInt(head.Size, 10)}
	}
	if !want.Checksum.IsZero() {
		if got := head.Checksums.Get(want.Checksum.Algorithm); got != "" && !compositeValue(got) {
			if got != want.Checksum.Value {
				return "", &Mismatch{What: "object " + string(want.Checksum.Algorithm), Want: want.Checksum.Value, Got: got}
			}
			return MethodFor(want.Checksum.Algorithm), nil
		}
	}
	if want.ETag != "" {
		w, okW := ParseETag(want.ETag)
		g, okG := ParseETag(head.ETag)
		if okW && okG && len(g.Hex) == 2*md5.Size {
			if w != g {
				return "", &Mismatch{What: "object ETag (MD5)", Want: want.ETag, Got: head.ETag}
			}
			return verify.MethodETagMD5, nil
		}
	}
	return verify.MethodLengthOnly, nil
}

// compositeValue reports a COMPOSITE checksum ("…-n"), which is not the full-object value.
func compositeValue(v string) bool { return strings.Contains(v, "-") }
