package frontend

import (
	"strings"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// MaxConcurrency is the writer's own limit: the writer takes it and refuses one more.
func TestMaxConcurrencyIsTheWriters(t *testing.T) {
	st := memstore.New()
	if _, err := writer.NewUploader(st, func(o *writer.Options) { o.Concurrency = MaxConcurrency }); err != nil {
		t.Errorf("the writer refuses concurrency %d: %v", MaxConcurrency, err)
	}
	if _, err := writer.NewUploader(st, func(o *writer.Options) { o.Concurrency = MaxConcurrency + 1 }); err == nil {
		t.Errorf("the writer takes concurrency %d, above the front ends' limit", MaxConcurrency+1)
	}
}

// SSECOverHTTP refuses a key for an http:// endpoint naming the setting, warns when allowed,
// and says nothing for https, no key, or a store that names no endpoint; both adapters.
func TestSSECOverHTTP(t *testing.T) {
	build := func(endpoint string) map[string]store.Store {
		aws, err := awss3.New(awss3.Config{Endpoint: endpoint})
		if err != nil {
			t.Fatal(err)
		}
		mio, err := miniogo.New(miniogo.Config{Endpoint: endpoint})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]store.Store{"aws": aws, "minio": mio}
	}
	for name, st := range build("http://127.0.0.1:9000") {
		if _, err := SSECOverHTTP(st, true, false, "--allow"); err == nil || !strings.Contains(err.Error(), "SSE-C over plain HTTP refused") ||
			!strings.Contains(err.Error(), "set --allow") || !strings.Contains(err.Error(), "http://127.0.0.1:9000") {
			t.Errorf("%s: refused with %v; want the rule, the endpoint and the setting", name, err)
		}
		if w, err := SSECOverHTTP(st, true, true, "--allow"); err != nil || !strings.Contains(w, "(--allow)") {
			t.Errorf("%s, allowed: warning %q, err %v", name, w, err)
		}
		if w, err := SSECOverHTTP(st, false, false, "--allow"); err != nil || w != "" {
			t.Errorf("%s, no key: warning %q, err %v", name, w, err)
		}
	}
	for name, st := range build("https://127.0.0.1:9000") {
		if w, err := SSECOverHTTP(st, true, false, "--allow"); err != nil || w != "" {
			t.Errorf("%s, https: warning %q, err %v", name, w, err)
		}
	}
	if w, err := SSECOverHTTP(memstore.New(), true, false, "--allow"); err != nil || w != "" {
		t.Errorf("a store with no endpoint: warning %q, err %v", w, err)
	}
}
