package s3error

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		ra, amz string
		want    time.Duration
	}{
		{"", "", 0},
		{"3", "", 3 * time.Second},
		{"3", "1500", 1500 * time.Millisecond},
		{"", "250", 250 * time.Millisecond},
		{"-1", "", 0},
		{"soon", "x", 0},
		{now.Add(10 * time.Second).Format(http.TimeFormat), "", 10 * time.Second},
		{now.Add(-10 * time.Second).Format(http.TimeFormat), "", 0},
		{"99999999999999999", "", time.Duration(1<<63 - 1)},
	}
	for _, c := range cases {
		if got := ParseRetryAfter(c.ra, c.amz, now); got != c.want {
			t.Errorf("ParseRetryAfter(%q, %q) = %v, want %v", c.ra, c.amz, got, c.want)
		}
	}
}

func TestParseBody(t *testing.T) {
	body := `<?xml version="1.0" encoding="UTF-8"?>

<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message><RequestId>656c76696e6727732072657175657374</RequestId><HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId></Error>`
	b, ok := ParseBody(strings.NewReader(body))
	if !ok || b.Code != "InternalError" || b.RequestID != "656c76696e6727732072657175657374" || !strings.HasPrefix(b.Message, "We encountered") {
		t.Errorf("%+v %v", b, ok)
	}
	for _, notErr := range []string{
		`<CompleteMultipartUploadResult><ETag>"x"</ETag></CompleteMultipartUploadResult>`,
		`<html>502 Bad Gateway</html>`, ``, `<Error><Code>`, `<Error></Error>`,
	} {
		if _, ok := ParseBody(strings.NewReader(notErr)); ok {
			t.Errorf("%q parsed as an error", notErr)
		}
	}
	if _, ok := ParseBody(nil); ok {
		t.Error("nil reader")
	}
	// A huge body is cut at the limit rather than read whole.
	huge := io.MultiReader(strings.NewReader("<Error><Code>X</Code><Message>"), strings.NewReader(strings.Repeat("a", 2*MaxBodySize)))
	if _, ok := ParseBody(huge); ok {
		t.Error("truncated document parsed")
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
		d := ParseRetryAfter(ra, amz, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, negative", ra, amz, d)
		}
		// x-amz-retry-after wins whenever it is a positive number of milliseconds.
		if ms, err := strconv.ParseInt(strings.TrimSpace(amz), 10, 64); err == nil && ms > 0 {
			if alone := ParseRetryAfter("", amz, now); d != alone {
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
		if got, want := ParseRetryAfter("", strconv.FormatInt(n, 10), now), wantScaled(time.Millisecond); got != want {
			t.Fatalf("x-amz-retry-after %d: %v, want %v", n, got, want)
		}
		if got, want := ParseRetryAfter(" "+strconv.FormatInt(n, 10)+" ", "", now), wantScaled(time.Second); got != want {
			t.Fatalf("Retry-After %d: %v, want %v", n, got, want)
		}
		k := n % 100_000
		date := now.Add(time.Duration(k) * time.Second).UTC().Format(http.TimeFormat)
		if got, want := ParseRetryAfter(date, "", now), time.Duration(max(k, 0))*time.Second; got != want {
			t.Fatalf("Retry-After %q at %s: %v, want %v", date, now.UTC().Format(http.TimeFormat), got, want)
		}
	})
}

// FuzzParseBody: arbitrary bodies never panic, and a parsed error always has a code.
func FuzzParseBody(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n\n" + `<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>x</HostId></Error>`))
	f.Add([]byte(`<CompleteMultipartUploadResult><Location>x</Location><ETag>"a-2"</ETag></CompleteMultipartUploadResult>`))
	f.Add([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><Error><Code>SlowDown</Code></Error>`))
	f.Add([]byte(`<Error><Code>A</Code><Code>B</Code><Message>X-Amz-Signature=abc</Message></Error>`))
	f.Add([]byte(`<!DOCTYPE x [<!ENTITY a "b">]><Error><Code>&a;</Code></Error>`))
	f.Add([]byte("<html><body>502</body></html>"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, ok := ParseBody(bytes.NewReader(data))
		if ok && b.Code == "" {
			t.Fatal("ok without a code")
		}
		if len(b.Code) > 200 || len(b.Message) > 1000 {
			t.Fatalf("field not clipped: %d %d", len(b.Code), len(b.Message))
		}
	})
}
