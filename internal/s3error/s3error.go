// Package s3error reads what an S3 answer says about a failure: the <Error> document and the
// retry hint. The adapters use it; Classify turns what they report into an *errors.Error.
package s3error

import (
	"encoding/xml"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/safeput/safeput/errors"
)

// ParseRetryAfter reads a store's retry hint: x-amz-retry-after (milliseconds) wins over
// Retry-After (seconds, or an HTTP date relative to now). It returns 0 when neither is present,
// parseable and positive; the retry policy clamps whatever it gets, so this does not.
func ParseRetryAfter(retryAfter, amzRetryAfter string, now time.Time) time.Duration {
	if ms, err := strconv.ParseInt(strings.TrimSpace(amzRetryAfter), 10, 64); err == nil && ms > 0 {
		if ms > math.MaxInt64/int64(time.Millisecond) {
			return time.Duration(math.MaxInt64)
		}
		return time.Duration(ms) * time.Millisecond
	}
	v := strings.TrimSpace(retryAfter)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		if s > math.MaxInt64/int64(time.Second) {
			return time.Duration(math.MaxInt64)
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// MaxBodySize is the most ParseBody reads: S3 error documents are a few hundred bytes.
const MaxBodySize = 64 << 10

// Body is the content of an S3 <Error> document.
type Body struct {
	Code      string
	Message   string
	RequestID string
	HostID    string
}

// ParseBody reads at most MaxBodySize bytes of r and returns the S3 <Error> document
// found there; ok is false when the body is not one (a CompleteMultipartUploadResult, HTML from a
// proxy, nothing). Adapters use it on a 200 CompleteMultipartUpload answer, which S3 may send with
// an <Error> body after a long Complete fails.
func ParseBody(r io.Reader) (body Body, ok bool) {
	if r == nil {
		return Body{}, false
	}
	dec := xml.NewDecoder(io.LimitReader(r, MaxBodySize))
	// Stores send UTF-8; a declared other charset must not make the decoder fail the whole parse.
	dec.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	for {
		tok, err := dec.Token()
		if err != nil {
			return Body{}, false
		}
		start, isStart := tok.(xml.StartElement)
		if !isStart {
			continue
		}
		if start.Name.Local != "Error" {
			return Body{}, false
		}
		var doc struct {
			Code      string `xml:"Code"`
			Message   string `xml:"Message"`
			RequestID string `xml:"RequestId"`
			HostID    string `xml:"HostId"`
		}
		if err := dec.DecodeElement(&doc, &start); err != nil {
			return Body{}, false
		}
		// Redacted before they are cut: a secret cut in two is no longer recognisable.
		body = Body{
			Code:      clip(errors.Redact(strings.TrimSpace(doc.Code)), maxCodeLen),
			Message:   clip(errors.Redact(strings.TrimSpace(doc.Message)), maxMessageLen),
			RequestID: clip(errors.Redact(strings.TrimSpace(doc.RequestID)), maxCodeLen),
			HostID:    clip(errors.Redact(strings.TrimSpace(doc.HostID)), maxMessageLen),
		}
		return body, body.Code != ""
	}
}

// The limits Classify applies to what it copies from a store's answer, to keep a log line a line.
const (
	maxCodeLen    = 128
	maxMessageLen = 512
)

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
