package miniogo

import (
	"net/http"
	"testing"
	"time"

	"github.com/safeput/safeput/internal/catrust"
)

func TestTransportSizing(t *testing.T) {
	for _, secure := range []bool{false, true} {
		tr, _ := newTransport(secure, nil)
		if tr.MaxIdleConnsPerHost < 64 || tr.MaxIdleConns < tr.MaxIdleConnsPerHost || tr.DisableKeepAlives || !tr.DisableCompression {
			t.Errorf("transport(secure=%v) = idle/host %d, idle %d, keep-alives off %v, compression off %v",
				secure, tr.MaxIdleConnsPerHost, tr.MaxIdleConns, tr.DisableKeepAlives, tr.DisableCompression)
		}
		if secure && tr.TLSClientConfig.InsecureSkipVerify {
			t.Error("InsecureSkipVerify on without being asked")
		}
	}
	insecure, err := catrust.Config(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if tr, _ := newTransport(true, insecure); !tr.TLSClientConfig.InsecureSkipVerify {
		t.Error("InsecureSkipVerify asked for but off")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"X-Amz-Retry-After": {"250"}}, 250 * time.Millisecond},
		// Same precedence as the aws adapter: the millisecond hint is the more precise.
		{http.Header{"Retry-After": {"2"}, "X-Amz-Retry-After": {"250"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {"-3"}}, 0},
	} {
		if got := retryAfter(c.h, now); got != c.want {
			t.Errorf("retryAfter(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

func TestTrimETag(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", "abc": "abc", `"`: `"`, "": "", ` "a-2" `: "a-2"} {
		if got := trimETag(in); got != want {
			t.Errorf("trimETag(%q) = %q, want %q", in, got, want)
		}
	}
}
