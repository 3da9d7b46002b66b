package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
)

// answer is one recorded raw answer of an S3 server.
type answer struct {
	status int
	header map[string]string
	body   string
}

// parityRow serves both adapters the same answers (in order, one per request; the last repeats)
// to the same call. The adapters must agree: equal results, or errors of equal kind, code,
// status and non-compliance. want pins the agreed meaning, so both cannot drift together.
type parityRow struct {
	name    string
	call    func(ctx context.Context, st store.Store) (any, error)
	answers []answer
	want    func(t *testing.T, out any, err error)
}

const (
	xmlHead  = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"
	lpOpen   = xmlHead + `<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>bkt</Bucket><Key>k</Key><UploadId>u</UploadId>`
	lpClose  = `</ListPartsResult>`
	modified = `2026-01-02T03:04:05.000Z`
)

func lpPart(n int, etag string, size int64, extra string) string {
	return fmt.Sprintf(`<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified><ETag>%s</ETag><Size>%d</Size>%s</Part>`, n, modified, etag, size, extra)
}

func listing(truncated bool, next string, parts ...string) answer {
	b := lpOpen
	if truncated {
		b += `<IsTruncated>true</IsTruncated><NextPartNumberMarker>` + next + `</NextPartNumberMarker>`
	} else {
		b += `<IsTruncated>false</IsTruncated>`
	}
	return answer{status: 200, header: map[string]string{"x-amz-request-id": "rid-list"}, body: b + strings.Join(parts, "") + lpClose}
}

func s3err(status int, code string, header map[string]string) answer {
	h := map[string]string{"x-amz-request-id": "rid-err", "Content-Type": "application/xml"}
	for k, v := range header {
		h[k] = v
	}
	return answer{status: status, header: h, body: xmlHead + `<Error><Code>` + code + `</Code><Message>recorded</Message><RequestId>rid-err</RequestId></Error>`}
}

func listParts(ctx context.Context, st store.Store) (any, error) {
	return st.ListParts(ctx, &store.ListPartsInput{Bucket: "bkt", Key: "k", UploadID: "u"})
}

func uploadPart(ctx context.Context, st store.Store) (any, error) {
	return st.UploadPart(ctx, &store.UploadPartInput{Bucket: "bkt", Key: "k", UploadID: "u", PartNumber: 1,
		Body: strings.NewReader("hello"), ContentLength: 5, Checksum: store.Checksum{Algorithm: store.ChecksumCRC32, Value: "NhCmhg=="}})
}

func complete(ctx context.Context, st store.Store) (any, error) {
	return st.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: "bkt", Key: "k", UploadID: "u",
		Parts: []store.CompletedPart{{PartNumber: 1, ETag: "e1"}}})
}

func head(ctx context.Context, st store.Store) (any, error) {
	return st.HeadObject(ctx, &store.HeadObjectInput{Bucket: "bkt", Key: "k", ChecksumMode: true})
}

func putObject(ctx context.Context, st store.Store) (any, error) {
	return st.PutObject(ctx, &store.PutObjectInput{Bucket: "bkt", Key: "k", Body: strings.NewReader("hello"), ContentLength: 5,
		Checksum: store.Checksum{Algorithm: store.ChecksumCRC32, Value: "NhCmhg=="}})
}

func listUploads(ctx context.Context, st store.Store) (any, error) {
	return st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: "bkt", Prefix: "k"})
}

func abort(ctx context.Context, st store.Store) (any, error) {
	return nil, st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: "bkt", Key: "k", UploadID: "u"})
}

// wantParts checks a listing's part numbers and ETags, in order.
func wantParts(want ...string) func(t *testing.T, out any, err error) {
	return func(t *testing.T, out any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("err %v, want a listing", err)
		}
		var got []string
		for _, p := range out.(store.ListPartsOutput).Parts {
			got = append(got, fmt.Sprintf("%d:%s", p.PartNumber, p.ETag))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parts %v, want %v", got, want)
		}
	}
}

// wantErr checks the error's kind, code and non-compliance.
func wantErr(kind sperrors.Kind, code string, nonCompliant bool) func(t *testing.T, out any, err error) {
	return func(t *testing.T, out any, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("no error (out %+v), want %s", out, kind)
		}
		c := sperrors.Classify(err)
		if c.Kind != kind || c.Code != code || errors.Is(err, store.ErrNonCompliant) != nonCompliant {
			t.Fatalf("got kind %s code %q non-compliant %v (%v), want %s %q %v", c.Kind, c.Code, errors.Is(err, store.ErrNonCompliant), err, kind, code, nonCompliant)
		}
	}
}

// wantUnsupported checks an answer that means "this store does not do that" (store.Unsupported)
// with the kind and code the errors table gives it.
func wantUnsupported(kind sperrors.Kind, code string) func(t *testing.T, out any, err error) {
	return func(t *testing.T, out any, err error) {
		t.Helper()
		wantErr(kind, code, false)(t, out, err)
		if !store.Unsupported(err) {
			t.Fatalf("store.Unsupported(%v) is false, want true", err)
		}
	}
}

func wantRetryAfter(kind sperrors.Kind, d time.Duration) func(t *testing.T, out any, err error) {
	return func(t *testing.T, out any, err error) {
		t.Helper()
		wantErr(kind, sperrors.Classify(err).Code, false)(t, out, err)
		var re *store.ResponseError
		// An HTTP date is read against the clock: the rows before this one (seconds under load)
		// and the date's whole-second resolution take from it.
		if !errors.As(err, &re) || re.RetryAfter < d-10*time.Second || re.RetryAfter > d {
			t.Fatalf("retry after %v, want about %v (%v)", re.RetryAfter, d, err)
		}
	}
}

// A full store's answers, as the servers write them. MinIO (cmd/api-errors.go, ErrStorageFull)
// sends it when no drive has room for the object or part (the 507 the free-space check gives);
// its error document carries Key, BucketName, Resource, RequestId and HostId.
const minioStorageFullMessage = "Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed."

var minioStorageFull = answer{status: 507,
	header: map[string]string{"x-amz-request-id": "1874A2B3C4D5E6F7", "Content-Type": "application/xml"},
	body: xmlHead + `<Error><Code>XMinioStorageFull</Code><Message>` + minioStorageFullMessage + `</Message><Key>k</Key>` +
		`<BucketName>bkt</BucketName><Resource>/bkt/k</Resource><RequestId>1874A2B3C4D5E6F7</RequestId>` +
		`<HostId>dd9025bab4ad464b049177c95eb6ebf374d3b3fd1af9251148b658df7ac2e3e8</HostId></Error>`}

// MinIO answers so when a drive fills while a part's or object's bytes are written (toAPIError
// adds the cause to its InternalError).
const minioENOSPCMessage = "We encountered an internal error, please try again.: cause(no space left on device)"

var minioENOSPC = answer{status: 500,
	header: map[string]string{"x-amz-request-id": "1874A2B3C4D5E6F8", "Content-Type": "application/xml"},
	body: xmlHead + `<Error><Code>InternalError</Code><Message>` + minioENOSPCMessage + `</Message><Key>k</Key>` +
		`<BucketName>bkt</BucketName><Resource>/bkt/k</Resource><RequestId>1874A2B3C4D5E6F8</RequestId>` +
		`<HostId>dd9025bab4ad464b049177c95eb6ebf374d3b3fd1af9251148b658df7ac2e3e8</HostId></Error>`}

// Versity's gateway (s3err/s3err.go, ErrNoSpaceLeftOnDevice) answers its posix backend's ENOSPC
// so, when the part's or object's file cannot be allocated.
const gatewayNoSpaceMessage = "No space left on device."

var gatewayNoSpace = answer{status: 507,
	header: map[string]string{"x-amz-request-id": "rid-vgw", "Content-Type": "application/xml"},
	body: xmlHead + `<Error><Code>InsufficientStorage</Code><Message>` + gatewayNoSpaceMessage + `</Message>` +
		`<Resource>/bkt/k</Resource><RequestId>rid-vgw</RequestId><HostId></HostId></Error>`}

// wantStoreFull checks a full store's error: the store's code, status and message, and the kind
// and StoreFull the errors package gives a full store.
func wantStoreFull(status int, code, message string) func(t *testing.T, out any, err error) {
	return func(t *testing.T, out any, err error) {
		t.Helper()
		wantErr(sperrors.Transient, code, false)(t, out, err)
		c := sperrors.Classify(err)
		if c.StatusCode != status || c.Message != message || !strings.Contains(err.Error(), message) || !c.StoreFull {
			t.Fatalf("status %d message %q store full %v (%v), want %d, %q and store full", c.StatusCode, c.Message, c.StoreFull, err, status, message)
		}
	}
}

func parityRows() []parityRow {
	ok := func(extra map[string]string) answer {
		h := map[string]string{"x-amz-request-id": "rid-ok"}
		for k, v := range extra {
			h[k] = v
		}
		return answer{status: 200, header: h}
	}
	httpDate := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	rows := []parityRow{
		{name: "ListParts/part listed twice", call: listParts,
			answers: []answer{listing(false, "", lpPart(1, `"stale"`, 2, ""), lpPart(1, `"kept"`, 5, ""), lpPart(2, `"p2"`, 5, ""))},
			want:    wantParts("1:stale", "1:kept", "2:p2")},
		{name: "ListParts/out of order, duplicate last", call: listParts,
			answers: []answer{listing(false, "", lpPart(3, `"p3"`, 1, ""), lpPart(1, `"p1"`, 5, ""), lpPart(2, `"p2a"`, 5, ""), lpPart(2, `"p2b"`, 5, ""))},
			want:    wantParts("1:p1", "2:p2a", "2:p2b", "3:p3")},
		{name: "ListParts/duplicate across pages", call: listParts,
			answers: []answer{
				listing(true, "2", lpPart(1, `"p1"`, 5, ""), lpPart(2, `"p2a"`, 5, "")),
				listing(false, "", lpPart(2, `"p2b"`, 5, ""), lpPart(3, `"p3"`, 1, "")),
			},
			want: wantParts("1:p1", "2:p2a", "2:p2b", "3:p3")},
		{name: "ListParts/ETag unquoted and padded", call: listParts,
			answers: []answer{listing(false, "", lpPart(1, `abc`, 5, ""), lpPart(2, ` "def" `, 5, ""))},
			want:    wantParts("1:abc", "2:def")},
		{name: "ListParts/entry without ETag", call: listParts,
			answers: []answer{listing(false, "", `<Part><PartNumber>1</PartNumber><Size>5</Size></Part>`)},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/empty ETag", call: listParts,
			answers: []answer{listing(false, "", lpPart(1, ``, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/ETag of quotes only", call: listParts,
			answers: []answer{listing(false, "", lpPart(1, `""`, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/entry without part number", call: listParts,
			answers: []answer{listing(false, "", `<Part><ETag>"e"</ETag><Size>5</Size></Part>`)},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/part number 0", call: listParts,
			answers: []answer{listing(false, "", lpPart(0, `"e"`, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/part number above 10000", call: listParts,
			answers: []answer{listing(false, "", lpPart(10001, `"e"`, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/checksums of every type, none asked for", call: listParts,
			answers: []answer{func() answer {
				a := listing(false, "", lpPart(1, `"e"`, 5, `<ChecksumCRC32>c32</ChecksumCRC32><ChecksumCRC32C>c32c</ChecksumCRC32C><ChecksumCRC64NVME>c64</ChecksumCRC64NVME><ChecksumSHA1>s1</ChecksumSHA1><ChecksumSHA256>s256</ChecksumSHA256>`))
				a.body = strings.Replace(a.body, `<IsTruncated>`, `<ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ChecksumType>COMPOSITE</ChecksumType><IsTruncated>`, 1)
				return a
			}()},
			want: func(t *testing.T, out any, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				want := store.Checksums{CRC32: "c32", CRC32C: "c32c", CRC64NVME: "c64", SHA1: "s1", SHA256: "s256", Type: store.ChecksumTypeComposite}
				if got := out.(store.ListPartsOutput).Parts[0].Checksums; got != want {
					t.Fatalf("checksums %+v, want %+v", got, want)
				}
			}},
		{name: "ListParts/marker does not advance", call: listParts,
			answers: []answer{listing(true, "1", lpPart(1, `"e"`, 5, "")), listing(true, "1", lpPart(1, `"e"`, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/truncated without marker", call: listParts,
			answers: []answer{listing(true, "", lpPart(1, `"e"`, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/truncated with unparsable marker", call: listParts,
			answers: []answer{listing(true, "two", lpPart(1, `"e"`, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/marker goes back", call: listParts,
			answers: []answer{listing(true, "5", lpPart(5, `"e"`, 5, "")), listing(true, "3", lpPart(6, `"f"`, 5, ""))},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/malformed XML", call: listParts,
			answers: []answer{{status: 200, body: lpOpen + `<Part><PartNumber>1</Part>`}},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "ListParts/200 carrying an Error", call: listParts,
			answers: []answer{{status: 200, body: xmlHead + `<Error><Code>SlowDown</Code><Message>reduce</Message></Error>`}},
			want:    wantErr(sperrors.Throttled, "SlowDown", false)},
		{name: "ListParts/NoSuchUpload", call: listParts,
			answers: []answer{s3err(404, "NoSuchUpload", nil)}},
		{name: "ListParts/NoSuchKey", call: listParts,
			answers: []answer{s3err(404, "NoSuchKey", nil)}},
		{name: "ListParts/500 for an unknown upload", call: listParts,
			answers: []answer{s3err(500, "InternalError", nil)},
			want:    wantErr(sperrors.Transient, "InternalError", false)},
		{name: "ListParts/503 SlowDown, Retry-After seconds", call: listParts,
			answers: []answer{s3err(503, "SlowDown", map[string]string{"Retry-After": "7"})},
			want:    wantRetryAfter(sperrors.Throttled, 7*time.Second)},
		{name: "ListParts/503 SlowDown, Retry-After HTTP date", call: listParts,
			answers: []answer{s3err(503, "SlowDown", map[string]string{"Retry-After": httpDate})},
			want:    wantRetryAfter(sperrors.Throttled, 30*time.Second)},
		{name: "ListParts/503 SlowDown, x-amz-retry-after", call: listParts,
			answers: []answer{s3err(503, "SlowDown", map[string]string{"x-amz-retry-after": "1500", "Retry-After": "9"})},
			want:    wantRetryAfter(sperrors.Throttled, 1500*time.Millisecond)},
		{name: "ListParts/404 without a body", call: listParts,
			answers: []answer{{status: 404, header: map[string]string{"x-amz-request-id": "rid-404"}}}},

		{name: "UploadPart/no ETag", call: uploadPart, answers: []answer{ok(nil)},
			want: wantErr(sperrors.Compatibility, "", true)},
		{name: "UploadPart/ETag of quotes only", call: uploadPart, answers: []answer{ok(map[string]string{"ETag": `""`})},
			want: wantErr(sperrors.Compatibility, "", true)},
		{name: "UploadPart/200 carrying an Error", call: uploadPart,
			answers: []answer{{status: 200, header: map[string]string{"ETag": `"e"`}, body: `<Error><Code>InternalError</Code><Message>try again</Message></Error>`}},
			want:    wantErr(sperrors.Transient, "InternalError", false)},
		{name: "UploadPart/NoSuchUpload", call: uploadPart, answers: []answer{s3err(404, "NoSuchUpload", nil)}},
		{name: "UploadPart/InvalidPart", call: uploadPart, answers: []answer{s3err(400, "InvalidPart", nil)}},
		{name: "UploadPart/BadDigest", call: uploadPart, answers: []answer{s3err(400, "BadDigest", nil)}},
		{name: "UploadPart/500", call: uploadPart, answers: []answer{s3err(500, "InternalError", nil)}},
		{name: "UploadPart/429 Retry-After seconds", call: uploadPart,
			answers: []answer{s3err(429, "TooManyRequests", map[string]string{"Retry-After": "4"})},
			want:    wantRetryAfter(sperrors.Throttled, 4*time.Second)},

		{name: "Complete/empty ETag", call: complete,
			answers: []answer{{status: 200, body: xmlHead + `<CompleteMultipartUploadResult><Location>l</Location><Bucket>bkt</Bucket><Key>k</Key><ETag></ETag></CompleteMultipartUploadResult>`}},
			want: func(t *testing.T, out any, err error) {
				t.Helper()
				if err != nil || out.(store.CompleteMultipartUploadOutput).ETag != "" {
					t.Fatalf("got %+v, %v; want a result with no ETag", out, err)
				}
			}},
		{name: "Complete/checksums in the answer", call: complete,
			answers: []answer{{status: 200, header: map[string]string{"x-amz-version-id": "v1"}, body: xmlHead + `<CompleteMultipartUploadResult><Bucket>bkt</Bucket><Key>k</Key><ETag>"abc-1"</ETag><ChecksumCRC64NVME>c64</ChecksumCRC64NVME><ChecksumType>FULL_OBJECT</ChecksumType></CompleteMultipartUploadResult>`}}},
		{name: "Complete/200 carrying an Error", call: complete,
			answers: []answer{{status: 200, body: xmlHead + `<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message><RequestId>rid-200</RequestId></Error>`}},
			want:    wantErr(sperrors.Transient, "InternalError", false)},
		{name: "Complete/200 carrying an Error after whitespace", call: complete,
			answers: []answer{{status: 200, body: xmlHead + "\n \n" + `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`}},
			want:    wantErr(sperrors.Throttled, "SlowDown", false)},
		{name: "Complete/NoSuchUpload for an unknown upload", call: complete,
			answers: []answer{s3err(404, "NoSuchUpload", nil)}},
		{name: "Complete/InvalidPart for an unknown upload", call: complete,
			answers: []answer{s3err(400, "InvalidPart", nil)}},
		{name: "Complete/500 for an unknown upload", call: complete,
			answers: []answer{s3err(500, "InternalError", nil)}},
		{name: "Complete/empty 200", call: complete,
			answers: []answer{{status: 200}}},

		{name: "PutObject/checksum headers of every type", call: putObject,
			answers: []answer{ok(map[string]string{"ETag": `"5d41402abc4b2a76b9719d911017c592"`, "x-amz-checksum-crc32": "NhCmhg==", "x-amz-checksum-crc32c": "c", "x-amz-checksum-crc64nvme": "n", "x-amz-checksum-sha1": "s1", "x-amz-checksum-sha256": "s2", "x-amz-checksum-type": "FULL_OBJECT", "x-amz-version-id": "v"})}},
		{name: "PutObject/200 carrying an Error", call: putObject,
			answers: []answer{{status: 200, header: map[string]string{"ETag": `"e"`}, body: `<Error><Code>InternalError</Code><Message>try again</Message></Error>`}},
			want:    wantErr(sperrors.Transient, "InternalError", false)},
		{name: "PutObject/no ETag", call: putObject, answers: []answer{ok(nil)}},
		{name: "PutObject/412", call: putObject, answers: []answer{s3err(412, "PreconditionFailed", nil)}},
		{name: "PutObject/501 for If-None-Match", call: putObject, answers: []answer{s3err(501, "NotImplemented", nil)}},

		{name: "HeadObject/checksum headers of every type", call: head,
			answers: []answer{ok(map[string]string{"ETag": `"abc-2"`, "Content-Length": "10", "Last-Modified": "Fri, 02 Jan 2026 03:04:05 GMT",
				"x-amz-checksum-crc32": "a", "x-amz-checksum-crc32c": "b", "x-amz-checksum-crc64nvme": "c", "x-amz-checksum-sha1": "d", "x-amz-checksum-sha256": "e", "x-amz-checksum-type": "COMPOSITE"})}},
		{name: "HeadObject/no ETag", call: head,
			answers: []answer{ok(map[string]string{"Content-Length": "10"})},
			want:    wantErr(sperrors.Compatibility, "", true)},
		{name: "HeadObject/404 without a body", call: head,
			answers: []answer{{status: 404, header: map[string]string{"x-amz-request-id": "rid-404"}}}},
		{name: "HeadObject/503 Retry-After HTTP date", call: head,
			answers: []answer{{status: 503, header: map[string]string{"Retry-After": httpDate}}}},

		{name: "Abort/204", call: abort, answers: []answer{{status: 204}}},
		{name: "Abort/200 carrying an Error", call: abort,
			answers: []answer{{status: 200, body: `<Error><Code>InternalError</Code><Message>try again</Message></Error>`}},
			want:    wantErr(sperrors.Transient, "InternalError", false)},
		{name: "Create/200 carrying an Error", call: func(ctx context.Context, st store.Store) (any, error) {
			return st.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: "bkt", Key: "k"})
		}, answers: []answer{{status: 200, body: xmlHead + `<Error><Code>InternalError</Code><Message>try again</Message></Error>`}},
			want: wantErr(sperrors.Transient, "InternalError", false)},
		{name: "Abort/NoSuchUpload", call: abort, answers: []answer{s3err(404, "NoSuchUpload", nil)}},

		// Optional operations a store may lack (s3rver 3.7.1 answers ListParts and Abort 405
		// MethodNotAllowed, ListMultipartUploads 501 NotImplemented): one meaning through both.
		{name: "ListParts/405 MethodNotAllowed", call: listParts,
			answers: []answer{s3err(405, "MethodNotAllowed", nil)},
			want:    wantUnsupported(sperrors.Permanent, "MethodNotAllowed")},
		{name: "ListParts/501 NotImplemented", call: listParts,
			answers: []answer{s3err(501, "NotImplemented", nil)},
			want:    wantUnsupported(sperrors.Compatibility, "NotImplemented")},
		{name: "ListMultipartUploads/501 NotImplemented", call: listUploads,
			answers: []answer{s3err(501, "NotImplemented", nil)},
			want:    wantUnsupported(sperrors.Compatibility, "NotImplemented")},
		{name: "ListMultipartUploads/405 MethodNotAllowed", call: listUploads,
			answers: []answer{s3err(405, "MethodNotAllowed", nil)},
			want:    wantUnsupported(sperrors.Permanent, "MethodNotAllowed")},
		{name: "ListMultipartUploads/403 is not unsupported", call: listUploads,
			answers: []answer{s3err(403, "AccessDenied", nil)},
			want: func(t *testing.T, out any, err error) {
				t.Helper()
				wantErr(sperrors.Permanent, "AccessDenied", false)(t, out, err)
				if store.Unsupported(err) {
					t.Fatalf("store.Unsupported(%v) is true for AccessDenied", err)
				}
			}},
		{name: "HeadObject/501 without a body (checksum mode refused)", call: head,
			answers: []answer{{status: 501, header: map[string]string{"x-amz-request-id": "rid-501"}}},
			want:    wantUnsupported(sperrors.Compatibility, "")},
		{name: "HeadObject/405 without a body", call: head,
			answers: []answer{{status: 405, header: map[string]string{"x-amz-request-id": "rid-405"}}},
			want:    wantUnsupported(sperrors.Permanent, "")},
		{name: "PutObject/501 NotImplemented for a checksum header", call: putObject,
			answers: []answer{s3err(501, "NotImplemented", nil)},
			want:    wantUnsupported(sperrors.Compatibility, "NotImplemented")},
		{name: "PutObject/405 MethodNotAllowed", call: putObject,
			answers: []answer{s3err(405, "MethodNotAllowed", nil)},
			want:    wantUnsupported(sperrors.Permanent, "MethodNotAllowed")},
		{name: "Abort/405 MethodNotAllowed", call: abort,
			answers: []answer{s3err(405, "MethodNotAllowed", nil)},
			want:    wantUnsupported(sperrors.Permanent, "MethodNotAllowed")},

		// A full store, as each test server answers it: one meaning through both adapters, the
		// store's own code and message kept.
		{name: "UploadPart/507 XMinioStorageFull", call: uploadPart, answers: []answer{minioStorageFull},
			want: wantStoreFull(507, "XMinioStorageFull", minioStorageFullMessage)},
		{name: "PutObject/507 XMinioStorageFull", call: putObject, answers: []answer{minioStorageFull},
			want: wantStoreFull(507, "XMinioStorageFull", minioStorageFullMessage)},
		{name: "UploadPart/500 InternalError, cause no space left on device", call: uploadPart, answers: []answer{minioENOSPC},
			want: wantStoreFull(500, "InternalError", minioENOSPCMessage)},
		{name: "PutObject/500 InternalError, cause no space left on device", call: putObject, answers: []answer{minioENOSPC},
			want: wantStoreFull(500, "InternalError", minioENOSPCMessage)},
		{name: "UploadPart/507 InsufficientStorage", call: uploadPart, answers: []answer{gatewayNoSpace},
			want: wantStoreFull(507, "InsufficientStorage", gatewayNoSpaceMessage)},
		{name: "PutObject/507 InsufficientStorage", call: putObject, answers: []answer{gatewayNoSpace},
			want: wantStoreFull(507, "InsufficientStorage", gatewayNoSpaceMessage)},
	}
	return rows
}

// TestAdapterParity serves the same recorded answers to both adapters: every answer must mean
// the same through either. A quirk found later is one more row.
func TestAdapterParity(t *testing.T) {
	for _, row := range parityRows() {
		t.Run(row.name, func(t *testing.T) {
			srv := newReplay(t, row.answers)
			type got struct {
				out any
				err error
			}
			var res [2]got
			for i, name := range []string{"aws", "minio"} {
				srv.reset()
				st := paritySt(t, name, srv.URL)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				out, err := row.call(ctx, st)
				cancel()
				res[i] = got{normalize(out), err}
			}
			a, m := res[0], res[1]
			if (a.err == nil) != (m.err == nil) {
				t.Fatalf("aws: %+v, %v\nminio: %+v, %v", a.out, a.err, m.out, m.err)
			}
			if a.err == nil {
				if !reflect.DeepEqual(a.out, m.out) {
					t.Fatalf("results differ\naws:   %+v\nminio: %+v", a.out, m.out)
				}
			} else {
				fa, fm := errFacts(a.err), errFacts(m.err)
				// An HTTP-date Retry-After is read against the clock, a moment apart.
				if d := fa.RetryAfter - fm.RetryAfter; d > -time.Second && d < time.Second {
					fm.RetryAfter = fa.RetryAfter
				}
				if fa != fm {
					t.Fatalf("errors differ\naws:   %+v (%v)\nminio: %+v (%v)", fa, a.err, fm, m.err)
				}
			}
			if row.want != nil {
				row.want(t, a.out, a.err)
				row.want(t, m.out, m.err)
			}
		})
	}
}

// facts is what a caller reads from an error: its classification and the store's raw facts.
type facts struct {
	Kind         sperrors.Kind
	Code         string
	Status       int
	RequestID    string
	NonCompliant bool
	Response     bool
	RetryAfter   time.Duration
	Unsupported  bool
	StoreFull    bool
	Message      string // the store's, with its code
}

func errFacts(err error) facts {
	c := sperrors.Classify(err)
	f := facts{Kind: c.Kind, Code: c.Code, NonCompliant: errors.Is(err, store.ErrNonCompliant), Unsupported: store.Unsupported(err),
		StoreFull: c.StoreFull}
	if c.Code != "" {
		// The store's own message; an adapter words its own findings (a non-compliant answer).
		f.Message = c.Message
	}
	var re *store.ResponseError
	if errors.As(err, &re) {
		f.Response, f.Status, f.RequestID = true, re.StatusCode, re.RequestID
		f.RetryAfter = re.RetryAfter
	}
	return f
}

// normalize drops what cannot be equal across two requests (nothing yet) and puts times in UTC.
func normalize(out any) any {
	switch o := out.(type) {
	case *store.ListPartsOutput:
		if o == nil {
			return nil
		}
		c := *o
		c.Parts = append([]store.Part(nil), o.Parts...)
		for i := range c.Parts {
			c.Parts[i].LastModified = c.Parts[i].LastModified.UTC()
		}
		return c
	case *store.HeadObjectOutput:
		if o == nil {
			return nil
		}
		c := *o
		c.LastModified = c.LastModified.UTC()
		if len(c.Metadata) == 0 {
			c.Metadata = nil
		}
		return c
	case *store.UploadPartOutput:
		if o == nil {
			return nil
		}
		return *o
	case *store.PutObjectOutput:
		if o == nil {
			return nil
		}
		return *o
	case *store.CompleteMultipartUploadOutput:
		if o == nil {
			return nil
		}
		return *o
	}
	return out
}

func paritySt(t *testing.T, name, url string) store.Store {
	t.Helper()
	var (
		st  store.Store
		err error
	)
	switch name {
	case "aws":
		st, err = awss3.New(awss3.Config{Endpoint: url, AccessKey: "ak", SecretKey: "sk", PathStyle: true})
	default:
		st, err = miniogo.New(miniogo.Config{Endpoint: url, AccessKey: "ak", SecretKey: "sk", PathStyle: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// replay is an httptest server answering requests with recorded answers, in order.
type replay struct {
	*httptest.Server
	mu      sync.Mutex
	answers []answer
	n       int
}

func newReplay(t *testing.T, answers []answer) *replay {
	t.Helper()
	r := &replay{answers: answers}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		a := r.answers[min(r.n, len(r.answers)-1)]
		r.n++
		r.mu.Unlock()
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Length") == "" && req.Method != http.MethodHead {
			w.Header().Set("Content-Length", fmt.Sprint(len(a.body)))
		}
		w.WriteHeader(a.status)
		if req.Method != http.MethodHead {
			_, _ = w.Write([]byte(a.body))
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *replay) reset() {
	r.mu.Lock()
	r.n = 0
	r.mu.Unlock()
}
