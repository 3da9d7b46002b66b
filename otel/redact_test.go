package otel_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/echostore"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// TestSpansCarryNoSecret: through both adapters, a store that echoes every request header into
// its error message (echostore) fails a write with an SSE-C key and temporary credentials.
// The write's and the requests' spans record the failure (status, exception events), and none
// of their text holds the secret key, the session token, the SSE-C key or a request signature.
func TestSpansCarryNoSecret(t *testing.T) {
	sseKey := s3test.RandomBytes(store.CustomerKeySize)
	for _, backend := range []string{"aws", "minio"} {
		t.Run(backend, func(t *testing.T) {
			secretKey := "wJalrXUtnFEMI/K7MDENG/otel-" + backend + "-Zq9SECRETkey"
			token := "IQoJb3JpZ2luX2VjEJr//////////otel-" + backend + "-Zq9TOKENvalue+/="
			srv := echostore.Start(t, secretKey)
			var st store.Store
			var err error
			if backend == "aws" {
				st, err = awss3.New(awss3.Config{Endpoint: srv.URL, PathStyle: true, CABundle: srv.CABundle,
					AccessKey: "AKIAIOSFODNN7EXAMPLE", SecretKey: secretKey, SessionToken: token})
			} else {
				st, err = miniogo.New(miniogo.Config{Endpoint: srv.URL, PathStyle: true, CABundle: srv.CABundle,
					AccessKey: "AKIAIOSFODNN7EXAMPLE", SecretKey: secretKey, SessionToken: token})
			}
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			ctx, root := h.root(context.Background())
			_, err = writer.Upload(ctx, st, "bucket", "k", bytes.NewReader(s3test.RandomBytes(1000)), func(o *writer.Options) {
				o.Instrumentation = h.inst
				o.Encryption = store.Encryption{Type: store.SSEC, CustomerKey: sseKey}
				o.Retry = retry.New(func(o *retry.Options) { o.InitialInterval, o.MaxInterval = time.Millisecond, time.Millisecond })
			})
			root.End()
			if err == nil {
				t.Fatal("a write to a store that refuses everything succeeded")
			}
			var text strings.Builder
			failed := 0
			for _, s := range h.spans.Ended() {
				if s.Status().Code == codes.Error {
					failed++
				}
				fmt.Fprintf(&text, "%s %s\n", s.Name(), s.Status().Description)
				for _, kv := range s.Attributes() {
					fmt.Fprintf(&text, "  %s=%s\n", kv.Key, kv.Value.String())
				}
				for _, e := range s.Events() {
					fmt.Fprintf(&text, "  event %s\n", e.Name)
					for _, kv := range e.Attributes {
						fmt.Fprintf(&text, "    %s=%s\n", kv.Key, kv.Value.String())
					}
				}
			}
			all := text.String()
			for _, secret := range append([]string{secretKey, token, base64.StdEncoding.EncodeToString(sseKey), string(sseKey)}, srv.Signatures()...) {
				if strings.Contains(all, secret[:16]) {
					t.Errorf("the spans hold %q (of %q):\n%s", secret[:16], secret, all)
				}
			}
			if failed < 2 || !strings.Contains(all, "exception.message=") || !strings.Contains(all, "Also: REDACTED") {
				t.Errorf("the spans do not record the store's message (%d failed spans):\n%s", failed, all)
			}
		})
	}
}
