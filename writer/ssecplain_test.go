package writer_test

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// plainStore is an http:// endpoint that counts the requests it gets and those that carry an
// SSE-C key, and refuses every one (403), so a write that reaches it fails at once.
type plainStore struct {
	srv  *httptest.Server
	mu   sync.Mutex
	all  int
	keys int
}

func newPlainStore(t *testing.T) *plainStore {
	p := &plainStore{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.all++
		if r.Header.Get("X-Amz-Server-Side-Encryption-Customer-Key") != "" {
			p.keys++
		}
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>`))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *plainStore) counts() (all, keys int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.all, p.keys
}

// adapters returns both adapters for endpoint.
func adapters(t *testing.T, endpoint string) map[string]store.Store {
	t.Helper()
	aws, err := awss3.New(awss3.Config{Endpoint: endpoint, Region: "us-east-1", AccessKey: "a", SecretKey: "s", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	mio, err := miniogo.New(miniogo.Config{Endpoint: endpoint, Region: "us-east-1", AccessKey: "a", SecretKey: "s", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]store.Store{"aws": aws, "minio": mio, "aws wrapped": unwrapping{aws}, "minio wrapped": unwrapping{mio}}
}

// SSE-C to a plain http:// endpoint is refused before anything is sent, through both adapters
// (and behind a wrapper): NewUploader given the key, a write given it (single PUT or a declared
// multipart size, which creates its upload at once), and Recover given keys all fail Permanent
// naming the rule and the opt-in, and the server sees no request. With AllowSSECOverHTTP the key
// goes out, and the Uploader warns once.
func TestSSECOverPlainHTTPRefused(t *testing.T) {
	key := store.CustomerKey(bytes.Repeat([]byte{7}, store.CustomerKeySize))
	ssec := func(o *writer.Options) { o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: key} }
	refused := func(t *testing.T, what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error; want Permanent naming the rule and AllowSSECOverHTTP", what)
			return
		}
		if sperrors.KindOf(err) != sperrors.Permanent || !strings.Contains(err.Error(), "SSE-C over plain HTTP refused") ||
			!strings.Contains(err.Error(), "AllowSSECOverHTTP") {
			t.Errorf("%s: err %v; want Permanent naming the rule and AllowSSECOverHTTP", what, err)
		}
		if strings.Contains(err.Error(), key.Base64()) {
			t.Errorf("%s: the error carries the key", what)
		}
	}
	ctx := context.Background()
	srv := newPlainStore(t)
	for name, st := range adapters(t, srv.srv.URL) {
		t.Run(name, func(t *testing.T) {
			_, err := writer.NewUploader(st, ssec)
			refused(t, "NewUploader", err)
			u, err := writer.NewUploader(st)
			if err != nil {
				t.Fatal(err)
			}
			_, err = u.Upload(ctx, "bucket", "small", bytes.NewReader([]byte("data")), ssec)
			refused(t, "Upload", err)
			_, err = u.New(ctx, "bucket", "multi", ssec, func(o *writer.Options) { o.Size = 64 << 20 })
			refused(t, "New with a multipart size", err)
			_, err = writer.Upload(ctx, st, "bucket", "shorthand", bytes.NewReader([]byte("data")), ssec)
			refused(t, "writer.Upload", err)
			_, err = writer.Recover(ctx, st, t.TempDir(), writer.RecoverOptions{Endpoint: "e", SSECustomerKeys: [][]byte{key}})
			refused(t, "Recover", err)
			if all, _ := srv.counts(); all != 0 {
				t.Fatalf("%d requests reached the store; want none", all)
			}
			// Without a key nothing is refused.
			if _, err := writer.Recover(ctx, st, t.TempDir(), writer.RecoverOptions{Endpoint: "e"}); err != nil {
				t.Errorf("Recover without keys: %v", err)
			}
		})
	}
	for name, st := range adapters(t, srv.srv.URL) {
		t.Run(name+" allowed", func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			allow := func(o *writer.Options) { o.AllowSSECOverHTTP, o.Logger = true, zap.New(core) }
			u, err := writer.NewUploader(st, ssec, allow)
			if err != nil {
				t.Fatalf("NewUploader with AllowSSECOverHTTP: %v", err)
			}
			_, before := srv.counts()
			for range 2 {
				_, err = u.Upload(ctx, "bucket", "k", bytes.NewReader([]byte("data")))
				if err == nil || strings.Contains(err.Error(), "SSE-C over plain HTTP") {
					t.Fatalf("Upload with AllowSSECOverHTTP: %v; want the store's refusal", err)
				}
			}
			if _, after := srv.counts(); after <= before {
				t.Errorf("no request carried the key with AllowSSECOverHTTP (last error %v)", err)
			}
			if n := logs.FilterMessageSnippet("SSE-C over plain HTTP").Len(); n != 1 {
				t.Errorf("%d warnings over 2 writes, want 1", n)
			}
			if _, err := writer.Recover(ctx, st, t.TempDir(), writer.RecoverOptions{Endpoint: "e", SSECustomerKeys: [][]byte{key}, AllowSSECOverHTTP: true}); err != nil {
				t.Errorf("Recover with AllowSSECOverHTTP: %v", err)
			}
		})
	}
	// An https endpoint is not refused (the writes fail to connect, after the check).
	for name, st := range adapters(t, "https://127.0.0.1:1") {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := writer.Upload(cctx, st, "bucket", "k", bytes.NewReader([]byte("data")), ssec)
		if err != nil && strings.Contains(err.Error(), "SSE-C over plain HTTP") {
			t.Errorf("%s: https endpoint refused: %v", name, err)
		}
	}
}

// Concurrency is bounded (1 to 1024), and a concurrency × part size past 64 bits is
// refused with an error naming both, never as a non-positive memory budget.
func TestConcurrencyBounds(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	for _, n := range []int{math.MaxInt, 100000, 1025, 0, -1} {
		_, err := writer.New(ctx, mem, unitBucket, "k", func(o *writer.Options) { o.Concurrency = n })
		if sperrors.KindOf(err) != sperrors.Permanent || !strings.Contains(err.Error(), "concurrency must be from 1 to 1024") {
			t.Errorf("concurrency %d: %v; want Permanent naming the range", n, err)
		}
		if _, err := writer.NewUploader(mem, func(o *writer.Options) { o.Concurrency = n }); sperrors.KindOf(err) != sperrors.Permanent {
			t.Errorf("NewUploader, concurrency %d: %v; want Permanent", n, err)
		}
	}
	w, err := writer.New(ctx, mem, unitBucket, "k", func(o *writer.Options) { o.Concurrency = 1024 })
	if err != nil {
		t.Fatalf("concurrency 1024: %v", err)
	}
	_ = w.Abort(ctx)
	huge, err := multipart.Profile(multipart.DefaultProfile)
	if err != nil {
		t.Fatal(err)
	}
	huge.MaxPartSize, huge.MaxObjectSize = 1<<62, 1<<62
	_, err = writer.New(ctx, mem, unitBucket, "k", func(o *writer.Options) {
		o.Rules, o.PartSize, o.Concurrency = &huge, 1<<55, 1024
	})
	if sperrors.KindOf(err) != sperrors.Permanent || !strings.Contains(err.Error(), "does not fit in 64 bits") {
		t.Errorf("concurrency 1024 × 32 PiB parts: %v; want Permanent naming the overflow", err)
	}
}
