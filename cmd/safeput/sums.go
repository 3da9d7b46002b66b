package main

import (
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s: compared as the store computes them
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// checksumOf is p's x-amz-checksum-* value with algorithm a ("" when a has none).
func checksumOf(a store.ChecksumAlgorithm, p []byte) string {
	h, err := verify.NewHash(a)
	if err != nil {
		return ""
	}
	_, _ = h.Write(p)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// multipartETag is the ETag S3-style stores give a multipart object: hex(md5(md5₁‖…‖md5ₙ))-n.
func multipartETag(partMD5s [][md5.Size]byte) string {
	h := md5.New() //nolint:gosec // see import
	for _, d := range partMD5s {
		_, _ = h.Write(d[:])
	}
	return fmt.Sprintf("%s-%d", hex.EncodeToString(h.Sum(nil)), len(partMD5s))
}

// storeETag is an ETag as stores send it (quoted or not, W/-prefixed or not): its hex digest and,
// for a multipart ETag "hex-n", the part count n (0 for a single PUT). ok is false when it has
// neither shape, so the verify command says it cannot compare rather than comparing nonsense.
type storeETag struct {
	Hex   string
	Parts int
}

func parseETag(s string) (e storeETag, ok bool) {
	s = strings.Trim(strings.TrimPrefix(strings.TrimSpace(s), "W/"), `"`)
	digest, count, multi := strings.Cut(s, "-")
	if _, err := hex.DecodeString(digest); err != nil || digest == "" {
		return e, false
	}
	e.Hex = strings.ToLower(digest)
	if multi {
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 || n > store.MaxPartNumber {
			return storeETag{}, false
		}
		e.Parts = n
	}
	return e, true
}
