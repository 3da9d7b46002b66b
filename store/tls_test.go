package store_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/testcerts"
)

// tlsServer serves every request 404 NoSuchKey over TLS with leaf, counting the requests that
// got through the handshake.
// notSent reads the mark the adapters' transports put on a request that never left.
func notSent(err error) bool {
	var ns interface{ NotSent() bool }
	return errors.As(err, &ns) && ns.NotSent()
}

func tlsServer(t *testing.T, leaf *testcerts.Leaf) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `<Error><Code>NoSuchKey</Code><Message>no such key</Message></Error>`)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.TLS}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &n
}

func tlsStores(t *testing.T, endpoint string, ca []byte) map[string]store.Store {
	t.Helper()
	aws, err := awss3.New(awss3.Config{Endpoint: endpoint, AccessKey: "ak", SecretKey: "sk", PathStyle: true, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	mc, err := miniogo.New(miniogo.Config{Endpoint: endpoint, AccessKey: "ak", SecretKey: "sk", PathStyle: true, CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]store.Store{"aws": aws, "minio": mc}
}

func headErr(st store.Store) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := st.HeadObject(ctx, &store.HeadObjectInput{Bucket: "bucket", Key: "k"})
	return err
}

// A CA given as CABundle is trusted for that store: the request reaches the server. A
// certificate that does not verify against it (another CA's, another host's, an expired one) is
// a Permanent error that names the host and the reason first, and is marked as never sent.
func TestCABundle(t *testing.T) {
	set, err := testcerts.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("trusted", func(t *testing.T) {
		srv, n := tlsServer(t, set.Good)
		for name, st := range tlsStores(t, srv.URL, set.CA.PEM) {
			err := headErr(st)
			var re *store.ResponseError
			if !errors.As(err, &re) || re.StatusCode != 404 {
				t.Errorf("%s: HEAD through the trusted CA: %v, want the server's 404", name, err)
			}
			if notSent(err) {
				t.Errorf("%s: an answered request marked as never sent", name)
			}
		}
		if n.Load() != 2 {
			t.Errorf("server saw %d requests, want 2", n.Load())
		}
		// Without the bundle the system roots alone do not know the CA.
		for name, st := range tlsStores(t, srv.URL, nil) {
			if e := sperrors.Classify(headErr(st)); e.Kind != sperrors.Permanent || !strings.Contains(e.Message, "unknown authority") {
				t.Errorf("%s: without the CA bundle: %v, want Permanent unknown authority", name, e)
			}
		}
	})
	for _, c := range []struct {
		name, reason string
		leaf         *testcerts.Leaf
	}{
		{"other CA", "signed by an unknown authority", set.OtherCA},
		{"wrong host", "not for this host name", set.WrongHost},
		{"expired", "expired or not yet valid", set.Expired},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, n := tlsServer(t, c.leaf)
			host := strings.TrimPrefix(srv.URL, "https://")
			for name, st := range tlsStores(t, srv.URL, set.CA.PEM) {
				err := headErr(st)
				e := sperrors.Classify(err)
				want := "TLS certificate of " + host + " does not verify: " + c.reason
				if e.Kind != sperrors.Permanent || !strings.HasPrefix(e.Message, want) {
					t.Errorf("%s: %v (kind %s, message %q), want Permanent with message %q...", name, err, e.Kind, e.Message, want)
				}
				if msg := e.Error(); !strings.Contains(msg, "permanent: "+want) || strings.Index(msg, "tls: failed to verify") < strings.Index(msg, want) {
					t.Errorf("%s: the error does not lead with the certificate failure: %s", name, msg)
				}
				if !notSent(err) {
					t.Errorf("%s: a failed handshake not marked as never sent: %v", name, err)
				}
			}
			if n.Load() != 0 {
				t.Errorf("server saw %d requests through a certificate the client must refuse", n.Load())
			}
		})
	}
}

// A refused connection is marked as never sent; so is nothing that got an answer.
func TestNotSentRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // the port is now closed
	for name, st := range tlsStores(t, "http://"+addr, nil) {
		err := headErr(st)
		if !notSent(err) || sperrors.Classify(err).Kind != sperrors.Transient {
			t.Errorf("%s: refused: %v (not sent %v), want a Transient error marked never sent", name, err, notSent(err))
		}
	}
}

// A CA bundle that holds no certificate, or one given with InsecureSkipVerify or the caller's
// own HTTP client, is refused by New, never ignored.
func TestCABundleRefused(t *testing.T) {
	junk := []byte("not a certificate")
	for name, mk := range map[string]func(ca []byte, insecure, own bool) error{
		"aws": func(ca []byte, insecure, own bool) error {
			cfg := awss3.Config{Endpoint: "https://127.0.0.1:1", CABundle: ca, InsecureSkipVerify: insecure}
			if own {
				cfg.HTTPClient = &http.Client{}
			}
			_, err := awss3.New(cfg)
			return err
		},
		"minio": func(ca []byte, insecure, own bool) error {
			cfg := miniogo.Config{Endpoint: "https://127.0.0.1:1", CABundle: ca, InsecureSkipVerify: insecure}
			if own {
				cfg.Transport = &http.Transport{}
			}
			_, err := miniogo.New(cfg)
			return err
		},
	} {
		set, err := testcerts.NewSet()
		if err != nil {
			t.Fatal(err)
		}
		if err := mk(junk, false, false); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
			t.Errorf("%s: a bundle without a certificate: %v", name, err)
		}
		if err := mk(set.CA.PEM, true, false); err == nil || !strings.Contains(err.Error(), "InsecureSkipVerify") {
			t.Errorf("%s: a CA bundle with InsecureSkipVerify: %v", name, err)
		}
		if err := mk(set.CA.PEM, false, true); err == nil || !strings.Contains(err.Error(), "CABundle") {
			t.Errorf("%s: a CA bundle with the caller's own client: %v", name, err)
		}
		if err := mk(set.CA.PEM, false, false); err != nil {
			t.Errorf("%s: a good CA bundle: %v", name, err)
		}
	}
}
