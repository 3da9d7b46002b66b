package faultproxy

import (
	"net/http"
	"strconv"
	"strings"
)

// Op is the S3 operation a request performs, as Classify names it.
type Op string

// The operations the adapters send. OpAny is only for rules: it matches every request.
const (
	OpAny                   Op = "*"
	PutObject               Op = "PutObject"
	UploadPart              Op = "UploadPart"
	CreateMultipartUpload   Op = "CreateMultipartUpload"
	CompleteMultipartUpload Op = "CompleteMultipartUpload"
	AbortMultipartUpload    Op = "AbortMultipartUpload"
	ListParts               Op = "ListParts"
	ListMultipartUploads    Op = "ListMultipartUploads"
	HeadObject              Op = "HeadObject"
	GetObject               Op = "GetObject"
	DeleteObject            Op = "DeleteObject"
	Other                   Op = "Other"
)

// objectSubresources are query keys that turn an object request into a different operation
// (tagging, ACL, ...) that safeput never sends; such requests are Other so a PutObject rule
// cannot hit them.
var objectSubresources = []string{"tagging", "acl", "retention", "legal-hold", "attributes", "torrent", "restore", "select"}

// Classify names the operation of a path-style request (/bucket/key?query) from its method, its
// query and x-amz-copy-source. Copies, bucket-level requests other than ListMultipartUploads and
// object sub-resources are Other.
func Classify(r *http.Request) Op {
	bucket, key := splitPath(r.URL.Path)
	q := r.URL.Query()
	if bucket == "" {
		return Other
	}
	if key == "" {
		if r.Method == http.MethodGet && q.Has("uploads") {
			return ListMultipartUploads
		}
		return Other
	}
	for _, s := range objectSubresources {
		if q.Has(s) {
			return Other
		}
	}
	copying := r.Header.Get("X-Amz-Copy-Source") != ""
	switch r.Method {
	case http.MethodPut:
		switch {
		case copying:
			return Other
		case q.Has("uploadId") && q.Has("partNumber"):
			return UploadPart
		case q.Has("uploadId") || q.Has("partNumber"):
			return Other
		}
		return PutObject
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return CreateMultipartUpload
		case q.Has("uploadId"):
			return CompleteMultipartUpload
		}
	case http.MethodDelete:
		if q.Has("uploadId") {
			return AbortMultipartUpload
		}
		return DeleteObject
	case http.MethodGet:
		if q.Has("uploadId") {
			return ListParts
		}
		return GetObject
	case http.MethodHead:
		return HeadObject
	}
	return Other
}

// target is what a request addresses, for rules (PartNumber) and the injection log.
type target struct {
	Bucket, Key, UploadID string
	PartNumber            int32
	Header                http.Header // the request's headers, for Rule.Header
}

func parseTarget(r *http.Request) target {
	bucket, key := splitPath(r.URL.Path)
	q := r.URL.Query()
	t := target{Bucket: bucket, Key: key, UploadID: q.Get("uploadId"), Header: r.Header}
	if n, err := strconv.ParseInt(q.Get("partNumber"), 10, 32); err == nil {
		t.PartNumber = int32(n)
	}
	return t
}

// splitPath splits a path-style URL path (already unescaped) into bucket and key.
func splitPath(p string) (bucket, key string) {
	p = strings.TrimPrefix(p, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}
