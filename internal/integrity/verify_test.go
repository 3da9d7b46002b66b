package integrity

import (
	"bytes"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc64"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// Combining per-part CRCs must give exactly the CRC of the whole, for every algorithm S3 accepts
// as a full-object checksum and for awkward part lengths.
func TestCombineEqualsWholeCRC(t *testing.T) {
	data := randBytes(3<<20 + 7)
	for _, alg := range []store.ChecksumAlgorithm{store.ChecksumCRC64NVME, store.ChecksumCRC32C, store.ChecksumCRC32} {
		whole, _ := Sum(alg, data)
		for _, part := range []int{1, 7, 4096, 1 << 20, 3 << 20, len(data)} {
			c, err := NewCRC(alg)
			if err != nil {
				t.Fatal(err)
			}
			for off := 0; off < len(data); off += part {
				end := min(off+part, len(data))
				c.Append(ChecksumOf(alg, data[off:end]), int64(end-off))
			}
			if got := c.String(); got != whole {
				t.Fatalf("%s part %d: combined %s, whole %s", alg, part, got, whole)
			}
			if c.Size() != int64(len(data)) {
				t.Fatalf("size %d", c.Size())
			}
		}
		// Running updates agree too.
		c, _ := NewCRC(alg)
		c.Update(data[:100])
		c.Update(data[100:])
		if c.String() != whole {
			t.Fatalf("%s: running %s, whole %s", alg, c.String(), whole)
		}
	}
}

func TestCombineEmpty(t *testing.T) {
	a := ChecksumOf(store.ChecksumCRC64NVME, []byte("abc"))
	if Combine(store.ChecksumCRC64NVME, a, 0, 0) != a {
		t.Fatal("appending nothing changed the CRC")
	}
	if _, err := NewCRC(store.ChecksumSHA256); err == nil {
		t.Fatal("SHA256 is not combinable")
	}
}

// Known vector: CRC64NVME of "123456789" is 0xae8b14860a799888.
func TestCRC64NVMEVector(t *testing.T) {
	if got := ChecksumOf(store.ChecksumCRC64NVME, []byte("123456789")); got != 0xae8b14860a799888 {
		t.Fatalf("got %x", got)
	}
}

func TestParseETag(t *testing.T) {
	for _, tc := range []struct {
		in    string
		ok    bool
		parts int
	}{
		{`"9b2cf535f27731c974343645a3985328"`, true, 0},
		{`9b2cf535f27731c974343645a3985328-12`, true, 12},
		{`W/"abc1"`, true, 0},
		{``, false, 0},
		{`"-3"`, false, 0},
		{`zz`, false, 0},
		{`ab-0`, false, 0},
		{`ab-x`, false, 0},
	} {
		e, ok := ParseETag(tc.in)
		if ok != tc.ok || e.Parts != tc.parts {
			t.Errorf("ParseETag(%q) = %+v, %v", tc.in, e, ok)
		}
	}
}

func FuzzParseETag(f *testing.F) {
	for _, s := range []string{`"d41d8cd98f00b204e9800998ecf8427e"`, `abc-2`, `W/"x"`, `-`, `"`, `a-99999999999999999999`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, ok := ParseETag(s)
		if ok {
			if _, err := hex.DecodeString(e.Hex); err != nil || e.Hex == "" || e.Hex != strings.ToLower(e.Hex) {
				t.Fatalf("ParseETag(%q) = %+v: digest not lower-case hex", s, e)
			}
			if e.Parts < 0 || e.Parts > store.MaxPartNumber || (e.Parts > 0) != strings.Contains(s, "-") {
				t.Fatalf("ParseETag(%q) = %+v: part count out of bounds or invented", s, e)
			}
			if back, ok := ParseETag(renderETag(e.Hex, e.Parts)); !ok || back != e {
				t.Fatalf("ParseETag(%q) = %+v, but its rendering parses as %+v, %v", s, e, back, ok)
			}
		}
		// Generated ETags, in every form stores send, parse to exactly what was rendered.
		if s == "" {
			return
		}
		digest := hex.EncodeToString([]byte(s))
		parts := len(s) % 3 * (1 + int(s[0])%store.MaxPartNumber) // 0 for a third of inputs
		want := ETag{Hex: digest, Parts: parts}
		plain := renderETag(strings.ToUpper(digest), parts)
		for _, form := range []string{plain, `"` + plain + `"`, `W/"` + plain + `"`, " \t" + `"` + plain + `"` + " "} {
			if got, ok := ParseETag(form); !ok || got != want {
				t.Fatalf("ParseETag(%q) = %+v, %v; want %+v", form, got, ok, want)
			}
		}
		if got := want.IsMD5(); got != (len(s) == md5.Size && parts == 0) {
			t.Fatalf("%+v IsMD5 = %v", want, got)
		}
	})
}

// renderETag writes an ETag the way S3 does: the digest, then "-n" for a multipart object.
func renderETag(digest string, parts int) string {
	if parts > 0 {
		return digest + "-" + strconv.Itoa(parts)
	}
	return digest
}

func TestCheckReceipt(t *testing.T) {
	body := []byte("hello")
	sum, _ := Sum(store.ChecksumCRC64NVME, body)
	md5b64, md5raw := MD5Base64(body)
	_ = md5b64
	sent := Receipt{PartNumber: 2, Size: 5, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum}, MD5: md5raw, HasMD5: true}
	var echoed store.Checksums
	echoed.Set(store.ChecksumCRC64NVME, sum)
	if m, err := CheckReceipt(sent, `"5d41402abc4b2a76b9719d911017c592"`, echoed, true); err != nil || m != verify.MethodCRC64NVME {
		t.Fatalf("good receipt: %v %v", m, err)
	}
	echoed.CRC64NVME = "AAAAAAAAAAA="
	var mm *Mismatch
	if _, err := CheckReceipt(sent, `"5d41402abc4b2a76b9719d911017c592"`, echoed, true); !errors.As(err, &mm) || mm.PartNumber != 2 {
		t.Fatalf("wrong echo not caught: %v", err)
	}
	if m, err := CheckReceipt(sent, `"00000000000000000000000000000000"`, store.Checksums{}, true); !errors.As(err, &mm) {
		t.Fatalf("wrong MD5 ETag not caught: %v %v", m, err)
	}
	if m, err := CheckReceipt(sent, `"5d41402abc4b2a76b9719d911017c592"`, store.Checksums{}, true); err != nil || m != verify.MethodETagMD5 {
		t.Fatalf("md5 receipt: %v %v", m, err)
	}
	if _, err := CheckReceipt(sent, ``, store.Checksums{}, true); err == nil {
		t.Fatal("missing ETag accepted")
	}
}

func TestCheckLayout(t *testing.T) {
	sent := []Receipt{{PartNumber: 1, Size: 10}, {PartNumber: 2, Size: 3}}
	etags := map[int32]string{1: "a", 2: "b"}
	if bad, err := CheckLayout(sent, etags, []store.Part{{PartNumber: 1, Size: 10, ETag: `"a"`}, {PartNumber: 2, Size: 3, ETag: "b"}}); err != nil || len(bad) != 0 {
		t.Fatalf("good layout: %v %v", bad, err)
	}
	if bad, err := CheckLayout(sent, etags, []store.Part{{PartNumber: 1, Size: 10, ETag: "a"}, {PartNumber: 2, Size: 2, ETag: "b"}}); err == nil || len(bad) != 1 || bad[0] != 2 {
		t.Fatalf("short part: %v %v", bad, err)
	}
	if bad, err := CheckLayout(sent, etags, []store.Part{{PartNumber: 1, Size: 10, ETag: "a"}}); err == nil || bad[0] != 2 {
		t.Fatalf("missing part: %v %v", bad, err)
	}
	if bad, err := CheckLayout(sent, etags, []store.Part{{PartNumber: 1, Size: 10, ETag: "z"}, {PartNumber: 2, Size: 3, ETag: "b"}}); err == nil || bad[0] != 1 {
		t.Fatalf("etag: %v %v", bad, err)
	}
	if _, err := CheckLayout(sent, etags, []store.Part{{PartNumber: 1, Size: 10}, {PartNumber: 2, Size: 3}, {PartNumber: 9, Size: 1}}); err == nil {
		t.Fatal("extra part accepted")
	}
}

// A part number listed once per attempt passes when an entry matches the receipt, wherever it
// is listed, and is wrong when none does.
func TestCheckLayoutPartListedTwice(t *testing.T) {
	crc := func(v string) store.Checksums { return store.Checksums{CRC64NVME: v} }
	sent := []Receipt{{PartNumber: 1, Size: 10, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: "good"}}, {PartNumber: 2, Size: 3}}
	etags := map[int32]string{1: "kept", 2: "b"}
	two := store.Part{PartNumber: 2, Size: 3, ETag: "b"}
	for _, c := range []struct {
		name   string
		listed []store.Part
		bad    []int32
	}{
		{"stale first", []store.Part{{PartNumber: 1, Size: 5, ETag: "stale"}, {PartNumber: 1, Size: 10, ETag: `"kept"`, Checksums: crc("good")}, two}, nil},
		{"stale last", []store.Part{{PartNumber: 1, Size: 10, ETag: "kept", Checksums: crc("good")}, {PartNumber: 1, Size: 10, ETag: "stale"}, two}, nil},
		{"same attempt listed twice", []store.Part{{PartNumber: 1, Size: 10, ETag: "kept"}, {PartNumber: 1, Size: 10, ETag: "kept"}, two}, nil},
		{"none matches: sizes", []store.Part{{PartNumber: 1, Size: 5, ETag: "kept"}, {PartNumber: 1, Size: 9, ETag: "kept"}, two}, []int32{1}},
		{"none matches: ETags", []store.Part{{PartNumber: 1, Size: 10, ETag: "x"}, {PartNumber: 1, Size: 10, ETag: "y"}, two}, []int32{1}},
		{"none matches: kept ETag, stored checksum differs", []store.Part{{PartNumber: 1, Size: 10, ETag: "kept", Checksums: crc("bad")}, {PartNumber: 1, Size: 10, ETag: "stale", Checksums: crc("good")}, two}, []int32{1}},
		{"part 2 listed twice, none matching", []store.Part{{PartNumber: 1, Size: 10, ETag: "kept"}, {PartNumber: 2, Size: 3, ETag: "x"}, {PartNumber: 2, Size: 2, ETag: "b"}}, []int32{2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad, err := CheckLayout(sent, etags, c.listed)
			if !slices.Equal(bad, c.bad) || (err == nil) != (c.bad == nil) {
				t.Fatalf("bad %v, err %v; want bad %v", bad, err, c.bad)
			}
		})
	}
}

// On a store that checks no checksum, a part damaged on the way is seen before Complete when
// another part's ETag is its MD5; ETags that are never MD5s (SSE-KMS) prove nothing.
func TestCheckLayoutSeesADamagedPartByItsETag(t *testing.T) {
	one, two := md5.Sum([]byte("part one")), md5.Sum([]byte("part two"))
	damaged := md5.Sum([]byte("part twO"))
	sent := []Receipt{{PartNumber: 1, Size: 8, MD5: one, HasMD5: true}, {PartNumber: 2, Size: 8, MD5: two, HasMD5: true}}
	layout := func(e1, e2 [16]byte) ([]int32, error) {
		h1, h2 := `"`+hex.EncodeToString(e1[:])+`"`, hex.EncodeToString(e2[:])
		return CheckLayout(sent, map[int32]string{1: h1, 2: h2}, []store.Part{{PartNumber: 1, Size: 8, ETag: h1}, {PartNumber: 2, Size: 8, ETag: h2}})
	}
	if bad, err := layout(one, two); err != nil || len(bad) != 0 {
		t.Fatalf("every ETag its MD5: %v %v", bad, err)
	}
	var m *Mismatch
	if bad, err := layout(one, damaged); !errors.As(err, &m) || len(bad) != 1 || bad[0] != 2 || m.What != "part 2 ETag (MD5)" {
		t.Fatalf("part 2 damaged: %v %v", bad, err)
	}
	if bad, err := layout(two, one); err != nil || len(bad) != 0 {
		t.Fatalf("no ETag an MD5 of its part (SSE-KMS): %v %v", bad, err)
	}
	noMD5 := []Receipt{{PartNumber: 1, Size: 8}, {PartNumber: 2, Size: 8, MD5: two, HasMD5: true}}
	h1, h2 := hex.EncodeToString(one[:]), hex.EncodeToString(damaged[:])
	if bad, err := CheckLayout(noMD5, nil, []store.Part{{PartNumber: 1, Size: 8, ETag: h1}, {PartNumber: 2, Size: 8, ETag: h2}}); err != nil || len(bad) != 0 {
		t.Fatalf("no MD5 computed for the matching part: %v %v", bad, err)
	}
}

func TestCheckHead(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100)
	sum, _ := Sum(store.ChecksumCRC64NVME, body)
	want := Expected{Size: 100, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sum}}
	head := &store.HeadObjectOutput{Size: 100}
	if m, err := CheckHead(want, head); err != nil || m != verify.MethodLengthOnly || m.Strong() {
		t.Fatalf("no checksum: %v %v", m, err)
	}
	head.Checksums.CRC64NVME = sum
	if m, err := CheckHead(want, head); err != nil || m != verify.MethodCRC64NVME || !m.Strong() {
		t.Fatalf("checksum: %v %v", m, err)
	}
	head.Checksums.CRC64NVME = "AAAAAAAAAAA="
	if _, err := CheckHead(want, head); err == nil {
		t.Fatal("wrong checksum accepted")
	}
	head.Size = 99
	if _, err := CheckHead(want, head); err == nil {
		t.Fatal("short object accepted")
	}
	_, d := MD5Base64(body)
	etag := MultipartETag([][16]byte{d, d})
	if m, err := CheckHead(Expected{Size: 100, ETag: etag}, &store.HeadObjectOutput{Size: 100, ETag: `"` + etag + `"`}); err != nil || m != verify.MethodETagMD5 {
		t.Fatalf("etag: %v %v", m, err)
	}
	if _, err := CheckHead(Expected{Size: 100, ETag: etag}, &store.HeadObjectOutput{Size: 100, ETag: "00000000000000000000000000000000-2"}); err == nil {
		t.Fatal("wrong multipart etag accepted")
	}
}

func BenchmarkCRC64NVME(b *testing.B) {
	buf := randBytes(16 << 20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		ChecksumOf(store.ChecksumCRC64NVME, buf)
	}
}

func BenchmarkCRC32C(b *testing.B) {
	buf := randBytes(16 << 20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		ChecksumOf(store.ChecksumCRC32C, buf)
	}
}

func BenchmarkMD5(b *testing.B) {
	buf := randBytes(16 << 20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		MD5Base64(buf)
	}
}

func BenchmarkCombineCRC64NVME(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Combine(store.ChecksumCRC64NVME, 0x1234, 0x5678, 16<<20)
	}
}

// Receipts and HEAD answers come from the store: whatever they hold, checking them never panics
// and never calls a mismatch a match.
func FuzzCheckReceipt(f *testing.F) {
	f.Add(`"5d41402abc4b2a76b9719d911017c592"`, "EwyJ4+GIoEM=", "EwyJ4+GIoEM=", true, int64(5))
	f.Add(``, ``, `x`, false, int64(-1))
	f.Add(`W/"zz-3"`, "AAAA", "", true, int64(1<<40))
	f.Fuzz(func(t *testing.T, etag, sent, echoed string, etagIsMD5 bool, size int64) {
		r := Receipt{PartNumber: 1, Size: size, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: sent}}
		var got store.Checksums
		got.Set(store.ChecksumCRC64NVME, echoed)
		m, err := CheckReceipt(r, etag, got, etagIsMD5)
		if err == nil && echoed != "" && sent != "" && echoed != sent {
			t.Fatalf("mismatch %q vs %q accepted as %s", sent, echoed, m)
		}
		head := &store.HeadObjectOutput{Size: size, ETag: etag, Checksums: got}
		m, err = CheckHead(Expected{Size: size, Checksum: r.Checksum, ETag: etag}, head)
		if err == nil && m == verify.MethodCRC64NVME && echoed != sent {
			t.Fatalf("HEAD checksum %q vs %q accepted", echoed, sent)
		}

		// The MD5 path, with expectations computed here by crypto/md5 and hash/crc64, not by
		// the package: a body, its receipt, and ETags that are right, re-cased, or one digit off.
		body := []byte(etag + sent + echoed)
		sum := md5.Sum(body)
		digest := hex.EncodeToString(sum[:])
		crc := crc64.Checksum(body, crc64NVMETable)
		crcB64 := base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(nil, crc))
		if own, err := Sum(store.ChecksumCRC64NVME, body); err != nil || own != crcB64 {
			t.Fatalf("Sum(CRC64NVME) = %q, %v; hash/crc64 with the NVMe polynomial gives %q", own, err, crcB64)
		}
		md5Receipt := Receipt{PartNumber: 3, Size: int64(len(body)), MD5: sum, HasMD5: true}
		for _, good := range []string{`"` + digest + `"`, strings.ToUpper(digest)} {
			if m, err := CheckReceipt(md5Receipt, good, store.Checksums{}, true); err != nil || m != verify.MethodETagMD5 {
				t.Fatalf("right MD5 ETag %s: %q, %v", good, m, err)
			}
		}
		i := int(uint64(size) % uint64(len(digest)))
		flipped := []byte(digest)
		flipped[i] = "1032547698badcfe"[strings.IndexByte("0123456789abcdef", flipped[i])]
		wrong := `"` + string(flipped) + `"`
		var mm *Mismatch
		if _, err := CheckReceipt(md5Receipt, wrong, store.Checksums{}, true); !errors.As(err, &mm) || mm.PartNumber != 3 || mm.Want != digest || mm.Got != string(flipped) {
			t.Fatalf("MD5 ETag off at digit %d: %v, want a part 3 mismatch %s vs %s", i, err, digest, flipped)
		}
		if m, err := CheckReceipt(md5Receipt, wrong, store.Checksums{}, false); err != nil || m != "" {
			t.Fatalf("a store without MD5 ETags: %q, %v; want no method and no error", m, err)
		}
		// A matching CRC echo is the stronger method even beside an MD5 ETag.
		both := md5Receipt
		both.Checksum = store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crcB64}
		var echo store.Checksums
		echo.Set(store.ChecksumCRC64NVME, crcB64)
		if m, err := CheckReceipt(both, `"`+digest+`"`, echo, true); err != nil || m != verify.MethodCRC64NVME {
			t.Fatalf("CRC echo and MD5 ETag both right: %q, %v", m, err)
		}
		// Whatever ETag was fuzzed: accepted as an MD5 ETag only if it carries this digest.
		if m, err := CheckReceipt(md5Receipt, etag, store.Checksums{}, etagIsMD5); err == nil && m == verify.MethodETagMD5 {
			if e, _ := ParseETag(etag); e.Hex != digest {
				t.Fatalf("ETag %q accepted as the MD5 of a body whose MD5 is %s", etag, digest)
			}
		}
	})
}

// crc64NVMETable is CRC-64/NVME for hash/crc64: the polynomial in its reversed notation.
var crc64NVMETable = crc64.MakeTable(0x9A6C9329AC4BC9B5)
