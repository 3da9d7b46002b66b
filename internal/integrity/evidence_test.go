package integrity

import (
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

func TestAssess(t *testing.T) {
	body := []byte("hello")
	crc, _ := Sum(store.ChecksumCRC64NVME, body)
	const md5hex = "5d41402abc4b2a76b9719d911017c592"
	mp := MultipartETag([][16]byte{{1}, {2}})
	withCRC := func(v string) store.Checksums {
		var c store.Checksums
		c.Set(store.ChecksumCRC64NVME, v)
		return c
	}
	want := Expected{Size: 5, Checksum: store.Checksum{Algorithm: store.ChecksumCRC64NVME, Value: crc}, ETag: md5hex}
	cases := []struct {
		name      string
		want      Expected
		head      *store.HeadObjectOutput
		trusted   bool
		method    verify.Method
		mismatch  bool
		missing   string // a fragment of Missing, when weak
		etagMatch bool
	}{
		{"no answer", want, nil, false, "", true, "", false},
		{"length differs", want, &store.HeadObjectOutput{Size: 4, ETag: md5hex}, false, "", true, "", false},
		{"checksum equal", want, &store.HeadObjectOutput{Size: 5, ETag: md5hex, Checksums: withCRC(crc)}, false, verify.MethodCRC64NVME, false, "", true},
		{"checksum differs", want, &store.HeadObjectOutput{Size: 5, ETag: md5hex, Checksums: withCRC("AAAAAAAAAAA=")}, false, "", true, "", false},
		{"composite checksum ignored", want, &store.HeadObjectOutput{Size: 5, ETag: md5hex, Checksums: withCRC("AAAAAAAAAAA=-2")}, false, verify.MethodETagMD5, false, "", true},
		{"MD5 ETag only", want, &store.HeadObjectOutput{Size: 5, ETag: `"` + md5hex + `"`}, false, verify.MethodETagMD5, false, "", true},
		{"multipart ETag", Expected{Size: 5, ETag: mp}, &store.HeadObjectOutput{Size: 5, ETag: mp}, false, verify.MethodETagMD5, false, "", true},
		{"multipart ETag of another part count", Expected{Size: 5, ETag: mp}, &store.HeadObjectOutput{Size: 5, ETag: strings.Replace(mp, "-2", "-3", 1)}, false, verify.MethodLengthOnly, false, "not known to make MD5 ETags", false},
		{"ETag differs, store not known for MD5 ETags", want, &store.HeadObjectOutput{Size: 5, ETag: strings.Repeat("0", 32)}, false, verify.MethodLengthOnly, false, "not known to make MD5 ETags", false},
		{"ETag differs on an MD5-ETag store", want, &store.HeadObjectOutput{Size: 5, ETag: strings.Repeat("0", 32)}, true, "", true, "", false},
		{"ETag differs but the checksum proves it", want, &store.HeadObjectOutput{Size: 5, ETag: strings.Repeat("0", 32), Checksums: withCRC(crc)}, true, verify.MethodCRC64NVME, false, "", false},
		{"ETag not an MD5", want, &store.HeadObjectOutput{Size: 5, ETag: "opaque-etag"}, false, verify.MethodLengthOnly, false, "is not an MD5", false},
		{"nothing computed", Expected{Size: 5}, &store.HeadObjectOutput{Size: 5, ETag: md5hex}, false, verify.MethodLengthOnly, false, "no MD5 was computed", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := Assess(c.want, c.head, c.trusted)
			if (ev.Mismatch != nil) != c.mismatch {
				t.Fatalf("mismatch %v, want %v", ev.Mismatch, c.mismatch)
			}
			if c.mismatch {
				if ev.Strong() {
					t.Fatal("a mismatch reported strong")
				}
				return
			}
			if ev.Method != c.method || ev.ETagMatched != c.etagMatch {
				t.Fatalf("method %q etag matched %v, want %q %v", ev.Method, ev.ETagMatched, c.method, c.etagMatch)
			}
			if c.missing != "" && !strings.Contains(strings.Join(ev.Missing, "; "), c.missing) {
				t.Fatalf("missing %q lacks %q", ev.Missing, c.missing)
			}
		})
	}
}
