package s3test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/storetest/testcerts"
)

// The TLS tests reach each server over TLS with the test run's throw-away CA: the server's own TLS
// endpoint when the test command started one (SAFEPUT_S3_<NAME>_TLS_ENDPOINT, its certificate
// from SAFEPUT_S3_TLS_DIR), else a TLS-terminating relay in this process (TLSFront). The
// certificates a client must refuse (another CA's, another host's, an expired one) are always
// presented by a relay, signed by the same CA.

var (
	certsOnce sync.Once
	certs     *testcerts.Set
	certsErr  error
)

// Certs returns the run's certificates, made on first use: of the test command's CA
// (SAFEPUT_S3_TLS_DIR) when there is one, else of a new CA.
func Certs(t testing.TB) *testcerts.Set {
	t.Helper()
	certsOnce.Do(func() {
		dir := os.Getenv("SAFEPUT_S3_TLS_DIR")
		if dir == "" {
			certs, certsErr = testcerts.NewSet()
			return
		}
		var ca *testcerts.CA
		cert, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
		if err == nil {
			var key []byte
			if key, err = os.ReadFile(filepath.Join(dir, "ca.key")); err == nil {
				ca, err = testcerts.LoadCA(cert, key)
			}
		}
		if err != nil {
			certsErr = fmt.Errorf("SAFEPUT_S3_TLS_DIR %s: %w", dir, err)
			return
		}
		certs, certsErr = testcerts.NewSetOf(ca)
	})
	if certsErr != nil {
		t.Fatalf("test certificates: %v", certsErr)
	}
	return certs
}

// TLSServer returns srv reached over TLS with the run's good certificate: its own TLS endpoint
// when the test command started one, else TLSFront(t, srv, Certs(t).Good). Its CABundle is the
// run's CA. Under CI=true a server without its own TLS endpoint fails the test.
func TLSServer(t testing.TB, srv Server) Server {
	t.Helper()
	ep := os.Getenv("SAFEPUT_S3_" + nonAlnum.ReplaceAllString(strings.ToUpper(srv.Name), "_") + "_TLS_ENDPOINT")
	if ep == "" {
		if os.Getenv("SAFEPUT_S3_TLS_DIR") != "" && os.Getenv("CI") != "" && os.Getenv("CI") != "false" {
			t.Fatalf("%s: the test command started no TLS endpoint for it", srv.Name)
		}
		return TLSFront(t, srv, Certs(t).Good)
	}
	out := srv
	out.Endpoint, out.CABundle, out.plain = ep, Certs(t).CA.PEM, srv.Endpoint
	return out
}

// TLSFront returns srv reached over TLS: a relay on 127.0.0.1 that presents leaf and passes the
// bytes on to srv's plain endpoint (the one behind it, when srv is a front), closed when the
// test ends. The returned Server's CABundle is
// the run's CA, which signs every leaf but Certs().OtherCA.
func TLSFront(t testing.TB, srv Server, leaf *testcerts.Leaf) Server {
	t.Helper()
	plain := srv.Endpoint
	if srv.plain != "" { // srv is itself a front: front its server
		plain = srv.plain
	}
	u, err := url.Parse(plain)
	if err != nil || u.Scheme != "http" {
		t.Fatalf("TLS front for %s: endpoint %q: want http://host:port", srv.Name, srv.Endpoint)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{leaf.TLS},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		t.Fatalf("TLS front: %v", err)
	}
	r := &relay{ln: ln, upstream: u.Host, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.serve()
	t.Cleanup(r.close)
	out := srv
	out.Endpoint = "https://" + ln.Addr().String()
	out.CABundle = Certs(t).CA.PEM
	out.plain = plain
	return out
}

type relay struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup
	mu       sync.Mutex
	closed   bool
	conns    map[net.Conn]struct{}
}

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go r.pipe(c)
	}
}

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) pipe(client net.Conn) {
	defer r.wg.Done()
	if !r.track(client) {
		return
	}
	defer func() { _ = client.Close() }()
	// A client that refuses the certificate ends the handshake; nothing is dialled for it.
	tc, ok := client.(*tls.Conn)
	if !ok || tc.SetDeadline(time.Now().Add(10*time.Second)) != nil || tc.Handshake() != nil {
		return
	}
	_ = tc.SetDeadline(time.Time{})
	up, err := net.DialTimeout("tcp", r.upstream, 5*time.Second)
	if err != nil {
		return
	}
	if !r.track(up) {
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, up); done <- struct{}{} }()
	<-done // either side ended: end both
	_ = up.Close()
	_ = client.Close()
	<-done
}

func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	_ = r.ln.Close()
	r.wg.Wait()
}

// httpClient is the raw client's HTTP client: the default one, or one trusting s.CABundle.
func (s Server) httpClient() *http.Client {
	if len(s.CABundle) == 0 {
		return nil
	}
	pool := x509.NewCertPool()
	// A bundle with no certificate leaves the pool empty: every request then fails verification,
	// which names the problem.
	pool.AppendCertsFromPEM(s.CABundle)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}
}
