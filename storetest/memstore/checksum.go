package memstore

import (
	"crypto/md5"  //nolint:gosec // S3 ETags and Content-MD5 are MD5; not for security.
	"crypto/sha1" //nolint:gosec // S3's SHA1 checksum algorithm; not for security.
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"strings"

	"github.com/minio/crc64nvme"

	"github.com/safeput/safeput/store"
)

// The checksums here are computed independently of internal/integrity on purpose: memstore is the
// oracle the writer's tests run against, so it must not share its bugs.

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

func b64(p []byte) string { return base64.StdEncoding.EncodeToString(p) }

// decodeChecksum decodes a checksum header value, or reports it malformed.
func decodeChecksum(c store.Checksum) ([]byte, bool) {
	raw, err := base64.StdEncoding.DecodeString(c.Value)
	if err != nil || len(raw) != digestLen(c.Algorithm) {
		return nil, false
	}
	return raw, true
}

func md5Hex(p []byte) (string, [md5.Size]byte) {
	d := md5.Sum(p) //nolint:gosec // see import
	return hex.EncodeToString(d[:]), d
}

// multipartETag is S3's ETag of a multipart object: hex(md5(concat of part MD5s))-N.
func multipartETag(partMD5s [][md5.Size]byte) string {
	h := md5.New() //nolint:gosec // see import
	for _, d := range partMD5s {
		_, _ = h.Write(d[:])
	}
	return hex.EncodeToString(h.Sum(nil)) + "-" + itoa(len(partMD5s))
}

// unquote strips the quotes S3 puts around ETags, so quoted and bare ETags compare equal.
func unquote(etag string) string { return strings.Trim(etag, `"`) }
