package errors_test

import (
	"bytes"
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// fuzzSecret is planted in fuzzed messages; it must never appear in a rendered error.
const fuzzSecret = "Zq9SECRETSIG"

// FuzzClassify builds an error from an arbitrary status, code and message, wraps it in a chain
// chosen by the bits of shape, and checks Classify's promises: no panic, never Unknown, one line,
// no planted signature.
func FuzzClassify(f *testing.F) {
	for _, r := range errors.CodeTable() {
		f.Add(r.Status, r.Code, "msg", "UploadPart", uint16(0))
		if r.OnComplete != errors.Unknown {
			f.Add(r.Status, r.Code, "msg", "CompleteMultipartUpload", uint16(1<<4))
		}
	}
	f.Add(200, "InternalError", "embedded in a 200 Complete", "CompleteMultipartUpload", uint16(0))
	f.Add(200, "", "", "UploadPart", uint16(1<<8))
	f.Add(0, "", "connection reset", "", uint16(1<<9))
	f.Add(503, "slowdown ", "Please reduce your request rate.\nRetry", "PutObject", uint16(0xffff))
	f.Add(-1, "\x00", "Credential=AKIAIOSFODNN7EXAMPLE/2026", "Head", uint16(0x5555))
	f.Add(999999, strings.Repeat("X", 300), strings.Repeat("é", 400), "Abort", uint16(0xaaaa))
	f.Add(412, "", "", "Complete", uint16(1<<10))
	f.Add(404, "NoSuchUpload", "", "Complete", uint16(1<<4|1<<1))
	f.Fuzz(func(t *testing.T, status int, code, message, op string, shape uint16) {
		if shape&(1<<12) != 0 {
			message += " X-Amz-Signature=" + fuzzSecret
		}
		var err error = &store.ResponseError{Op: op, StatusCode: status, Code: code, Message: message, RequestID: "R"}
		switch {
		case shape&(1<<8) != 0:
			err = &store.ResponseError{Op: op, StatusCode: status, Message: message, Err: store.ErrNonCompliant}
		case shape&(1<<9) != 0:
			err = stderrors.New(message)
		case shape&(1<<10) != 0:
			err = fmt.Errorf("%w: %s", store.ErrInvalidInput, message)
		}
		if shape&(1<<0) != 0 {
			err = fmt.Errorf("wrapped %s: %w", message, err)
		}
		if shape&(1<<1) != 0 {
			err = stderrors.Join(err, io.ErrUnexpectedEOF)
		}
		if shape&(1<<2) != 0 {
			err = &url.Error{Op: "Put", URL: "https://h/k?X-Amz-Signature=" + fuzzSecret, Err: err}
		}
		if shape&(1<<3) != 0 {
			err = &net.OpError{Op: "read", Net: "tcp", Err: err}
		}
		if shape&(1<<4) != 0 {
			err = &errors.Error{Op: op, Bucket: "b", Key: message, Err: err}
		}
		if shape&(1<<5) != 0 {
			err = fmt.Errorf("%w; %w", err, context.DeadlineExceeded)
		}
		if shape&(1<<6) != 0 {
			err = errors.Classify(err)
		}
		if shape&(1<<7) != 0 {
			err = &errors.Error{Kind: errors.Kind(shape >> 13), Message: message, Err: err}
		}
		if shape&(1<<11) != 0 {
			err = stderrors.Join(err, syscall.ECONNRESET)
		}

		e := errors.Classify(err)
		check(t, e)
		ctx, cancel := context.WithCancel(context.Background())
		live := errors.ClassifyContext(ctx, err)
		check(t, live)
		cancel()
		check(t, errors.ClassifyContext(ctx, err))
		if errors.Decide(err) == errors.DecisionNone {
			t.Fatal("Decide of a non-nil error is none")
		}
		_ = errors.IsTimeout(err)
	})
}

func check(t *testing.T, e *errors.Error) {
	t.Helper()
	if e == nil {
		t.Fatal("Classify returned nil for a non-nil error")
	}
	if e.Kind == errors.Unknown || e.Kind < 0 || e.Kind.String() == "" {
		t.Fatalf("kind %v for %#v", e.Kind, e)
	}
	s := e.Error()
	if strings.ContainsAny(s, "\r\n") {
		t.Fatalf("not one line: %q", s)
	}
	if strings.Contains(s, fuzzSecret) {
		t.Fatalf("signature leaked: %q", s)
	}
	if r := errors.Redact(s); errors.Redact(r) != r {
		t.Fatalf("Redact is not idempotent on %q", s)
	}
}

// FuzzParseRetryAfter: any header values give a non-negative duration, never a panic.
func FuzzParseRetryAfter(f *testing.F) {
	f.Add("", "", int64(0))
	f.Add("120", "", int64(1767225600))
	f.Add("Wed, 21 Oct 2015 07:28:00 GMT", "", int64(1445412000))
	f.Add("1", "1500", int64(0))
	f.Add("-5", "-5", int64(0))
	f.Add("99999999999999999999", "9223372036854775807", int64(0))
	f.Add(" 7 ", "\t", int64(-1))
	f.Fuzz(func(t *testing.T, ra, amz string, unix int64) {
		// A "now" whose ±1e5 s neighbourhood has four-digit years, so HTTP dates round-trip.
		const lo, hi = int64(100_000), int64(253_402_300_799 - 100_000)
		now := time.Unix(lo+((unix%(hi-lo))+(hi-lo))%(hi-lo), 0)
		d := errors.ParseRetryAfter(ra, amz, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, negative", ra, amz, d)
		}
		// x-amz-retry-after wins whenever it is a positive number of milliseconds.
		if ms, err := strconv.ParseInt(strings.TrimSpace(amz), 10, 64); err == nil && ms > 0 {
			if alone := errors.ParseRetryAfter("", amz, now); d != alone {
				t.Fatalf("with Retry-After %q: %v, want x-amz-retry-after's %v", ra, d, alone)
			}
		}
		// Round trips from the fuzzed number: milliseconds, seconds, and an HTTP date k s away.
		n := unix
		wantScaled := func(unit time.Duration) time.Duration {
			switch {
			case n <= 0:
				return 0
			case n > math.MaxInt64/int64(unit):
				return time.Duration(math.MaxInt64)
			}
			return time.Duration(n) * unit
		}
		if got, want := errors.ParseRetryAfter("", strconv.FormatInt(n, 10), now), wantScaled(time.Millisecond); got != want {
			t.Fatalf("x-amz-retry-after %d: %v, want %v", n, got, want)
		}
		if got, want := errors.ParseRetryAfter(" "+strconv.FormatInt(n, 10)+" ", "", now), wantScaled(time.Second); got != want {
			t.Fatalf("Retry-After %d: %v, want %v", n, got, want)
		}
		k := n % 100_000
		date := now.Add(time.Duration(k) * time.Second).UTC().Format(http.TimeFormat)
		if got, want := errors.ParseRetryAfter(date, "", now), time.Duration(max(k, 0))*time.Second; got != want {
			t.Fatalf("Retry-After %q at %s: %v, want %v", date, now.UTC().Format(http.TimeFormat), got, want)
		}
	})
}

// FuzzParseErrorBody: arbitrary bodies never panic, and a parsed error always has a code.
func FuzzParseErrorBody(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n\n" + `<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>x</HostId></Error>`))
	f.Add([]byte(`<CompleteMultipartUploadResult><Location>x</Location><ETag>"a-2"</ETag></CompleteMultipartUploadResult>`))
	f.Add([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><Error><Code>SlowDown</Code></Error>`))
	f.Add([]byte(`<Error><Code>A</Code><Code>B</Code><Message>X-Amz-Signature=abc</Message></Error>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "b">]><Error><Code>&a;</Code></Error>`))
	f.Add([]byte("<html><body>502</body></html>"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, ok := errors.ParseErrorBody(bytes.NewReader(data))
		if ok && b.Code == "" {
			t.Fatal("ok without a code")
		}
		if len(b.Code) > 200 || len(b.Message) > 1000 {
			t.Fatalf("field not clipped: %d %d", len(b.Code), len(b.Message))
		}
	})
}
