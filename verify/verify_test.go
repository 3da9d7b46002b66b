package verify_test

import (
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// TestNewHash: each algorithm's Sum, base64-encoded, is the x-amz-checksum-* value of the check
// string "123456789": the CRC catalogue's check values, and the digests sha1sum and sha256sum
// print for it.
func TestNewHash(t *testing.T) {
	want := map[store.ChecksumAlgorithm]string{
		store.ChecksumCRC32:     "cbf43926",
		store.ChecksumCRC32C:    "e3069283",
		store.ChecksumCRC64NVME: "ae8b14860a799888",
		store.ChecksumSHA1:      "f7c3bc1d808e04732adf679965ccc34ca7ae3441",
		store.ChecksumSHA256:    "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225",
	}
	for alg, hexSum := range want {
		h, err := verify.NewHash(alg)
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		_, _ = h.Write([]byte("123456789"))
		raw, _ := hex.DecodeString(hexSum)
		if got, w := base64.StdEncoding.EncodeToString(h.Sum(nil)), base64.StdEncoding.EncodeToString(raw); got != w {
			t.Errorf("%s: %s, want %s", alg, got, w)
		}
	}
	if _, err := verify.NewHash(store.ChecksumNone); err == nil {
		t.Error("NewHash(ChecksumNone) gave a hash")
	}
}
