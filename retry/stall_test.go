package retry

import (
	"bytes"
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// A request that never makes progress is cut after the window, classified Transient with code
// Stalled, and retried; the whole Do returns within attempts × window (plus backoff).
func TestStallCutsAndRetries(t *testing.T) {
	const window = 50 * ms
	p, _ := testPolicy(withStallTimeout(window), withMaxAttempts(3))
	calls := 0
	start := time.Now()
	st, err := p.Do(context.Background(), testOp, func(ctx context.Context, _ int) error {
		calls++
		<-ctx.Done() // a hung server: nothing moves until the watchdog cuts the attempt
		return ctx.Err()
	})
	took := time.Since(start)
	var e *errors.Error
	if !stderrors.As(err, &e) || e.Kind != errors.Transient || e.Code != errors.CodeStalled {
		t.Fatalf("err %v, want Transient code %s", err, errors.CodeStalled)
	}
	if want := fmt.Sprintf("no progress for %v", window); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name the window (%q)", err, want)
	}
	if calls != 3 || st.Attempts != 3 || st.ByKind[errors.Transient] != 3 {
		t.Errorf("calls %d, stats %+v: want 3 stalled attempts", calls, st)
	}
	t.Logf("3 stalled attempts of a %v window returned after %v", window, took)
	if took > 10*time.Second {
		t.Errorf("returned after %v: the watchdog did not bound the attempts", took)
	}
}

// Progress keeps an attempt alive however long it takes: a slow transfer is never cut.
func TestStallProgressKeepsAlive(t *testing.T) {
	const window = 80 * ms
	p, _ := testPolicy(withStallTimeout(window))
	_, err := p.Do(context.Background(), testOp, func(ctx context.Context, _ int) error {
		tick := time.NewTicker(window / 4)
		defer tick.Stop()
		for range 20 { // 20 × window/4 = 5 windows in all
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				store.ReportProgress(ctx)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a progressing attempt was cut: %v", err)
	}
}

// The caller's cancellation is Canceled, not Stalled, even with a watchdog running.
func TestStallCallerCancelIsCanceled(t *testing.T) {
	p, _ := testPolicy(withStallTimeout(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	_, err := p.Do(ctx, testOp, func(ctx context.Context, _ int) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !stderrors.Is(err, errors.Canceled) {
		t.Fatalf("err %v, want Canceled", err)
	}
}

// Over real sockets through store.ProgressTransport: a server that trickles its answer slower
// than the window in total but faster than it per chunk is not cut; one that holds the answer is.
func TestStallOverHTTP(t *testing.T) {
	const window = 300 * ms
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/trickle":
			fl := w.(http.Flusher)
			w.WriteHeader(200)
			for range 8 { // 8 × window/3 ≈ 2.7 windows in all
				_, _ = w.Write(bytes.Repeat([]byte(" "), 64))
				fl.Flush()
				select {
				case <-time.After(window / 3):
				case <-r.Context().Done():
					return
				}
			}
		case "/hold":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Transport: store.ProgressTransport(srv.Client().Transport)}
	get := func(path string) error {
		p, _ := testPolicy(withStallTimeout(window), withMaxAttempts(2))
		_, err := p.Do(context.Background(), testOp, func(ctx context.Context, _ int) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+path, bytes.NewReader(make([]byte, 1<<20)))
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.Copy(io.Discard, resp.Body)
			return err
		})
		return err
	}
	if err := get("/trickle"); err != nil {
		t.Errorf("trickling answer was cut: %v", err)
	}
	err := get("/hold")
	var e *errors.Error
	if !stderrors.As(err, &e) || e.Code != errors.CodeStalled || e.Attempts != 2 {
		t.Errorf("held answer: %v, want 2 stalled attempts", err)
	}
}
