package main

import (
	"strings"
	"unicode/utf8"

	"github.com/safeput/safeput/store"
)

// s3URL is s3://bucket/key-or-prefix.
type s3URL struct {
	Bucket string
	Key    string // the key, or the prefix for probe and sweep
}

func (u s3URL) String() string { return "s3://" + u.Bucket + "/" + u.Key }

// parseS3URL reads s3://bucket/key. The key is taken literally (no %-decoding, '?' and '#' are
// part of it), because S3 keys may contain any UTF-8 and a URL parser would eat them.
// needKey makes an empty key an error (put, verify); probe and sweep take an optional prefix.
func parseS3URL(s string, needKey bool) (s3URL, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return s3URL{}, usageErr("%q is not an s3:// URL (want s3://bucket/key)", s)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return s3URL{}, usageErr("%q has no bucket (want s3://bucket/key)", s)
	}
	if !validBucket(bucket) {
		return s3URL{}, usageErr("%q: %q is not a valid bucket name (3-63 of a-z 0-9 . - _)", s, bucket)
	}
	if needKey && key == "" {
		return s3URL{}, usageErr("%q has no key (want s3://bucket/key)", s)
	}
	if len(key) > store.MaxKeyLength {
		return s3URL{}, usageErr("%q: key is %d bytes, longer than S3's %d", s, len(key), store.MaxKeyLength)
	}
	if !utf8.ValidString(key) {
		return s3URL{}, usageErr("%q: key is not valid UTF-8", s)
	}
	return s3URL{Bucket: bucket, Key: key}, nil
}

// validBucket is lenient (upper case and '_' pass, as some stores allow them) but refuses what
// no store takes.
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for _, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}
