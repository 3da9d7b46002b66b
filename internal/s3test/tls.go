package s3test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/internal/testcerts"
)

// The TLS tests reach each server through a TLS-terminating relay in this process (TLSFront),
// presenting certificates made per test run by testcerts: a throw-away CA, a good certificate for
// 127.0.0.1, and the ones a client must refuse. The client side (the adapters' TLS stack, CA
// trust, failure classification) is what is under test; the servers' own TLS code is not.

var (
	certsOnce sync.Once
	certs     *testcerts.Set
	certsErr  error
)

// Certs returns the run's certificates, made on first use.
func Certs(t testing.TB) *testcerts.Set {
	t.Helper()
	certsOnce.Do(func() { certs, certsErr = testcerts.NewSet() })
	if certsErr != nil {
		t.Fatalf("test certificates: %v", certsErr)
	}
	return certs
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
