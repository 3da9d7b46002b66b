package writer_test

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/writer"
)

// A store built with certificate verification off is warned about once per Uploader, on its
// first write, through the write's logger and naming the endpoint; a verifying store is not.
// No server is needed: the writes fail to connect, after the warning.
func TestInsecureStoreWarnsOnce(t *testing.T) {
	const ep = "https://127.0.0.1:1"
	for _, insecure := range []bool{true, false} {
		aws, err := awss3.New(awss3.Config{Endpoint: ep, Region: "us-east-1", AccessKey: "a", SecretKey: "s", PathStyle: true, InsecureSkipVerify: insecure})
		if err != nil {
			t.Fatal(err)
		}
		mio, err := miniogo.New(miniogo.Config{Endpoint: ep, Region: "us-east-1", AccessKey: "a", SecretKey: "s", PathStyle: true, InsecureSkipVerify: insecure})
		if err != nil {
			t.Fatal(err)
		}
		// Behind a user's wrapper, the adapter's InsecureSkipVerify and Endpoint are found through
		// Unwrap.
		for name, st := range map[string]store.Store{"aws": aws, "minio": mio, "aws wrapped": unwrapping{aws}, "minio wrapped": unwrapping{mio}} {
			core, logs := observer.New(zap.WarnLevel)
			u, err := writer.NewUploader(st)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // nothing is sent; the warning comes first
			for range 3 {
				_, _ = u.Upload(ctx, "b", "k", bytes.NewReader([]byte("x")), func(o *writer.Options) { o.Logger = zap.New(core) })
			}
			warned := logs.FilterMessageSnippet("verification is off")
			want := 0
			if insecure {
				want = 1
			}
			if warned.Len() != want {
				t.Errorf("%s, insecure %v: %d warnings over 3 writes, want %d", name, insecure, warned.Len(), want)
			}
			if want == 1 && warned.All()[0].ContextMap()["endpoint"] == nil {
				t.Errorf("%s: the warning does not name the endpoint: %v", name, warned.All()[0].ContextMap())
			}
		}
	}
}
