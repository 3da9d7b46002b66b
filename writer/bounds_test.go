package writer_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
)

// The TLS handshake is bounded at defaults: an endpoint that accepts the connection and never
// answers the ClientHello fails the request within the adapters' 10 s handshake timeout, as a
// Transient timeout, with no context deadline from the caller.
func TestTLSHandshakeIsBounded(t *testing.T) {
	t.Parallel() // beside the package's other tests that only wait: this one waits out the timeout
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, silent
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { // after the parallel subtests
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	endpoint := "https://" + ln.Addr().String()
	aws, err := awss3.New(awss3.Config{Endpoint: endpoint, Region: "us-east-1", AccessKey: "k", SecretKey: "s", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := miniogo.New(miniogo.Config{Endpoint: endpoint, Region: "us-east-1", AccessKey: "k", SecretKey: "s", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	const bound = 10*time.Second + 5*time.Second // the handshake timeout, and slack for a loaded machine
	for name, st := range map[string]store.Store{"aws": aws, "minio": mc} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := st.HeadObject(context.Background(), &store.HeadObjectInput{Bucket: "bucket", Key: "key"})
			took := time.Since(start)
			t.Logf("%s: silent TLS endpoint failed after %v: %v", name, took, err)
			if err == nil || took > bound {
				t.Fatalf("err %v after %v, want a failure within %v", err, took, bound)
			}
			if k := sperrors.Classify(err).Kind; k != sperrors.Transient || !sperrors.IsTimeout(err) {
				t.Errorf("classified %s (timeout %v), want a Transient timeout", k, sperrors.IsTimeout(err))
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Errorf("not a net.Error timeout: %v", err)
			}
		})
	}
}
