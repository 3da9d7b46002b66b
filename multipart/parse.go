package multipart

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/store"
)

// Keys of the compact rules string, in the order String writes them.
type ruleKey struct {
	key  string
	help string
	// set parses v into r; get renders r's value (booleans: "" for true, "false" for false).
	set func(r *Rules, v string) error
	get func(r Rules) string
}

func sizeKey(key, help string, f func(*Rules) *int64) ruleKey {
	return ruleKey{key, help,
		func(r *Rules, v string) error {
			n, err := bytesize.Parse(v)
			if err != nil {
				return err
			}
			*f(r) = n
			return nil
		},
		func(r Rules) string { return compactSize(*f(&r)) }}
}

func boolKey(key, help string, f func(*Rules) *bool) ruleKey {
	return ruleKey{key, help,
		func(r *Rules, v string) error {
			b := true
			if v != "" {
				var err error
				if b, err = strconv.ParseBool(v); err != nil {
					return fmt.Errorf("%q is not true or false", v)
				}
			}
			*f(r) = b
			return nil
		},
		func(r Rules) string {
			if *f(&r) {
				return ""
			}
			return "false"
		}}
}

func checksumKey(a store.ChecksumAlgorithm) ruleKey {
	return ruleKey{strings.ToLower(string(a)), string(a) + " checksum types: none, full, composite, full+composite",
		func(r *Rules, v string) error {
			t, err := parseChecksumTypes(v)
			if err != nil {
				return err
			}
			*r.Checksums.field(a) = t
			return nil
		},
		func(r Rules) string { return r.Checksums.Types(a).String() }}
}

var ruleKeys = []ruleKey{
	{"name", "name used in error messages",
		func(r *Rules, v string) error {
			if err := validName(v); err != nil {
				return err
			}
			r.Name = v
			return nil
		},
		func(r Rules) string { return r.Name }},
	sizeKey("min", "minimum non-final part size", func(r *Rules) *int64 { return &r.MinPartSize }),
	sizeKey("max", "maximum part size", func(r *Rules) *int64 { return &r.MaxPartSize }),
	{"parts", "maximum part count",
		func(r *Rules, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q is not a whole number", v)
			}
			r.MaxParts = n
			return nil
		},
		func(r Rules) string { return strconv.Itoa(r.MaxParts) }},
	sizeKey("object", "maximum object size", func(r *Rules) *int64 { return &r.MaxObjectSize }),
	sizeKey("single", "maximum single PUT size", func(r *Rules) *int64 { return &r.MaxSinglePut }),
	boolKey("equal", "non-final parts must be equal", func(r *Rules) *bool { return &r.EqualParts }),
	boolKey("lastnotlarger", "last part no larger than the others", func(r *Rules) *bool { return &r.LastPartNotLarger }),
	boolKey("nonemptylast", "last part at least 1 byte", func(r *Rules) *bool { return &r.NonEmptyLastPart }),
	boolKey("contiguous", "part numbers 1..N without gaps", func(r *Rules) *bool { return &r.ContiguousPartNumbers }),
	checksumKey(store.ChecksumCRC32),
	checksumKey(store.ChecksumCRC32C),
	checksumKey(store.ChecksumCRC64NVME),
	checksumKey(store.ChecksumSHA1),
	checksumKey(store.ChecksumSHA256),
	boolKey("md5", "Content-MD5 checked on PutObject and UploadPart", func(r *Rules) *bool { return &r.ContentMD5 }),
	boolKey("condput", "If-None-Match: * on PutObject", func(r *Rules) *bool { return &r.ConditionalPut }),
	boolKey("condcomplete", "If-None-Match: * on CompleteMultipartUpload", func(r *Rules) *bool { return &r.ConditionalComplete }),
	boolKey("etagmd5", "single-PUT ETag is the MD5", func(r *Rules) *bool { return &r.SinglePutETagMD5 }),
	boolKey("mpetagmd5", "multipart ETag is md5-of-md5s-N", func(r *Rules) *bool { return &r.MultipartETagMD5 }),
	boolKey("headchecksums", "HEAD returns stored checksums", func(r *Rules) *bool { return &r.HeadChecksums }),
	{"prefer", "CRC sent when none is chosen: crc64nvme, crc32c, crc32",
		func(r *Rules, v string) error {
			a := store.ChecksumAlgorithm(strings.ToUpper(v))
			switch a {
			case store.ChecksumCRC64NVME:
				r.PreferredChecksum = "" // the default, kept empty so profiles compare equal
			case store.ChecksumCRC32, store.ChecksumCRC32C:
				r.PreferredChecksum = a
			default:
				return fmt.Errorf("%q is not crc64nvme, crc32c or crc32", v)
			}
			return nil
		},
		func(r Rules) string { return strings.ToLower(string(r.Checksum())) }},
}

// String renders every field as a compact rules string that Parse turns back into the same Rules,
// e.g. "name=r2,min=5MiB,max=5115MiB,parts=10000,...,equal,...,md5=false,...". Booleans are a bare
// key when true and key=false when false, so the string does not depend on any default.
func (r Rules) String() string {
	var b strings.Builder
	for i, k := range ruleKeys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.key)
		if v := k.get(r); v != "" {
			b.WriteByte('=')
			b.WriteString(v)
		}
	}
	return b.String()
}

// Parse reads rules for the CLI. It accepts:
//   - "" : the default, strict profile;
//   - a profile name: "r2";
//   - a compact string of comma-separated key=value items: "min=5MiB,max=5GiB,parts=10000,equal".
//     Items start from profile=NAME when given (anywhere in the string), else from strict, and
//     override its fields; a bare boolean key means true. The result is named NAME-custom (or
//     "custom") unless name= says otherwise. Keys: name, profile, min, max, parts, object, single,
//     equal, lastnotlarger, nonemptylast, contiguous, crc32, crc32c, crc64nvme, sha1, sha256,
//     checksums=none (clears all five), md5, condput, condcomplete, etagmd5, mpetagmd5,
//     headchecksums, prefer. Sizes take binary (KiB..EiB) and decimal (KB..EB) units, plain bytes,
//     or "unlimited".
//
// The result is validated; errors wrap store.ErrInvalidInput.
func Parse(s string) (Rules, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Profile(DefaultProfile)
	}
	if !strings.ContainsAny(s, "=,") {
		return Profile(s)
	}
	type item struct{ key, val string }
	var items []item
	seen := map[string]bool{}
	base, name := DefaultProfile, "custom"
	for _, raw := range strings.Split(s, ",") {
		k, v, hasVal := strings.Cut(strings.TrimSpace(raw), "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if k == "" {
			return Rules{}, invalidf("rules %q: empty item", s)
		}
		if hasVal && v == "" {
			return Rules{}, invalidf("rules %q: %s= has no value", s, k)
		}
		if seen[k] {
			return Rules{}, invalidf("rules %q: %s given twice", s, k)
		}
		seen[k] = true
		if k == "profile" {
			base, name = v, v+"-custom"
			continue
		}
		items = append(items, item{k, v})
	}
	r, err := Profile(base)
	if err != nil {
		return Rules{}, err
	}
	if len(items) == 0 {
		return r, nil // "profile=r2" alone is exactly r2
	}
	r.Name = name
	for _, it := range items {
		if it.key == "checksums" {
			if !strings.EqualFold(it.val, "none") {
				return Rules{}, invalidf("rules %q: checksums=%s: only checksums=none is accepted; set crc32=, crc32c=, crc64nvme=, sha1=, sha256= one by one", s, it.val)
			}
			r.Checksums = ChecksumSupport{}
			continue
		}
		k := findKey(it.key)
		if k == nil {
			return Rules{}, invalidf("rules %q: unknown key %q (valid: profile, checksums, %s)", s, it.key, keyNames())
		}
		if err := k.set(&r, it.val); err != nil {
			return Rules{}, invalidf("rules %q: %s: %v", s, it.key, err)
		}
	}
	if err := r.Validate(); err != nil {
		return Rules{}, err
	}
	return r, nil
}

func findKey(key string) *ruleKey {
	for i := range ruleKeys {
		if ruleKeys[i].key == key {
			return &ruleKeys[i]
		}
	}
	return nil
}

func keyNames() string {
	names := make([]string, len(ruleKeys))
	for i, k := range ruleKeys {
		names[i] = k.key
	}
	return strings.Join(names, ", ")
}
