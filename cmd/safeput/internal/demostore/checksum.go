package demostore

import (
	"crypto/md5"  //nolint:gosec // S3 ETags and Content-MD5 are MD5; not for security.
	"crypto/sha1" //nolint:gosec // S3's SHA1 checksum algorithm; not for security.
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"

	"github.com/minio/crc64nvme"

	"github.com/safeput/safeput/store"
)

// The checksums are computed here, not by the library, so that the store checks the writer's
// sums rather than agreeing with them.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// digest returns the raw big-endian digest of p for alg, or nil for an unknown algorithm.
func digest(alg store.ChecksumAlgorithm, p []byte) []byte {
	switch alg {
	case store.ChecksumCRC32:
		return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(p))
	case store.ChecksumCRC32C:
		return binary.BigEndian.AppendUint32(nil, crc32.Checksum(p, castagnoli))
	case store.ChecksumCRC64NVME:
		return binary.BigEndian.AppendUint64(nil, crc64nvme.Checksum(p))
	case store.ChecksumSHA1:
		d := sha1.Sum(p) //nolint:gosec // see import
		return d[:]
	case store.ChecksumSHA256:
		d := sha256.Sum256(p)
		return d[:]
	}
	return nil
}

// digestLen is the raw length of alg's digest, 0 for an unknown algorithm.
func digestLen(alg store.ChecksumAlgorithm) int {
	switch alg {
	case store.ChecksumCRC32, store.ChecksumCRC32C:
		return 4
	case store.ChecksumCRC64NVME:
		return 8
	case store.ChecksumSHA1:
		return sha1.Size
	case store.ChecksumSHA256:
		return sha256.Size
	}
	return 0
}

// isCRC reports whether alg may be a FULL_OBJECT checksum of a multipart upload.
func isCRC(alg store.ChecksumAlgorithm) bool {
	return alg == store.ChecksumCRC32 || alg == store.ChecksumCRC32C || alg == store.ChecksumCRC64NVME
}

// recomputed is c's algorithm over data (none when c is none), as a store that got data would
// compute it.
func recomputed(c store.Checksum, data []byte) store.Checksum {
	if c.IsZero() {
		return c
	}
	return store.Checksum{Algorithm: c.Algorithm, Value: b64(digest(c.Algorithm, data))}
}

func b64(p []byte) string { return base64.StdEncoding.EncodeToString(p) }

// decode decodes a base64 header value of n raw bytes, or reports it malformed.
func decode(v string, n int) ([]byte, bool) {
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil || n == 0 || len(raw) != n {
		return nil, false
	}
	return raw, true
}

func md5Of(p []byte) []byte {
	d := md5.Sum(p) //nolint:gosec // see import
	return d[:]
}

func hexOf(p []byte) string { return hex.EncodeToString(p) }
