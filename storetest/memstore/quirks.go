package memstore

import (
	"crypto/md5" //nolint:gosec // S3 ETags are MD5; not for security.
	"encoding/hex"
	"strings"

	"github.com/safeput/safeput/store"
)

// checksumHeaders refuses any x-amz-checksum-* header when the store is set to
// (RejectChecksumHeaders), as a store that does not know them and validates headers would.
func (s *Store) checksumHeaders(op, rid string, alg store.ChecksumAlgorithm) error {
	if s.rules.RejectChecksumHeaders && alg != store.ChecksumNone {
		return respErr(op, rid, 400, "InvalidArgument", "x-amz-checksum-"+strings.ToLower(string(alg))+" is not supported")
	}
	return nil
}

// checksumHeader applies the checksum quirks to a body's checksum header: refused, or dropped
// as if never sent (IgnoreChecksumHeaders).
func (s *Store) checksumHeader(op, rid string, c store.Checksum) (store.Checksum, error) {
	if err := s.checksumHeaders(op, rid, c.Algorithm); err != nil {
		return c, err
	}
	if s.rules.IgnoreChecksumHeaders {
		return store.Checksum{}, nil
	}
	return c, nil
}

// defaultChecksum is what the store keeps for an object that was sent no checksum: a
// CRC64NVME as AWS computes one, or nothing (MinIO, Ceph RGW).
func (s *Store) defaultChecksum(data []byte) store.Checksums {
	if s.rules.NoDefaultChecksum || s.rules.IgnoreChecksumHeaders {
		return store.Checksums{}
	}
	return checksumsOf(store.ChecksumCRC64NVME, b64(digest(store.ChecksumCRC64NVME, data)), store.ChecksumTypeFullObject)
}

// objectETag turns a committed object's MD5 ETag into an opaque one of the same shape when the
// store's ETags are not MD5s (OpaqueETags): 32 hex digits, "-N" kept for multipart objects.
func (s *Store) objectETag(etag string) string {
	if !s.rules.OpaqueETags {
		return etag
	}
	digest, count, multipart := strings.Cut(etag, "-")
	d := md5.Sum([]byte("opaque:" + digest)) //nolint:gosec // see import
	out := hex.EncodeToString(d[:])
	if multipart {
		out += "-" + count
	}
	return out
}

// answerETag is the ETag a PutObject or Complete answer carries: none at all with
// EmptyCommitETag (Ceph RGW's <ETag></ETag>), though HEAD has it.
func (s *Store) answerETag(etag string) string {
	if s.rules.EmptyCommitETag {
		return ""
	}
	return etag
}
