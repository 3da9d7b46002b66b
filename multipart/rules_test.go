package multipart

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/store"
	"pgregory.net/rapid"
)

func TestProfileNames(t *testing.T) {
	want := []string{"aws", "b2", "ceph", "cos", "digitalocean", "garage", "gcs", "minio", "obs", "oss", "r2", "seaweedfs", "strict", "versitygw", "wasabi"}
	if got := ProfileNames(); !slices.Equal(got, want) {
		t.Fatalf("ProfileNames() = %v, want %v", got, want)
	}
	for _, name := range want {
		r, err := Profile(strings.ToUpper(name))
		if err != nil {
			t.Fatalf("Profile(%q): %v", name, err)
		}
		if r.Name != name {
			t.Errorf("Profile(%q).Name = %q", name, r.Name)
		}
		if err := r.Validate(); err != nil {
			t.Errorf("profile %s: %v", name, err)
		}
	}
	if !slices.IsSortedFunc(profiles, func(a, b Rules) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("the profile table is not sorted by name")
	}
}

func TestUnknownProfile(t *testing.T) {
	_, err := Profile("s4")
	if err == nil {
		t.Fatal("Profile(s4) succeeded")
	}
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("error %v does not wrap store.ErrInvalidInput", err)
	}
	want := `multipart: unknown profile "s4" (valid: aws, b2, ceph, cos, digitalocean, garage, gcs, minio, obs, oss, r2, seaweedfs, strict, versitygw, wasabi)`
	if err.Error() != want {
		t.Errorf("got  %q\nwant %q", err.Error(), want)
	}
	if _, err := Parse("profile=s4,min=8MiB"); err == nil || !strings.Contains(err.Error(), "valid: aws") {
		t.Errorf("Parse with an unknown profile: %v", err)
	}
}

// TestStrictValues pins the default profile, so a table change that moves it is seen in review.
func TestStrictValues(t *testing.T) {
	want := Rules{
		Name:        "strict",
		MinPartSize: 5 * bytesize.MiB,
		// B2, OBS, OSS, COS and DO write "5 GB", read as 5e9: below R2's 5 GiB - 5 MiB.
		MaxPartSize:   5 * gb,
		MaxParts:      10000,
		MaxObjectSize: 5 * tb,
		MaxSinglePut:  5 * gb,
		EqualParts:    true, LastPartNotLarger: true, // R2
		NonEmptyLastPart:      true, // B2
		ContiguousPartNumbers: true, // COS
		// No checksum, Content-MD5 (B2, R2 UploadPart unverified), conditional write, MD5 ETag or
		// HEAD checksum is shared by every store.
		// CRC32C is offered: the cheapest FULL_OBJECT CRC for the stores that check one.
		PreferredChecksum: store.ChecksumCRC32C,
	}
	got, err := Profile("strict")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("strict =\n%s\nwant\n%s", got, want)
	}
	if p, _ := Parse(""); p != want {
		t.Errorf(`Parse("") = %s, want strict`, p)
	}
}

// TestStrictIsIntersection checks strict against every profile field by field: it must be at
// least as restrictive as each, and promise no capability that any lacks.
func TestStrictIsIntersection(t *testing.T) {
	for _, r := range profiles {
		if !narrower(strict, r) {
			t.Errorf("strict is not narrower than %s:\n%s\n%s", r.Name, strict, r)
		}
	}
}

// narrower reports whether a accepts nothing that b rejects and claims no capability b lacks.
func narrower(a, b Rules) bool {
	ok := a.MinPartSize >= b.MinPartSize && a.MaxPartSize <= b.MaxPartSize && a.MaxParts <= b.MaxParts &&
		a.MaxObjectSize <= b.MaxObjectSize && a.MaxSinglePut <= b.MaxSinglePut &&
		(a.EqualParts || !b.EqualParts) && (a.LastPartNotLarger || !b.LastPartNotLarger) &&
		(a.NonEmptyLastPart || !b.NonEmptyLastPart) && (a.ContiguousPartNumbers || !b.ContiguousPartNumbers) &&
		(!a.ContentMD5 || b.ContentMD5) && (!a.ConditionalPut || b.ConditionalPut) &&
		(!a.ConditionalComplete || b.ConditionalComplete) && (!a.SinglePutETagMD5 || b.SinglePutETagMD5) &&
		(!a.MultipartETagMD5 || b.MultipartETagMD5) && (!a.HeadChecksums || b.HeadChecksums)
	for _, alg := range checksumAlgorithms {
		ok = ok && b.Checksums.Types(alg).Has(a.Checksums.Types(alg))
	}
	return ok
}

func TestChecksumSupport(t *testing.T) {
	r2, _ := Profile("r2")
	aws, _ := Profile("aws")
	for _, tc := range []struct {
		r    Rules
		alg  store.ChecksumAlgorithm
		typ  store.ChecksumType
		want bool
	}{
		{r2, store.ChecksumCRC64NVME, store.ChecksumTypeFullObject, true},
		{r2, store.ChecksumCRC64NVME, store.ChecksumTypeComposite, false},
		{r2, store.ChecksumCRC32C, store.ChecksumTypeFullObject, false},
		{r2, store.ChecksumCRC32C, store.ChecksumTypeComposite, true},
		{r2, store.ChecksumSHA256, store.ChecksumTypeNone, true},
		{aws, store.ChecksumCRC32, store.ChecksumTypeFullObject, true},
		{aws, store.ChecksumSHA1, store.ChecksumTypeFullObject, false},
		{strict, store.ChecksumCRC32, store.ChecksumTypeNone, false},
		{strict, store.ChecksumNone, store.ChecksumTypeNone, true},
		{aws, store.ChecksumNone, store.ChecksumTypeComposite, false},
		{aws, "MD5", store.ChecksumTypeNone, false},
	} {
		if got := tc.r.Checksums.Allows(tc.alg, tc.typ); got != tc.want {
			t.Errorf("%s Allows(%q, %q) = %v", tc.r.Name, tc.alg, tc.typ, got)
		}
	}
	if got := strict.Checksums.String(); got != "none" {
		t.Errorf("strict checksums = %q, want none", got)
	}
	if got := r2.Checksums.String(); got != "CRC32:composite CRC32C:composite CRC64NVME:full SHA1:composite SHA256:composite" {
		t.Errorf("r2 checksums = %q", got)
	}
}

func TestParse(t *testing.T) {
	r, err := Parse("min=5MiB,max=5GiB,parts=10000,equal")
	if err != nil {
		t.Fatal(err)
	}
	want := strict
	want.Name, want.MaxPartSize = "custom", 5*bytesize.GiB
	if r != want {
		t.Errorf("got  %s\nwant %s", r, want)
	}

	r, err = Parse(" profile=r2 , min=8MiB ")
	if err != nil {
		t.Fatal(err)
	}
	want, _ = Profile("r2")
	want.Name, want.MinPartSize = "r2-custom", 8*bytesize.MiB
	if r != want {
		t.Errorf("got  %s\nwant %s", r, want)
	}

	r, err = Parse("parts=500,profile=aws,name=myvgw,checksums=none,crc64nvme=full,equal=false,condput=0")
	if err != nil {
		t.Fatal(err)
	}
	want, _ = Profile("aws")
	want.Name, want.MaxParts, want.Checksums, want.ConditionalPut = "myvgw", 500, ChecksumSupport{CRC64NVME: FullObject}, false
	if r != want {
		t.Errorf("got  %s\nwant %s", r, want)
	}

	if r, err := Parse("profile=minio"); err != nil || r.Name != "minio" {
		t.Errorf("profile=minio: %v %v", r.Name, err)
	}
	if r, err := Parse("Garage"); err != nil || r.Name != "garage" || r.MaxPartSize != unlimited {
		t.Errorf("Garage: %v %v", r, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nosuch", `unknown profile "nosuch"`},
		{"min=5MiB,,max=5GiB", "empty item"},
		{"min=", "min= has no value"},
		{"min=1MiB,min=2MiB", "min given twice"},
		{"size=5MiB", `unknown key "size" (valid: profile, checksums, name, min, max`},
		{"min=five", `min: size "five"`},
		{"parts=many", `parts: "many" is not a whole number`},
		{"equal=maybe", `equal: "maybe" is not true or false`},
		{"crc32=half", `crc32: checksum types "half"`},
		{"checksums=crc32", "only checksums=none"},
		{"name=a b,min=1MiB", "only letters, digits"},
		{"min=6GiB", "minimum part size 6 GiB is above the maximum part size 5 GB"},
		{"parts=10001", "maximum part count 10001 is outside 1..10000"},
		{"parts=0", "maximum part count 0 is outside 1..10000"},
		{"max=0", "maximum part size 0 B must be at least 1 B"},
		{"single=6TB", "maximum single PUT 6 TB is above the maximum object size 5 TB"},
		{"object=0", "maximum object size 0 B must be at least 1 B"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want it to contain %q", tc.in, err, tc.want)
			continue
		}
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("Parse(%q) error %v does not wrap store.ErrInvalidInput", tc.in, err)
		}
	}
}

func TestStringRoundTripProfiles(t *testing.T) {
	for _, name := range ProfileNames() {
		r, _ := Profile(name)
		got, err := Parse(r.String())
		if err != nil || got != r {
			t.Errorf("%s: Parse(String()) = %v, %v\nString: %s", name, got, err, r)
		}
	}
	r2, _ := Profile("r2")
	want := "name=r2,min=5MiB,max=5115MiB,parts=10000,object=5115GiB,single=5115MiB,equal,lastnotlarger,nonemptylast=false,contiguous=false," +
		"crc32=composite,crc32c=composite,crc64nvme=full,sha1=composite,sha256=composite," +
		"md5=false,condput,condcomplete=false,etagmd5=false,mpetagmd5,headchecksums=false,prefer=crc64nvme"
	if got := r2.String(); got != want {
		t.Errorf("r2.String() =\n%s\nwant\n%s", got, want)
	}
}

// genRules draws valid Rules over the whole range of every field.
func genRules() *rapid.Generator[Rules] {
	size := func(lo, hi int64) *rapid.Generator[int64] {
		return rapid.OneOf(rapid.Int64Range(lo, min(hi, lo+64*bytesize.MiB)), rapid.Int64Range(lo, hi),
			rapid.Map(rapid.Int64Range(0, hi/bytesize.MiB), func(n int64) int64 { return max(lo, n*bytesize.MiB) }),
			rapid.Just(hi))
	}
	types := rapid.Map(rapid.IntRange(0, 3), func(n int) ChecksumTypes { return ChecksumTypes(n) })
	return rapid.Custom(func(t *rapid.T) Rules {
		r := Rules{Name: rapid.StringMatching(`[a-zA-Z0-9._+-]{1,16}`).Draw(t, "name")}
		r.MinPartSize = size(0, 10*bytesize.GiB).Draw(t, "min")
		r.MaxPartSize = size(max(1, r.MinPartSize), unlimited).Draw(t, "max")
		r.MaxParts = rapid.IntRange(1, store.MaxPartNumber).Draw(t, "parts")
		r.MaxObjectSize = size(1, unlimited).Draw(t, "object")
		r.MaxSinglePut = size(0, r.MaxObjectSize).Draw(t, "single")
		b := rapid.Bool()
		r.EqualParts, r.LastPartNotLarger, r.NonEmptyLastPart, r.ContiguousPartNumbers = b.Draw(t, "eq"), b.Draw(t, "lnl"), b.Draw(t, "nel"), b.Draw(t, "contig")
		r.Checksums = ChecksumSupport{types.Draw(t, "crc32"), types.Draw(t, "crc32c"), types.Draw(t, "crc64"), types.Draw(t, "sha1"), types.Draw(t, "sha256")}
		r.ContentMD5, r.ConditionalPut, r.ConditionalComplete = b.Draw(t, "md5"), b.Draw(t, "cp"), b.Draw(t, "cc")
		r.SinglePutETagMD5, r.MultipartETagMD5, r.HeadChecksums = b.Draw(t, "etag"), b.Draw(t, "mpetag"), b.Draw(t, "head")
		prefs := []store.ChecksumAlgorithm{""}
		for _, a := range []store.ChecksumAlgorithm{store.ChecksumCRC32, store.ChecksumCRC32C} {
			if r.Checksums.Types(a) != 0 {
				prefs = append(prefs, a)
			}
		}
		r.PreferredChecksum = rapid.SampledFrom(prefs).Draw(t, "prefer")
		return r
	})
}

func TestStringRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genRules().Draw(t, "rules")
		if err := r.Validate(); err != nil {
			t.Fatalf("generator made invalid rules: %v", err)
		}
		s := r.String()
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if got != r {
			t.Fatalf("round trip changed the rules:\n%s\n%s", s, got)
		}
	})
}

func TestPreferredChecksum(t *testing.T) {
	for _, name := range []string{"minio", "versitygw"} {
		r, _ := Profile(name)
		if got := r.Checksum(); got != store.ChecksumCRC32C {
			t.Errorf("%s profile prefers %s, want CRC32C (the server checks it more cheaply than CRC64NVME)", name, got)
		}
	}
	aws, _ := Profile("aws")
	if got := aws.Checksum(); got != store.ChecksumCRC64NVME {
		t.Errorf("aws profile prefers %s, want the default CRC64NVME", got)
	}
	minio, _ := Profile("minio")
	if got := intersect("aws+minio", aws, minio).PreferredChecksum; got != "" {
		t.Errorf("aws+minio prefers %q, want no preference", got)
	}
	if r, err := Parse("profile=aws,prefer=crc32c"); err != nil || r.Checksum() != store.ChecksumCRC32C {
		t.Errorf("prefer=crc32c: %v, %v", r.Checksum(), err)
	}
	if r, err := Parse("profile=minio,prefer=crc64nvme"); err != nil || r.PreferredChecksum != "" {
		t.Errorf("prefer=crc64nvme should be stored as the default: %q, %v", r.PreferredChecksum, err)
	}
	for s, want := range map[string]string{
		"profile=aws,prefer=sha256":             "not crc64nvme, crc32c or crc32",
		"profile=aws,crc32c=none,prefer=crc32c": "preferred checksum CRC32C is not one the store accepts",
	} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", s, err, want)
		}
	}
}

func TestIntersect(t *testing.T) {
	if got := intersect("none"); got.Validate() == nil {
		t.Error("intersect of nothing should be invalid rules, not a silent default")
	}
	aws, _ := Profile("aws")
	r2, _ := Profile("r2")
	both := intersect("aws+r2", aws, r2)
	if !narrower(both, aws) || !narrower(both, r2) {
		t.Errorf("aws+r2 = %s", both)
	}
	if both.MaxPartSize != 5*bytesize.GiB-5*bytesize.MiB || !both.EqualParts || both.Checksums.CRC32 != Composite || both.Checksums.CRC64NVME != FullObject || !both.ConditionalPut || both.ConditionalComplete {
		t.Errorf("aws+r2 = %s", both)
	}
}
