// Package integrity computes the checksums safeput sends and compares what a store reports with
// what was written: per-part receipts, the layout before commit, and the object after commit.
package integrity

import (
	"crypto/md5" //nolint:gosec // MD5 is what S3 ETags and Content-MD5 use; not for security.
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"

	"github.com/minio/crc64nvme"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sum returns the base64 checksum of p with algorithm a, as S3 spells it in x-amz-checksum-*.
func Sum(a store.ChecksumAlgorithm, p []byte) (string, error) {
	switch a {
	case store.ChecksumCRC64NVME:
		return EncodeCRC64(crc64nvme.Checksum(p)), nil
	case store.ChecksumCRC32C:
		return EncodeCRC32(crc32.Checksum(p, castagnoli)), nil
	case store.ChecksumCRC32:
		return EncodeCRC32(crc32.ChecksumIEEE(p)), nil
	}
	h, err := verify.NewHash(a)
	if err != nil {
		return "", err
	}
	_, _ = h.Write(p)
	return base64.StdEncoding.EncodeToString(h.Sum(nil)), nil
}

// EncodeCRC64 is S3's spelling of a 64-bit CRC: base64 of the big-endian bytes.
func EncodeCRC64(v uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return base64.StdEncoding.EncodeToString(b[:])
}

// EncodeCRC32 is S3's spelling of a 32-bit CRC.
func EncodeCRC32(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return base64.StdEncoding.EncodeToString(b[:])
}

// MD5Base64 returns the Content-MD5 header value of p and the raw digest.
func MD5Base64(p []byte) (string, [md5.Size]byte) {
	d := md5.Sum(p) //nolint:gosec // see import
	return base64.StdEncoding.EncodeToString(d[:]), d
}

// CRC is a running CRC that can also be combined from per-part values without a second pass.
// It covers the CRC algorithms S3 accepts as FULL_OBJECT checksums.
type CRC struct {
	alg   store.ChecksumAlgorithm
	value uint64
	size  int64
}

// NewCRC starts a running CRC for alg (CRC64NVME, CRC32C or CRC32).
func NewCRC(alg store.ChecksumAlgorithm) (*CRC, error) {
	if _, ok := polys[alg]; !ok {
		return nil, fmt.Errorf("verify: %q is not a combinable CRC (want CRC64NVME, CRC32C or CRC32)", alg)
	}
	return &CRC{alg: alg}, nil
}

// IsCRC reports whether alg is a CRC that CRC and Combine support.
func IsCRC(alg store.ChecksumAlgorithm) bool {
	_, ok := polys[alg]
	return ok
}

// Update adds p to the running value.
func (c *CRC) Update(p []byte) {
	c.value = updateCRC(c.alg, c.value, p)
	c.size += int64(len(p))
}

// Append extends the CRC by a following block whose own CRC is v over n bytes.
func (c *CRC) Append(v uint64, n int64) {
	c.value = Combine(c.alg, c.value, v, n)
	c.size += n
}

// Value returns the CRC of everything added so far.
func (c *CRC) Value() uint64 { return c.value }

// Size returns the number of bytes covered.
func (c *CRC) Size() int64 { return c.size }

// String returns the S3 base64 spelling.
func (c *CRC) String() string { return EncodeCRCValue(c.alg, c.value) }

// ChecksumOf computes the raw CRC value of p for alg.
func ChecksumOf(alg store.ChecksumAlgorithm, p []byte) uint64 { return updateCRC(alg, 0, p) }

// EncodeCRCValue spells a raw CRC value of alg as S3 does.
func EncodeCRCValue(alg store.ChecksumAlgorithm, v uint64) string {
	if alg == store.ChecksumCRC64NVME {
		return EncodeCRC64(v)
	}
	return EncodeCRC32(uint32(v)) //nolint:gosec // 32-bit CRCs are kept in the low half.
}

func updateCRC(alg store.ChecksumAlgorithm, crc uint64, p []byte) uint64 {
	switch alg {
	case store.ChecksumCRC64NVME:
		return crc64nvme.Update(crc, p)
	case store.ChecksumCRC32C:
		return uint64(crc32.Update(uint32(crc), castagnoli, p)) //nolint:gosec // low half
	case store.ChecksumCRC32:
		return uint64(crc32.Update(uint32(crc), crc32.IEEETable, p)) //nolint:gosec // low half
	}
	return 0
}

// crcPoly is a reflected CRC polynomial and its width.
type crcPoly struct {
	poly  uint64
	width uint
}

var polys = map[store.ChecksumAlgorithm]crcPoly{
	store.ChecksumCRC64NVME: {poly: crc64nvme.NVME, width: 64},
	store.ChecksumCRC32C:    {poly: crc32.Castagnoli, width: 32},
	store.ChecksumCRC32:     {poly: crc32.IEEE, width: 32},
}

// Combine returns the CRC of A‖B from crc(A), crc(B) and len(B), for CRCs whose initial value
// equals their final XOR (all of S3's). It is zlib's crc32_combine (multiply by x^(8·len) mod P)
// generalised to 64 bits: O(log len) work, so per-part CRCs computed in parallel give the
// full-object value without a second pass over the data.
func Combine(alg store.ChecksumAlgorithm, crcA, crcB uint64, lenB int64) uint64 {
	p, ok := polys[alg]
	if !ok || lenB <= 0 {
		if lenB == 0 {
			return crcA
		}
		return 0
	}
	return multModP(p, xPow8n(p, uint64(lenB)), crcA) ^ crcB
}

// multModP multiplies a and b modulo the reflected polynomial (bit width-1 is x^0).
func multModP(p crcPoly, a, b uint64) uint64 {
	top := uint64(1) << (p.width - 1)
	var prod uint64
	for m := top; m != 0; m >>= 1 {
		if a&m != 0 {
			prod ^= b
		}
		if b&1 != 0 {
			b = (b >> 1) ^ p.poly
		} else {
			b >>= 1
		}
	}
	return prod
}

// xPow8n returns x^(8n) mod P by repeated squaring.
func xPow8n(p crcPoly, n uint64) uint64 {
	top := uint64(1) << (p.width - 1)
	result := top  // x^0
	sq := top >> 8 // x^8: one byte
	for ; n != 0; n >>= 1 {
		if n&1 != 0 {
			result = multModP(p, sq, result)
		}
		sq = multModP(p, sq, sq)
	}
	return result
}

// MultipartETag is the ETag S3-style stores give a multipart object: hex(md5(md5₁‖…‖md5ₙ))-n.
func MultipartETag(partMD5s [][md5.Size]byte) string {
	h := md5.New() //nolint:gosec // see import
	for _, d := range partMD5s {
		_, _ = h.Write(d[:])
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(partMD5s))
}

// Update extends a raw CRC value of alg over p (ChecksumOf is Update from 0).
func Update(alg store.ChecksumAlgorithm, crc uint64, p []byte) uint64 { return updateCRC(alg, crc, p) }
