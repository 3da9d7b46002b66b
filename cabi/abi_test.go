package cabi

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// A config that opens without contacting anything: Open sends no request, and a writer aborted
// before its first part sends none either.
const offline = `{"bucket":"b","key":"k","endpoint":"http://127.0.0.1:9","access_key":"a","secret_key":"s","path_style":true}`

func errorJSON(t *testing.T, o outcome) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(o.json), &m); err != nil {
		t.Fatalf("JSON %q: %v", o.json, err)
	}
	if code, _ := m["exit_code"].(float64); int(code) != o.status {
		t.Errorf("exit_code %v, status %d; want equal", m["exit_code"], o.status)
	}
	return m
}

// Fault injection is test-only: an ordinary build refuses the field instead of ignoring it.
func TestTestFaultsRefusedOutsideTests(t *testing.T) {
	h, o := Open(strings.Replace(offline, `"bucket"`, `"test_faults":"PutObject:Forbidden","bucket"`, 1))
	if h != 0 || o.status != StatusBadInput || !strings.Contains(errorJSON(t, o)["error"].(string), "test_faults") {
		t.Fatalf("open with test_faults: handle %d, %+v; want bad input naming test_faults", h, o)
	}
}

// A stall window that is negative, absurd or not a duration is bad input naming the field.
func TestConfigStallTimeout(t *testing.T) {
	for _, v := range []string{"-1s", "48h", "soon"} {
		h, o := Open(strings.Replace(offline, `"bucket"`, `"stall_timeout":"`+v+`","bucket"`, 1))
		if h != 0 || o.status != StatusBadInput || !strings.Contains(errorJSON(t, o)["error"].(string), "stall_timeout") {
			t.Errorf("stall_timeout %q: handle %d, %+v; want bad input naming stall_timeout", v, h, o)
		}
	}
	h, o := Open(strings.Replace(offline, `"bucket"`, `"stall_timeout":"5s","bucket"`, 1))
	if o.status != StatusOK {
		t.Fatalf("stall_timeout 5s refused: %+v", o)
	}
	Abort(h)
}

func TestConfigSizes(t *testing.T) {
	for _, c := range []struct {
		json string
		ok   bool
	}{
		{`"part_size":"5MiB","provider":"aws"`, true},
		{`"part_size":5242880,"provider":"aws"`, true},
		{`"part_size":-1`, false},
		{`"part_size":"5 parsecs"`, false},
		{`"part_size":true`, false},
		{`"size":-5`, false},
		{`"size":0`, true},
		{`"expected_size":"1TiB"`, true},
		{`"log_level":"loud"`, false},
	} {
		h, o := Open(strings.Replace(offline, `"bucket"`, c.json+`,"bucket"`, 1))
		if (o.status == StatusOK) != c.ok {
			t.Errorf("%s: status %d %s; want ok=%v", c.json, o.status, o.json, c.ok)
		}
		if h != 0 {
			if a := Abort(h); a.status != StatusOK {
				t.Errorf("abort: %+v", a)
			}
		}
	}
}

func TestPanicBecomesInternal(t *testing.T) {
	o := func() (o outcome) {
		defer guard("safeput_test", &o)
		panic("boom")
	}()
	m := errorJSON(t, o)
	if o.status != StatusInternal || m["kind"] != "internal" || !strings.Contains(m["error"].(string), "boom") {
		t.Fatalf("%+v; want status 1, kind internal, the panic's message", o)
	}
}

// Many handles from many goroutines at once, with close and abort racing on each: no handle
// is ended twice, the loser is told bad input (or the close is cancelled), nothing panics.
func TestConcurrentHandles(t *testing.T) {
	const n = 16
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			h, o := Open(offline)
			if o.status != StatusOK {
				t.Errorf("open: %+v", o)
				return
			}
			if w := Write(h, []byte("some bytes")); w.status != StatusOK {
				t.Errorf("write: %+v", w)
			}
			var closed, aborted outcome
			var race sync.WaitGroup
			race.Go(func() { closed = Close(h) })
			race.Go(func() { aborted = Abort(h) })
			race.Wait()
			// Abort first: close finds the handle aborted. Close first: abort cancels it, and
			// the close reports the cancellation. Either way the close answers 8, and so does
			// any later call: the handle was aborted, not misused.
			if aborted.status != StatusOK || closed.status != StatusCanceled {
				t.Errorf("close %+v, abort %+v; want abort 0 and close 8", closed, aborted)
			}
			if w := Write(h, []byte("x")); w.status != StatusCanceled || errorJSON(t, w)["kind"] != "canceled" {
				t.Errorf("write after the abort: %+v; want 8, kind canceled", w)
			}
		})
	}
	wg.Wait()
}

// The config means one thing: names match exactly, once each, and the bucket and key are the
// bytes given or an error, never a replacement that would write under another key.
func TestConfigStrict(t *testing.T) {
	for _, c := range []struct{ name, json, field string }{
		{"upper-case name", `{"bucket":"b","KEY":"k"}`, `"KEY"`},
		{"capitalised name", `{"Bucket":"b","key":"k"}`, `"Bucket"`},
		{"duplicated key", `{"bucket":"b","key":"k","key":"other"}`, `"key" given twice`},
		{"duplicated create_only", `{"bucket":"b","key":"k","create_only":true,"create_only":false}`, `"create_only" given twice`},
		{"bad byte in key", "{\"bucket\":\"b\",\"key\":\"k\xff\"}", "key: not valid UTF-8"},
		{"bad byte in bucket", "{\"bucket\":\"b\xc3\",\"key\":\"k\"}", "bucket: not valid UTF-8"},
		{"unpaired surrogate in key", `{"bucket":"b","key":"k\ud800"}`, "key: not valid UTF-8"},
		{"not an object", `["bucket","key"]`, "want a JSON object"},
		{"trailing data", `{"bucket":"b","key":"k"} {}`, "trailing data"},
		{"wrong type names the field", `{"bucket":"b","key":"k","concurrency":"4"}`, "concurrency"},
	} {
		h, o := Open(c.json)
		if h != 0 || o.status != StatusBadInput {
			t.Errorf("%s: handle %d, %+v; want bad input", c.name, h, o)
			continue
		}
		m := errorJSON(t, o)
		if msg, _ := m["error"].(string); !strings.Contains(msg, c.field) {
			t.Errorf("%s: error %q; want it to name %s", c.name, msg, c.field)
		}
		if m["kind"] != "permanent" {
			t.Errorf("%s: kind %v; want permanent", c.name, m["kind"])
		}
	}
	// U+FFFD the caller wrote, literally or escaped, is a character like any other.
	for _, key := range []string{"k\uFFFD", `k\ufffd`, `k\uD83D\uDE00`} {
		h, o := Open(strings.Replace(offline, `"key":"k"`, `"key":"`+key+`"`, 1))
		if o.status != StatusOK {
			t.Errorf("key %q: %+v; want it accepted", key, o)
			continue
		}
		Abort(h)
	}
}

// What is wrong with the config is reported before what is missing from the environment: a
// caller with no credentials yet learns first that its config is wrong.
func TestConfigErrorsBeforeCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/safeput-cabi-test-config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/safeput-cabi-test-credentials")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
	t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // the end of the SDK's chain: not this host's instance role
	for _, c := range []struct{ json, want string }{
		{`{"key":"k"}`, "bucket and key are required"},
		{`{"bucket":"b","key":"k","concurrency":0}`, "concurrency"},
		{`{"bucket":"b","key":"k","concurrency":100000}`, "concurrency 100000: must be from 1 to 1024"},
		{`{"bucket":"b","key":"k","concurrency":9223372036854775807}`, "concurrency 9223372036854775807: must be from 1 to 1024"},
		{`{"bucket":"b","key":"k","backend":"gcs"}`, "backend"},
		{`{"bucket":"b","key":"k","endpoint":"ftp://x"}`, "endpoint"},
		{`{"bucket":"b","key":"k","part_size":"1KiB","provider":"aws"}`, "part"},
		{`{"bucket":"b","key":"k","abort_timeout":"0s"}`, "abort_timeout"},
		{`{"bucket":"b","key":"` + strings.Repeat("k", 1025) + `"}`, "key is 1025 bytes"},
		{`{"bucket":"b","key":"k"}`, "missing credentials"}, // nothing else wrong
	} {
		h, o := Open(c.json)
		if h != 0 || o.status != StatusBadInput {
			t.Errorf("%s: handle %d, %+v; want bad input", c.json, h, o)
			continue
		}
		m := errorJSON(t, o)
		if msg, _ := m["error"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q; want it to say %q", c.json, msg, c.want)
		}
		if m["kind"] == nil || m["kind"] == "" {
			t.Errorf("%s: no kind in %s", c.json, o.json)
		}
	}
}

// abort_timeout is checked like stall_timeout and accepted in range.
func TestConfigAbortTimeout(t *testing.T) {
	for _, v := range []string{"0s", "-1s", "2h", "never"} {
		h, o := Open(strings.Replace(offline, `"bucket"`, `"abort_timeout":"`+v+`","bucket"`, 1))
		if h != 0 || o.status != StatusBadInput || !strings.Contains(errorJSON(t, o)["error"].(string), "abort_timeout") {
			t.Errorf("abort_timeout %q: handle %d, %+v; want bad input naming abort_timeout", v, h, o)
		}
	}
	h, o := Open(strings.Replace(offline, `"bucket"`, `"abort_timeout":"1s","bucket"`, 1))
	if o.status != StatusOK {
		t.Fatalf("abort_timeout 1s refused: %+v", o)
	}
	Abort(h)
}

// An aborted handle answers 8 for as long as the header says: among the last abortedKept
// aborts; one older than that is forgotten (2), so aborts cannot grow the process without bound.
func TestAbortedHandlesRemembered(t *testing.T) {
	first, o := Open(offline)
	if o.status != StatusOK {
		t.Fatalf("open: %+v", o)
	}
	Abort(first)
	if w := Write(first, []byte("x")); w.status != StatusCanceled {
		t.Fatalf("write after abort: %+v; want 8", w)
	}
	var last int64
	for range abortedKept {
		h, o := Open(offline)
		if o.status != StatusOK {
			t.Fatalf("open: %+v", o)
		}
		Abort(h)
		last = h
	}
	if w := Write(first, []byte("x")); w.status != StatusBadInput {
		t.Errorf("write on the handle aborted %d aborts ago: %+v; want 2 (forgotten)", abortedKept, w)
	}
	if w := Write(last, []byte("x")); w.status != StatusCanceled {
		t.Errorf("write on the last aborted handle: %+v; want 8", w)
	}
	abortedMu.Lock()
	n := len(aborted)
	abortedMu.Unlock()
	if n > abortedKept {
		t.Errorf("%d aborted handles remembered; want at most %d", n, abortedKept)
	}
}
