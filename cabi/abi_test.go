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
			// Abort first: close finds the handle ended (2). Close first: abort cancels it, and
			// the close reports the cancellation (8).
			if aborted.status != StatusOK || (closed.status != StatusBadInput && closed.status != StatusCanceled) {
				t.Errorf("close %+v, abort %+v; want abort 0 and close 2 or 8", closed, aborted)
			}
			if w := Write(h, []byte("x")); w.status != StatusBadInput {
				t.Errorf("write after the end: %+v; want bad input", w)
			}
		})
	}
	wg.Wait()
}
