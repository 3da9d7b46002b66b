// Package verify names how safeput checked a landed object against what was written:
// writer.Result.Verified and writer.Event.Method hold a Method. The checks themselves are
// internal to the writer; NewHash lets a caller compute a store's checksum of its own copy.
package verify

import (
	"crypto/sha1" //nolint:gosec // S3's SHA1 checksum, compared, not a security boundary
	"crypto/sha256"
	"fmt"
	"hash"
	"hash/crc32"

	"github.com/minio/crc64nvme"

	"github.com/safeput/safeput/store"
)

// Method names how a landed object was checked against what was written.
type Method string

// The methods, strongest first. Only LengthOnly is weak: it cannot see a flipped byte.
const (
	MethodReadBack   Method = "read-back"
	MethodCRC64NVME  Method = "crc64nvme"
	MethodCRC32C     Method = "crc32c"
	MethodCRC32      Method = "crc32"
	MethodSHA256     Method = "sha256"
	MethodSHA1       Method = "sha1"
	MethodETagMD5    Method = "etag-md5"
	MethodLengthOnly Method = "length-only"
)

// Strong reports whether the method compares content, not just length.
func (m Method) Strong() bool { return m != MethodLengthOnly && m != "" }

// NewHash returns a hash of the checksum algorithm a whose Sum, base64-encoded, is the value S3
// gives in x-amz-checksum-* for the same bytes: a caller checks an object's reported checksum
// against its own copy with it.
func NewHash(a store.ChecksumAlgorithm) (hash.Hash, error) {
	switch a {
	case store.ChecksumCRC64NVME:
		return crc64nvme.New(), nil
	case store.ChecksumCRC32C:
		return crc32.New(crc32.MakeTable(crc32.Castagnoli)), nil
	case store.ChecksumCRC32:
		return crc32.NewIEEE(), nil
	case store.ChecksumSHA256:
		return sha256.New(), nil
	case store.ChecksumSHA1:
		return sha1.New(), nil //nolint:gosec // S3's SHA1 checksum is compared, not trusted for security
	}
	return nil, fmt.Errorf("verify: no hash for checksum algorithm %q", a)
}
