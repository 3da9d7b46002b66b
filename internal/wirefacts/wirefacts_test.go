// Package wirefacts records, with raw SigV4 requests, how the S3 server in SAFEPUT_S3_* answers
// the requests safeput's correctness depends on: ETag shapes, checksum headers, the Complete
// answer, conditional writes, listing pagination, a re-sent Complete and a part below the
// minimum. It is a diagnostic run by hand when a new server is added (the facts behind a provider
// profile), not part of the test command:
//
//	SAFEPUT_S3_WIRE_FACTS=1 SAFEPUT_S3_ENDPOINT=... SAFEPUT_S3_ACCESS_KEY=... \
//	  SAFEPUT_S3_SECRET_KEY=... go test -count=1 -v ./internal/wirefacts/
//
// Each fact is printed as "FACT name: answer"; the test fails only when a request cannot be made
// or an answer cannot be parsed, since the facts differ by server.
package wirefacts

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/safeput/safeput/storetest/s3test"
)

const mib = 1 << 20

type answer struct {
	status int
	header http.Header
	body   string
}

func (a answer) String() string {
	// One line per fact: some servers put newlines between XML elements.
	return fmt.Sprintf("%d %s", a.status, strings.Join(strings.Fields(a.body), " "))
}

type wire struct {
	t      *testing.T
	server s3test.Server
	bucket string
	signer *v4.Signer
}

// do sends one SigV4-signed request (unsigned payload, as the SDKs do over TLS) and returns the
// raw answer.
func (w *wire) do(method, key string, query url.Values, header map[string]string, body []byte) answer {
	w.t.Helper()
	u := w.server.Endpoint + "/" + w.bucket
	if key != "" {
		u += "/" + key
	}
	if len(query) > 0 {
		// SigV4 wants %20 for spaces and "=" after valueless keys such as "uploads".
		u += "?" + strings.ReplaceAll(query.Encode(), "+", "%20")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: w.server.AccessKey, SecretAccessKey: w.server.SecretKey}
	if err := w.signer.SignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", w.server.Region, time.Now()); err != nil {
		w.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("%s %s: reading the answer: %v", method, u, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func fact(t *testing.T, name string, format string, args ...any) {
	t.Helper()
	t.Logf("FACT %s: %s", name, fmt.Sprintf(format, args...))
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

func q(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func (w *wire) create(key string) string {
	w.t.Helper()
	a := w.do(http.MethodPost, key, q("uploads", ""), nil, nil)
	var r struct{ UploadId string }
	if a.status != 200 || xml.Unmarshal([]byte(a.body), &r) != nil || r.UploadId == "" {
		w.t.Fatalf("CreateMultipartUpload %s: %v", key, a)
	}
	return r.UploadId
}

// parts uploads each slice as parts 1..n and returns their ETags.
func (w *wire) parts(key, id string, parts [][]byte) []string {
	w.t.Helper()
	var etags []string
	for i, p := range parts {
		a := w.do(http.MethodPut, key, q("partNumber", fmt.Sprint(i+1), "uploadId", id), nil, p)
		if a.status != 200 {
			w.t.Fatalf("UploadPart %d of %s: %v", i+1, key, a)
		}
		etags = append(etags, a.header.Get("ETag"))
	}
	return etags
}

func completeBody(etags []string) []byte {
	var b strings.Builder
	b.WriteString("<CompleteMultipartUpload>")
	for i, e := range etags {
		fmt.Fprintf(&b, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i+1, e)
	}
	b.WriteString("</CompleteMultipartUpload>")
	return []byte(b.String())
}

func (w *wire) complete(key, id string, etags []string, header map[string]string) answer {
	return w.do(http.MethodPost, key, q("uploadId", id), header, completeBody(etags))
}

func (w *wire) abort(key, id string) {
	w.do(http.MethodDelete, key, q("uploadId", id), nil, nil)
}

func checksumHeaders(h http.Header) string {
	var out []string
	for k, v := range h {
		if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum") {
			out = append(out, k+"="+strings.Join(v, ","))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

func TestWireFacts(t *testing.T) {
	if os.Getenv("SAFEPUT_S3_WIRE_FACTS") != "1" {
		t.Skip("diagnostic: set SAFEPUT_S3_WIRE_FACTS=1 to record the server's answers")
	}
	s := s3test.Require(t)
	w := &wire{t: t, server: s, bucket: s3test.NewBucket(t, s), signer: v4.NewSigner()}
	t.Logf("endpoint %s region %s bucket %s", s.Endpoint, s.Region, w.bucket)

	// Single PUT: ETag, checksum headers on PUT and HEAD.
	body := pattern(3*mib, 1)
	crc := crc32.ChecksumIEEE(body)
	good := base64.StdEncoding.EncodeToString([]byte{byte(crc >> 24), byte(crc >> 16), byte(crc >> 8), byte(crc)})
	a := w.do(http.MethodPut, "single", nil, map[string]string{"x-amz-checksum-crc32": good}, body)
	fact(t, "PUT 3 MiB with a correct x-amz-checksum-crc32", "%d ETag %s, checksum headers in the answer: %s (body MD5 %s)",
		a.status, a.header.Get("ETag"), checksumHeaders(a.header), md5hex(body))
	h := w.do(http.MethodHead, "single", nil, map[string]string{"x-amz-checksum-mode": "ENABLED"}, nil)
	fact(t, "HEAD of a single PUT (x-amz-checksum-mode: ENABLED)", "%d ETag %s Content-Length %s, checksum headers: %s",
		h.status, h.header.Get("ETag"), h.header.Get("Content-Length"), checksumHeaders(h.header))

	a = w.do(http.MethodPut, "wrong-crc", nil, map[string]string{"x-amz-checksum-crc32": "AAAAAA=="}, body)
	fact(t, "PUT with a wrong x-amz-checksum-crc32", "%v", a)
	a = w.do(http.MethodPut, "wrong-md5", nil, map[string]string{"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="}, body)
	fact(t, "PUT with a wrong Content-MD5", "%v", a)

	a = w.do(http.MethodPut, "single", nil, map[string]string{"If-None-Match": "*"}, body)
	fact(t, "PUT If-None-Match: * on an existing key", "%v", a)
	a = w.do(http.MethodPut, "fresh", nil, map[string]string{"If-None-Match": "*"}, body)
	fact(t, "PUT If-None-Match: * on a new key", "%d", a.status)

	// Multipart 23 MiB in 5 MiB parts: the Complete answer and the ETag shape.
	whole := pattern(23*mib, 2)
	var chunks [][]byte
	var md5s []byte
	for off := 0; off < len(whole); off += 5 * mib {
		end := min(off+5*mib, len(whole))
		chunks = append(chunks, whole[off:end])
		sum := md5.Sum(whole[off:end])
		md5s = append(md5s, sum[:]...)
	}
	want := fmt.Sprintf("%s-%d", md5hex(md5s), len(chunks))
	id := w.create("multi")
	etags := w.parts("multi", id, chunks)
	fact(t, "UploadPart ETags", "%v", etags)
	a = w.complete("multi", id, etags, nil)
	fact(t, "CompleteMultipartUpload 23 MiB in 5 MiB parts", "%v (headers: ETag %q, checksum %s)", a, a.header.Get("ETag"), checksumHeaders(a.header))
	h = w.do(http.MethodHead, "multi", nil, map[string]string{"x-amz-checksum-mode": "ENABLED"}, nil)
	fact(t, "HEAD after the multipart Complete", "%d ETag %s Content-Length %s checksum headers %s; MD5-of-MD5s-N would be %q",
		h.status, h.header.Get("ETag"), h.header.Get("Content-Length"), checksumHeaders(h.header), want)
	a = w.complete("multi", id, etags, nil)
	fact(t, "CompleteMultipartUpload re-sent for the finished upload", "%v", a)
	a = w.do(http.MethodDelete, "multi", q("uploadId", id), nil, nil)
	fact(t, "AbortMultipartUpload of the finished upload", "%v", a)

	// If-None-Match on Complete over an existing key.
	id = w.create("single")
	etags = w.parts("single", id, [][]byte{pattern(5*mib, 3), pattern(1, 4)})
	a = w.complete("single", id, etags, map[string]string{"If-None-Match": "*"})
	fact(t, "Complete If-None-Match: * on an existing key", "%v", a)
	h = w.do(http.MethodHead, "single", nil, nil, nil)
	fact(t, "HEAD of that key afterwards", "%d Content-Length %s (3145728 = the old object kept)", h.status, h.header.Get("Content-Length"))
	w.abort("single", id)

	// Multipart checksum headers.
	a = w.do(http.MethodPost, "mpcrc", q("uploads", ""), map[string]string{"x-amz-checksum-algorithm": "CRC32"}, nil)
	fact(t, "CreateMultipartUpload with x-amz-checksum-algorithm: CRC32", "%v (x-amz-checksum-algorithm in the answer: %q)",
		a, a.header.Get("x-amz-checksum-algorithm"))
	var created struct{ UploadId string }
	if xml.Unmarshal([]byte(a.body), &created) == nil && created.UploadId != "" {
		w.abort("mpcrc", created.UploadId)
	}

	// A part below the minimum.
	for _, size := range []int{5*mib - 1, mib} {
		key := fmt.Sprintf("small-%d", size)
		id = w.create(key)
		etags = w.parts(key, id, [][]byte{pattern(size, 5), pattern(size, 6)})
		a = w.complete(key, id, etags, nil)
		fact(t, fmt.Sprintf("Complete with a first part of %d bytes", size), "%v", a)
		w.abort(key, id)
	}

	// ListParts paging.
	id = w.create("paged")
	w.parts("paged", id, [][]byte{pattern(5*mib, 7), pattern(5*mib, 8), pattern(10, 9)})
	marker := ""
	for page := 1; page <= 5; page++ {
		query := q("uploadId", id, "max-parts", "1")
		if marker != "" {
			query.Set("part-number-marker", marker)
		}
		a = w.do(http.MethodGet, "paged", query, nil, nil)
		var r struct {
			IsTruncated          bool
			NextPartNumberMarker string
			Part                 []struct{ PartNumber int }
		}
		if err := xml.Unmarshal([]byte(a.body), &r); err != nil {
			t.Fatalf("ListParts: %v: %v", err, a)
		}
		fact(t, fmt.Sprintf("ListParts max-parts=1 page %d", page), "%d parts %v truncated %v next marker %q",
			a.status, r.Part, r.IsTruncated, r.NextPartNumberMarker)
		if !r.IsTruncated {
			break
		}
		marker = r.NextPartNumberMarker
	}

	// ListMultipartUploads paging over 3 uploads (plus "paged").
	var ids []string
	for i := range 3 {
		ids = append(ids, w.create(fmt.Sprintf("list-%d", i)))
	}
	keyMarker, idMarker := "", ""
	for page := 1; page <= 6; page++ {
		query := q("uploads", "", "max-uploads", "1")
		if keyMarker != "" {
			query.Set("key-marker", keyMarker)
			query.Set("upload-id-marker", idMarker)
		}
		a = w.do(http.MethodGet, "", query, nil, nil)
		var r struct {
			IsTruncated        bool
			NextKeyMarker      string
			NextUploadIdMarker string
			Upload             []struct{ Key, UploadId string }
		}
		if err := xml.Unmarshal([]byte(a.body), &r); err != nil {
			t.Fatalf("ListMultipartUploads: %v: %v", err, a)
		}
		fact(t, fmt.Sprintf("ListMultipartUploads max-uploads=1 page %d", page), "%d uploads %v truncated %v next %q/%q",
			a.status, r.Upload, r.IsTruncated, r.NextKeyMarker, r.NextUploadIdMarker)
		if !r.IsTruncated {
			break
		}
		keyMarker, idMarker = r.NextKeyMarker, r.NextUploadIdMarker
	}
	for i, id := range ids {
		w.abort(fmt.Sprintf("list-%d", i), id)
	}
	w.abort("paged", id)
	a = w.do(http.MethodGet, "paged", q("uploadId", id), nil, nil)
	fact(t, "ListParts of an aborted upload", "%v", a)

	// Unknown upload ids: a made-up one, and one shaped like RGW's own ("2~" and 32 characters).
	for _, missing := range []string{"no-such-upload", "2~" + strings.Repeat("a", 32)} {
		a = w.do(http.MethodPut, "k", q("partNumber", "1", "uploadId", missing), nil, []byte("x"))
		fact(t, "UploadPart to missing upload "+missing, "%v", a)
		a = w.complete("k", missing, []string{`"e"`}, nil)
		fact(t, "Complete of missing upload "+missing, "%v", a)
		a = w.do(http.MethodDelete, "k", q("uploadId", missing), nil, nil)
		fact(t, "Abort of missing upload "+missing, "%v", a)
	}
}
