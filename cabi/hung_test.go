package cabi

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// hungServer accepts connections and reads what they send, never answering: a store that is up
// but stuck. It returns its endpoint and a count of the connections it accepted so far.
func hungServer(t *testing.T) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
		}
	})
	accepted := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
	return "http://" + ln.Addr().String(), accepted
}

// The header's bounds against a store that accepts connections and never answers (stall_timeout
// 1s, abort_timeout 1s): a write that fits in the free part buffer returns at once; the write
// that needs the multipart upload waits for its CreateMultipartUpload at most about
// 3 x stall_timeout and fails transient; an abort from another thread ends that wait at once,
// the write answering 8, and the abort itself returns within 2 x abort_timeout; every later call
// answers 8. Through both adapters. (The bounds are generous: this machine's timing is noisy.)
func TestHungServerBounds(t *testing.T) {
	endpoint, _ := hungServer(t)
	const stall, abortBound = time.Second, time.Second
	conf := fmt.Sprintf(`{"bucket":"hung","key":"k","endpoint":%q,"access_key":"a","secret_key":"s","path_style":true,"provider":"versitygw","part_size":"5MiB","concurrency":4,"stall_timeout":"1s","abort_timeout":"1s","backend":%%q}`, endpoint)
	part := make([]byte, 5<<20)
	for _, backend := range []string{"aws", "minio"} {
		t.Run(backend+"/create-wait", func(t *testing.T) {
			t.Parallel()
			// A server of its own: the parallel subtests' connections are not counted.
			own, accepted := hungServer(t)
			h, o := Open(strings.Replace(fmt.Sprintf(conf, backend), endpoint, own, 1))
			if o.status != StatusOK {
				t.Fatalf("open: %+v", o)
			}
			// Open warms the connection the first request will take (internal/warmdial): let it
			// land before counting. Then nothing is sent (no connection is made), so nothing waits
			// on the store; the time is bounded by two stall_timeouts, since a loaded machine
			// under -race can take a second to copy 5 MiB: still short of the create's wait
			// below (about three), which a write that waited on the store would take.
			for deadline := time.Now().Add(stall); accepted() == 0 && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			before := accepted()
			t0 := time.Now()
			if w := Write(h, part); w.status != StatusOK || accepted() != before || time.Since(t0) > 2*stall {
				t.Fatalf("first part's bytes: %+v after %v, %d connections made; want 0 at once (a buffer is free, nothing is sent)",
					w, time.Since(t0), accepted()-before)
			}
			t0 = time.Now()
			w := Write(h, []byte("x"))
			took := time.Since(t0)
			t.Logf("the write that needs the upload: status %d after %v", w.status, took)
			if w.status != StatusTransient || took > 3*stall+2*time.Second {
				t.Errorf("write past the first part: %+v after %v; want 3 within about 3 x %v", w, took, stall)
			}
			t0 = time.Now()
			c := Close(h)
			t.Logf("close: status %d after %v: %s", c.status, time.Since(t0), c.json)
			if c.status != StatusTransient || time.Since(t0) > 2*abortBound+2*time.Second {
				t.Errorf("close after the failure: %+v after %v; want 3 within 2 x abort_timeout", c, time.Since(t0))
			}
		})
		t.Run(backend+"/abort-ends-the-wait", func(t *testing.T) {
			t.Parallel()
			h, o := Open(fmt.Sprintf(conf, backend))
			if o.status != StatusOK {
				t.Fatalf("open: %+v", o)
			}
			if w := Write(h, part); w.status != StatusOK {
				t.Fatalf("first part's bytes: %+v", w)
			}
			done := make(chan outcome, 1)
			go func() { done <- Write(h, []byte("x")) }()
			time.Sleep(stall / 2) // the write is waiting on CreateMultipartUpload
			t0 := time.Now()
			a := Abort(h)
			took := time.Since(t0)
			t.Logf("abort: status %d after %v: %s", a.status, took, a.json)
			if took > 2*abortBound+2*time.Second {
				t.Errorf("abort took %v; want at most about 2 x abort_timeout (%v)", took, 2*abortBound)
			}
			if a.status != StatusOK && errorJSON(t, a)["kind"] == nil {
				t.Errorf("abort: %+v; want 0 or a classified failure", a)
			}
			select {
			case w := <-done:
				if w.status != StatusCanceled {
					t.Errorf("the waiting write: %+v; want 8", w)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("the waiting write did not return within 2 s of the abort")
			}
			for name, o := range map[string]outcome{"write": Write(h, []byte("y")), "close": Close(h), "abort": Abort(h)} {
				if o.status != StatusCanceled {
					t.Errorf("%s after the abort: %+v; want 8", name, o)
				}
			}
		})
	}
}
