// Package multipart holds the rules S3-compatible stores impose on uploads and plans part layouts
// that satisfy them.
//
// Provider differences are data: one table of Rules (profiles.go), read by one planner. The
// default profile, "strict", is the intersection of every profile in the table, so a plan made
// with it is accepted by every store we know of (a property test proves it for each profile).
package multipart

import (
	"fmt"
	"strings"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/store"
)

// ChecksumTypes is the set of multipart checksum types a store accepts for one algorithm.
// Zero means the store does not accept the algorithm at all (not even on a single PUT).
type ChecksumTypes uint8

// The checksum types, as bits.
const (
	FullObject ChecksumTypes = 1 << iota
	Composite
)

// Has reports whether every type in u is in t.
func (t ChecksumTypes) Has(u ChecksumTypes) bool { return t&u == u }

// String is "none", "full", "composite" or "full+composite", the spelling Parse accepts.
func (t ChecksumTypes) String() string {
	switch t & (FullObject | Composite) {
	case FullObject:
		return "full"
	case Composite:
		return "composite"
	case FullObject | Composite:
		return "full+composite"
	}
	return "none"
}

func parseChecksumTypes(s string) (ChecksumTypes, error) {
	switch strings.ToLower(s) {
	case "none":
		return 0, nil
	case "full":
		return FullObject, nil
	case "composite":
		return Composite, nil
	case "full+composite", "composite+full":
		return FullObject | Composite, nil
	}
	return 0, fmt.Errorf("checksum types %q: want none, full, composite or full+composite", s)
}

// ChecksumSupport says, per x-amz-checksum algorithm, which multipart checksum types a store
// accepts. A struct rather than a map keeps Rules comparable and copies independent.
type ChecksumSupport struct {
	CRC32, CRC32C, CRC64NVME, SHA1, SHA256 ChecksumTypes
}

// checksumAlgorithms is the order used by String, Parse and documentation.
var checksumAlgorithms = []store.ChecksumAlgorithm{
	store.ChecksumCRC32, store.ChecksumCRC32C, store.ChecksumCRC64NVME, store.ChecksumSHA1, store.ChecksumSHA256,
}

func (c *ChecksumSupport) field(a store.ChecksumAlgorithm) *ChecksumTypes {
	switch a {
	case store.ChecksumCRC32:
		return &c.CRC32
	case store.ChecksumCRC32C:
		return &c.CRC32C
	case store.ChecksumCRC64NVME:
		return &c.CRC64NVME
	case store.ChecksumSHA1:
		return &c.SHA1
	case store.ChecksumSHA256:
		return &c.SHA256
	}
	return nil
}

// Types returns the checksum types accepted for algorithm a (0 for an unknown algorithm).
func (c ChecksumSupport) Types(a store.ChecksumAlgorithm) ChecksumTypes {
	if f := c.field(a); f != nil {
		return *f
	}
	return 0
}

// Allows reports whether the store accepts algorithm a with type t. Sending no checksum is always
// allowed; ChecksumTypeNone with an algorithm means a single PUT, allowed when a is accepted at all.
func (c ChecksumSupport) Allows(a store.ChecksumAlgorithm, t store.ChecksumType) bool {
	if a == store.ChecksumNone {
		return t == store.ChecksumTypeNone
	}
	types := c.Types(a)
	switch t {
	case store.ChecksumTypeNone:
		return types != 0
	case store.ChecksumTypeFullObject:
		return types.Has(FullObject)
	case store.ChecksumTypeComposite:
		return types.Has(Composite)
	}
	return false
}

// String is "none" or e.g. "CRC32:full+composite CRC64NVME:full", for tables and messages.
func (c ChecksumSupport) String() string {
	var parts []string
	for _, a := range checksumAlgorithms {
		if t := c.Types(a); t != 0 {
			parts = append(parts, string(a)+":"+t.String())
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// Rules are what one store accepts. Limits are in bytes; unlimited means no limit. A zero Rules is
// invalid: start from Profile or Parse.
type Rules struct {
	// Name appears in every error ("... of profile minio").
	Name string

	// MinPartSize applies to every part but the last; MaxPartSize to every part.
	MinPartSize, MaxPartSize int64
	// MaxParts is the largest part count (and part number). At most store.MaxPartNumber.
	MaxParts int
	// MaxObjectSize caps the whole object; MaxSinglePut caps one PutObject.
	MaxObjectSize, MaxSinglePut int64
	// EqualParts: every non-final part has the same size (R2).
	EqualParts bool
	// LastPartNotLarger: the last part is no larger than the others (R2).
	LastPartNotLarger bool
	// NonEmptyLastPart: the last part holds at least 1 byte (B2).
	NonEmptyLastPart bool
	// ContiguousPartNumbers: parts are numbered 1..N without gaps (COS). Plans always are.
	ContiguousPartNumbers bool

	// Checksums the store accepts as x-amz-checksum-* headers, per algorithm and type.
	Checksums ChecksumSupport
	// ContentMD5: the store checks a Content-MD5 header on PutObject and UploadPart.
	ContentMD5 bool
	// ConditionalPut / ConditionalComplete: If-None-Match: * is honoured on PutObject /
	// CompleteMultipartUpload (412 when the key exists). False also means "unverified": a
	// create-only write sends the header either way, and where it is false also checks the key
	// free with a HEAD before the commit, in case the store ignores the header.
	ConditionalPut, ConditionalComplete bool
	// SinglePutETagMD5: a PutObject's ETag is the hex MD5 of the body. MultipartETagMD5: a
	// multipart object's ETag is hex(md5(concat(part MD5s)))-N. Both assume no SSE-KMS/SSE-C.
	SinglePutETagMD5, MultipartETagMD5 bool
	// HeadChecksums: HEAD with x-amz-checksum-mode: ENABLED returns the stored checksums.
	HeadChecksums bool
	// PreferredChecksum is the CRC a writer sends when its caller chooses none: the one the
	// store checks most cheaply (strict: CRC32C, offered). Empty means CRC64NVME.
	PreferredChecksum store.ChecksumAlgorithm
}

// Checksum is the CRC a writer sends when its caller chooses none: PreferredChecksum, else
// CRC64NVME.
func (r Rules) Checksum() store.ChecksumAlgorithm {
	if r.PreferredChecksum == "" {
		return store.ChecksumCRC64NVME
	}
	return r.PreferredChecksum
}

// Validate reports the first inconsistency in r: a limit out of range, or limits that no layout
// can satisfy.
func (r Rules) Validate() error {
	bad := func(format string, args ...any) error {
		return invalidf("rules %q: "+format, append([]any{r.Name}, args...)...)
	}
	if err := validName(r.Name); err != nil {
		return invalidf("rules: %v", err)
	}
	switch {
	case r.MinPartSize < 0:
		return bad("minimum part size %s is negative", bytesize.Format(r.MinPartSize))
	case r.MaxPartSize < 1:
		return bad("maximum part size %s must be at least 1 B", bytesize.Format(r.MaxPartSize))
	case r.MinPartSize > r.MaxPartSize:
		return bad("minimum part size %s is above the maximum part size %s", bytesize.Format(r.MinPartSize), bytesize.Format(r.MaxPartSize))
	case r.MaxParts < 1 || r.MaxParts > store.MaxPartNumber:
		// S3 part numbers stop at 10,000; the store package rejects larger ones.
		return bad("maximum part count %d is outside 1..%d", r.MaxParts, store.MaxPartNumber)
	case r.MaxObjectSize < 1:
		return bad("maximum object size %s must be at least 1 B", bytesize.Format(r.MaxObjectSize))
	case r.MaxSinglePut < 0:
		return bad("maximum single PUT %s is negative", bytesize.Format(r.MaxSinglePut))
	case r.MaxSinglePut > r.MaxObjectSize:
		return bad("maximum single PUT %s is above the maximum object size %s", bytesize.Format(r.MaxSinglePut), bytesize.Format(r.MaxObjectSize))
	}
	for _, a := range checksumAlgorithms {
		if t := r.Checksums.Types(a); t&^(FullObject|Composite) != 0 {
			return bad("checksum types %d for %s are not a set of full/composite", t, a)
		}
	}
	switch r.PreferredChecksum {
	case "", store.ChecksumCRC64NVME:
	case store.ChecksumCRC32, store.ChecksumCRC32C:
		// A preference the store does not accept would only ever be sent to be refused. Rules
		// that list no checksum (strict, unverified stores) only offer one: any CRC may be tried.
		if r.Checksums != (ChecksumSupport{}) && r.Checksums.Types(r.PreferredChecksum) == 0 {
			return bad("preferred checksum %s is not one the store accepts", r.PreferredChecksum)
		}
	default:
		return bad("preferred checksum %q is not a CRC (want CRC64NVME, CRC32C or CRC32)", r.PreferredChecksum)
	}
	return nil
}

func validName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("name %q: want 1 to 64 characters", name)
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && !strings.ContainsRune("._+-", c) {
			return fmt.Errorf("name %q: only letters, digits and . _ + - are allowed", name)
		}
	}
	return nil
}

// maxMultipartObject is the largest object a multipart upload can make under r.
func (r Rules) maxMultipartObject() int64 {
	return min(r.MaxObjectSize, mulSat(r.MaxPartSize, int64(r.MaxParts)))
}

// intersect returns rules that every one of rs accepts: the largest minimum, the smallest
// maximum, every layout constraint of any of them, and only the capabilities all of them share.
// The strict profile is the intersect of all.
func intersect(name string, rs ...Rules) Rules {
	if len(rs) == 0 {
		return Rules{Name: name}
	}
	out := rs[0]
	out.Name = name
	for _, r := range rs[1:] {
		out.MinPartSize = max(out.MinPartSize, r.MinPartSize)
		out.MaxPartSize = min(out.MaxPartSize, r.MaxPartSize)
		out.MaxParts = min(out.MaxParts, r.MaxParts)
		out.MaxObjectSize = min(out.MaxObjectSize, r.MaxObjectSize)
		out.MaxSinglePut = min(out.MaxSinglePut, r.MaxSinglePut)
		out.EqualParts = out.EqualParts || r.EqualParts
		out.LastPartNotLarger = out.LastPartNotLarger || r.LastPartNotLarger
		out.NonEmptyLastPart = out.NonEmptyLastPart || r.NonEmptyLastPart
		out.ContiguousPartNumbers = out.ContiguousPartNumbers || r.ContiguousPartNumbers
		for _, a := range checksumAlgorithms {
			*out.Checksums.field(a) &= r.Checksums.Types(a)
		}
		out.ContentMD5 = out.ContentMD5 && r.ContentMD5
		out.ConditionalPut = out.ConditionalPut && r.ConditionalPut
		out.ConditionalComplete = out.ConditionalComplete && r.ConditionalComplete
		out.SinglePutETagMD5 = out.SinglePutETagMD5 && r.SinglePutETagMD5
		out.MultipartETagMD5 = out.MultipartETagMD5 && r.MultipartETagMD5
		out.HeadChecksums = out.HeadChecksums && r.HeadChecksums
		if out.PreferredChecksum != r.PreferredChecksum {
			out.PreferredChecksum = "" // no common preference: the default
		}
	}
	if out.PreferredChecksum != "" && out.Checksums != (ChecksumSupport{}) && out.Checksums.Types(out.PreferredChecksum) == 0 {
		out.PreferredChecksum = ""
	}
	return out
}
