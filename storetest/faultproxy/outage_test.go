package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestWindow: a rule with a Window fires on its Nth request and on every matching one after it
// until the window ends, then never again.
func TestWindow(t *testing.T) {
	p := newDecider(1, Rule{Op: UploadPart, Nth: 2, Window: 200 * time.Millisecond, Fault: Fault{Kind: Status, Status: 502}})
	var got []bool
	for range 4 {
		_, ok := p.decide(UploadPart, target{})
		got = append(got, ok)
	}
	if want := []bool{false, true, true, true}; !slices.Equal(got, want) {
		t.Fatalf("in the window: fired %v, want %v", got, want)
	}
	if _, ok := p.decide(HeadObject, target{}); ok {
		t.Fatal("fired on another operation")
	}
	time.Sleep(250 * time.Millisecond)
	for range 3 {
		if _, ok := p.decide(UploadPart, target{}); ok {
			t.Fatal("fired after the window ended")
		}
	}
}

// TestRefuse: a Refuse takes the proxy away, so connections are refused, and it listens again
// at the same address after the fault's Hold.
func TestRefuse(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer up.Close()
	p, err := Start(Config{Upstream: up.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	p.SetRules(Rule{Op: OpAny, Nth: 2, Fault: Fault{Kind: Refuse, Hold: 500 * time.Millisecond}})
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() error {
		resp, err := client.Get(p.URL() + "/b/k")
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := get(); err != nil {
		t.Fatalf("before the refusal: %v", err)
	}
	if err := get(); err == nil {
		t.Fatal("the refusing request was answered")
	}
	start := time.Now()
	if err := get(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("while away: %v, want connection refused", err)
	}
	var back error
	for time.Since(start) < 5*time.Second {
		if back = get(); back == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if back != nil {
		t.Fatalf("not back after the hold: %v", back)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("back after %v, before the 500ms hold", took)
	}
}
