// Package faultproxy is an HTTP proxy for integration tests that sits between an S3 adapter and a
// real S3 server and injects faults on real TCP sockets, where the store-seam fakes
// (storetest/faulty) cannot reach: what the SDK's transport, the kernel and the server do when a
// connection breaks at a given byte.
//
// Point an adapter's endpoint at Proxy.URL (path-style addressing), choose faults with SetRules,
// and check the outcome on the upstream server directly. Each Kind simulates a production
// failure:
//
//   - ResetAfterBytes: a load balancer or server that drops the connection mid-upload (RST after
//     k body bytes). Nothing reaches the store.
//   - DropResponse: the store committed the write but the answer was lost (idle timeout on a
//     middlebox, a crash after commit). The caller sees an error for a write that landed.
//   - Hold: a server that takes the request and answers late, or never (Hold 0): the hung
//     server that only a stall detector or a deadline ends.
//   - StopReading: a server that stops taking request-body bytes halfway (full buffers, a wedged
//     backend): the client's writes block on a live connection.
//   - CutResponse: a response that stops halfway (connection closed with Content-Length unmet).
//   - Status: throttling and server errors (503 SlowDown, 500 InternalError, 429) with an S3 XML
//     body and an optional Retry-After.
//   - AnswerEarly: the same answer sent before the request body is read (a server refusing on
//     the headers, or shedding load): the client's transport is still sending the body when
//     the call returns.
//   - StripSSE: a gateway that drops the server-side encryption headers (x-amz-server-side-
//     encryption*) and forwards the rest: the store stores plaintext and answers 200.
//   - IgnorePrefix: a store that ignores the prefix of ListMultipartUploads and lists every
//     incomplete upload of the bucket, so a caller that trusts the listing acts outside its prefix.
//   - OpaqueETag: a store whose ETags are not MD5s of the data (AWS with SSE-KMS or SSE-C,
//     stores that make their own): the answer's ETag header is replaced by other hex digits.
//   - Refuse: a server that goes away and comes back (a restart, a rolling upgrade): the proxy
//     stops listening and drops every connection, so new connections are refused, then listens
//     again at the same address.
//   - A Rule's Window turns any fault into an outage: every matching request for that long gets
//     it (resets, 502 or 503 from a balancer with no backend).
//   - StoreTruncated, StoreFlipped: silent corruption. The store keeps bytes other than the ones
//     sent and still answers 200 with an ETag; only an end-to-end check (read back, checksum
//     compare) notices.
//
// The Store kinds rewrite the body, so the request's own integrity checks would make the server
// refuse it: the payload hash in the SigV4 signature (both adapters sign the body's SHA-256 when
// no checksum covers it), Content-MD5 and the x-amz-checksum-* headers. The proxy therefore strips those
// headers and signs the altered request again with the SDK's v4 signer and UNSIGNED-PAYLOAD,
// which needs the server's credentials (Config). Every other request is forwarded byte for byte
// with its original signature and Host header. An aws-chunked body is not altered: the proxy
// answers 501 FaultProxyUnsupported (the adapters never send one).
// On parts of an upload created with a checksum algorithm, set Fault.Rechecksum: the server
// refuses such a part without its checksum, so the altered body would never be stored.
//
// net/http's Transport sends a GET or HEAD again by itself when a reused connection closes
// before any answer byte: DropResponse (an orderly close) on those operations is then invisible
// to the caller unless the rule fires on the retry too (Stats counts both requests).
// ResetAfterBytes (a reset) is not retried that way.
//
// Only HTTP/1.1 over plain TCP and path-style URLs (/bucket/key) are supported.
//
// Test support, outside safeput's compatibility promise (see package storetest).
package faultproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Config says where to forward and how to re-sign altered requests.
type Config struct {
	Upstream                     string // base URL of the S3 server, e.g. http://127.0.0.1:PORT
	AccessKey, SecretKey, Region string // to re-sign altered requests; Region "" is us-east-1
	Seed                         int64  // seeds the RNG of probability rules; print it in tests
	Logf                         func(format string, args ...any)
	// TLSCert, when set, makes the proxy serve TLS with it (URL is then https), so faults hit
	// the client's TLS connections.
	TLSCert *tls.Certificate
	// UpstreamCA is the PEM CA an https Upstream's certificate is checked against.
	UpstreamCA []byte
}

// Kind is a fault's kind; see the package doc for what each simulates.
type Kind string

// The fault kinds. Field use is documented on Fault.
const (
	// ResetAfterBytes reads Fault.Bytes request-body bytes, then closes the client connection
	// with RST (SO_LINGER 0). Nothing is forwarded.
	ResetAfterBytes Kind = "ResetAfterBytes"
	// DropResponse forwards the whole request (the store commits), then closes the client
	// connection without answering.
	DropResponse Kind = "DropResponse"
	// Hold takes the whole request, holds it for Fault.Hold, then forwards it. Hold 0 never
	// answers: the request ends when the client gives up or the proxy closes.
	Hold Kind = "Hold"
	// StopReading reads Fault.Bytes of the body (0: half), then stops reading and keeps the
	// connection open until the proxy closes.
	StopReading Kind = "StopReading"
	// CutResponse forwards, then sends the upstream status, headers (Content-Length kept) and
	// half the body before closing; with no body, half the header block.
	CutResponse Kind = "CutResponse"
	// Status answers Fault.Status with an S3 XML error body, without forwarding.
	Status Kind = "Status"
	// AnswerEarly answers as Status does but without reading the request body first (net/http's
	// server then reads at most 256 KiB of it and closes the connection after the answer).
	AnswerEarly Kind = "AnswerEarly"
	// StoreTruncated forwards half the body (at least one byte removed), re-signed, and passes
	// the store's answer back unchanged.
	StoreTruncated Kind = "StoreTruncated"
	// StoreFlipped forwards the body with its middle byte inverted, re-signed, and passes the
	// store's answer back unchanged.
	StoreFlipped Kind = "StoreFlipped"
	// StripSSE forwards the request without its x-amz-server-side-encryption* headers (SSE-S3,
	// SSE-KMS and SSE-C alike), re-signed, the body unchanged, and passes the answer back.
	StripSSE Kind = "StripSSE"
	// IgnorePrefix forwards a ListMultipartUploads without its prefix query parameter, re-signed,
	// and passes the answer (every incomplete upload of the bucket) back. On other operations it
	// forwards the request unchanged.
	IgnorePrefix Kind = "IgnorePrefix"
	// Refuse resets the request's connection, then takes the server away: the listener closes and
	// every client connection with it, so connections are refused, as while a server restarts;
	// after Fault.Hold (0: until Close) the proxy listens again at the same address.
	Refuse Kind = "Refuse"
	// OpaqueETag forwards the request unchanged and relays the answer with its ETag header
	// replaced by an opaque one of the same shape: 32 other hex digits, derived from the store's
	// (so the same object gets the same ETag in every answer), a "-N" suffix kept. ETags in
	// XML bodies (Complete, ListParts) are left as they are.
	OpaqueETag Kind = "OpaqueETag"
)

// Fault is what happens to a request a rule fires on.
type Fault struct {
	Kind       Kind
	Bytes      int64         // ResetAfterBytes: body bytes read before the RST; StopReading: before stopping (0 = half)
	Hold       time.Duration // Hold: how long; 0 = forever. Refuse: how long the server is away; 0 = until Close
	Status     int           // Status, AnswerEarly: HTTP status; 0 = 503
	Code       string        // Status, AnswerEarly: S3 error code in the body, e.g. SlowDown; "" = no <Code>
	RetryAfter string        // Status, AnswerEarly: Retry-After header value; "" = none
	// Rechecksum (StoreTruncated, StoreFlipped) sends Content-MD5 and x-amz-checksum-<alg>
	// recomputed over the altered body instead of dropping them. Needed on parts of uploads
	// created with a checksum algorithm: Versity S3 Gateway refuses a COMPOSITE part without its
	// checksum (400 InvalidRequest), so a dropped header is caught before anything is stored.
	Rechecksum bool
}

// Rule selects requests and the fault to inject. Among the rules of SetRules the first that
// fires wins; every matching rule counts the request for its Nth.
type Rule struct {
	Op         Op      // OpAny matches every operation
	PartNumber int32   // 0 = any
	Nth        int     // fire on the nth matching request only (1-based); 0 = every one
	Times      int     // fire at most this many times; 0 = unlimited
	Prob       float64 // 0 = always; else fire with this probability (seeded RNG)
	// Header, when set, matches only requests carrying that header (any value, name in any
	// case): "x-amz-checksum-mode" selects a HEAD asking for checksums, "If-None-Match" a
	// conditional write, so a store refusing only that header can be played.
	Header string
	// Window, when set, makes the rule an outage: from the request it first fires on (chosen by
	// Nth, Times and Prob), it fires on every matching request for Window, then never again.
	Window time.Duration
	Fault  Fault
}

// Stats counts requests per operation and injected faults per kind.
type Stats struct {
	Requests map[Op]int
	Injected map[Kind]int
}

// Injection records one injected fault.
type Injection struct {
	Op         Op
	Kind       Kind
	Bucket     string
	Key        string
	PartNumber int32
	UploadID   string
	Time       time.Time
}

// closeBound is how long Close waits for in-flight requests after cutting their connections.
const closeBound = 10 * time.Second

// Proxy is a running fault proxy. Its methods are safe for concurrent use.
type Proxy struct {
	cfg       Config
	upstream  *url.URL
	addr      string // the listening address, kept across a Refuse
	transport *http.Transport
	signer    *v4.Signer

	// ctx is every request's base context; Close cancels it to release held requests.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	// srv serves ln until Close, or until a Refuse takes it away (nil while away); serveDone
	// closes when its Serve returns; back restarts it after a Refuse.
	srv       *http.Server
	serveDone chan struct{}
	back      *time.Timer

	inFlight sync.WaitGroup // handlers; Add only under mu while !closed
	rules    []ruleState
	rng      *rand.Rand
	stats    Stats
	sequence []Op // every request's operation, in arrival order (Sequence)
	injected []Injection
	requests int                   // numbers request ids in Status answers
	hijacked map[net.Conn]struct{} // client connections the server no longer tracks
	// everyAttempt and attempts: the ListEveryAttempt mode (attempts.go).
	everyAttempt bool
	attempts     map[partKey][]attempt
}

type ruleState struct {
	Rule
	matched, fired int
	until          time.Time // the end of the Window, once it opened
}

// Start listens on 127.0.0.1:0 and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	u, err := url.Parse(cfg.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: upstream %q: want http(s)://host:port", cfg.Upstream)
	}
	var upstreamTLS *tls.Config
	if len(cfg.UpstreamCA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.UpstreamCA) {
			return nil, errors.New("faultproxy: UpstreamCA holds no PEM certificate")
		}
		upstreamTLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		cfg:      cfg,
		upstream: u,
		transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			DisableCompression:    true, // bodies pass through as the store sent them
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       30 * time.Second,
			ExpectContinueTimeout: time.Second,
			TLSClientConfig:       upstreamTLS,
		},
		signer:   v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
		ctx:      ctx,
		cancel:   cancel,
		rng:      rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5afe_f00d)), //nolint:gosec // reproducible test faults, not security
		stats:    Stats{Requests: map[Op]int{}, Injected: map[Kind]int{}},
		hijacked: map[net.Conn]struct{}{},
	}
	ln, err := p.listen("127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.mu.Lock()
	p.serve(ln)
	p.mu.Unlock()
	return p, nil
}

// listen listens at addr, over TLS when the proxy serves it.
func (p *Proxy) listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	if p.cfg.TLSCert != nil {
		// HTTP/1.1 only: the faults hijack connections, which HTTP/2 streams cannot be.
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*p.cfg.TLSCert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	}
	return ln, nil
}

// serve serves ln with a server of its own (one that a Refuse closed cannot serve again). p.mu
// is held.
func (p *Proxy) serve(ln net.Listener) {
	srv := &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		BaseContext:       func(net.Listener) context.Context { return p.ctx },
		ReadHeaderTimeout: 30 * time.Second,
		// Its complaints about the connections we break on purpose are noise, and t.Logf must
		// not be called once a test has ended.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	done := make(chan struct{})
	p.srv, p.serveDone = srv, done
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
}

// goAway takes the server away for d (0: until Close): the listener and every client connection
// close, so connections are refused until it listens again at the same address.
func (p *Proxy) goAway(d time.Duration) {
	p.mu.Lock()
	srv, done := p.srv, p.serveDone
	if p.closed || srv == nil {
		p.mu.Unlock()
		return // closing, or away already
	}
	p.srv = nil
	p.mu.Unlock()
	_ = srv.Close() // the listener first, and every connection it tracks
	<-done
	p.mu.Lock()
	for conn := range p.hijacked {
		_ = conn.Close()
		delete(p.hijacked, conn)
	}
	p.mu.Unlock()
	p.logf("away (connections refused) for %v", d)
	if d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.back = time.AfterFunc(d, p.comeBack)
	}
}

// comeBack listens again at the proxy's address after a Refuse. The port was ours a moment ago;
// should another socket hold it still, it tries again for a while.
func (p *Proxy) comeBack() {
	for range 50 {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		ln, err := p.listen(p.addr)
		if err == nil {
			p.serve(ln)
			p.mu.Unlock()
			p.logf("back at %s", p.addr)
			return
		}
		p.mu.Unlock()
		p.logf("listening again: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
}

// URL is the proxy's base URL, to use as the adapter's endpoint.
func (p *Proxy) URL() string {
	if p.cfg.TLSCert != nil {
		return "https://" + p.addr
	}
	return "http://" + p.addr
}

// Close stops the proxy: held and stalled requests are released, every client connection is
// closed, and in-flight requests are waited for (at most closeBound).
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	srv, done := p.srv, p.serveDone
	if p.back != nil {
		p.back.Stop()
	}
	p.mu.Unlock()

	p.cancel()
	var err error
	if srv != nil { // nil while a Refuse keeps it away
		err = srv.Close() // listener and every connection not hijacked
		<-done
	}
	p.mu.Lock()
	for conn := range p.hijacked {
		_ = conn.Close()
	}
	p.mu.Unlock()
	drained := make(chan struct{})
	go func() {
		p.inFlight.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(closeBound):
		err = errors.Join(err, fmt.Errorf("faultproxy: requests still running %v after Close", closeBound))
	}
	p.transport.CloseIdleConnections()
	return err
}

// SetRules replaces the rules (and their counters).
func (p *Proxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = make([]ruleState, len(rules))
	for i, r := range rules {
		p.rules[i] = ruleState{Rule: r}
	}
}

// Stats returns a copy of the counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{Requests: make(map[Op]int, len(p.stats.Requests)), Injected: make(map[Kind]int, len(p.stats.Injected))}
	for k, v := range p.stats.Requests {
		s.Requests[k] = v
	}
	for k, v := range p.stats.Injected {
		s.Injected[k] = v
	}
	return s
}

// Sequence returns the operation of every request the proxy received, in the order they arrived
// (a part that several connections send at once is ordered by arrival, as on the wire).
func (p *Proxy) Sequence() []Op {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Op(nil), p.sequence...)
}

// Injected returns a copy of the log of injected faults, oldest first.
func (p *Proxy) Injected() []Injection {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Injection(nil), p.injected...)
}

// decide counts the request and returns the fault of the first rule that fires, if any.
func (p *Proxy) decide(op Op, t target) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests[op]++
	p.sequence = append(p.sequence, op)
	var (
		fault Fault
		fired bool
	)
	for i := range p.rules {
		r := &p.rules[i]
		if (r.Op != OpAny && r.Op != op) || (r.PartNumber != 0 && r.PartNumber != t.PartNumber) ||
			(r.Header != "" && len(t.Header.Values(r.Header)) == 0) {
			continue
		}
		r.matched++
		if fired {
			continue
		}
		if !r.until.IsZero() { // a Window that opened: every request until it ends, then none
			if time.Now().Before(r.until) {
				r.fired++
				fault, fired = r.Fault, true
			}
			continue
		}
		if (r.Nth != 0 && r.matched != r.Nth) || (r.Times != 0 && r.fired >= r.Times) {
			continue
		}
		if r.Prob > 0 && p.rng.Float64() >= r.Prob {
			continue
		}
		r.fired++
		if r.Window > 0 {
			r.until = time.Now().Add(r.Window)
		}
		fault, fired = r.Fault, true
	}
	if fired {
		p.stats.Injected[fault.Kind]++
		p.injected = append(p.injected, Injection{
			Op: op, Kind: fault.Kind, Bucket: t.Bucket, Key: t.Key,
			PartNumber: t.PartNumber, UploadID: t.UploadID, Time: time.Now(),
		})
	}
	return fault, fired
}

func (p *Proxy) logf(format string, args ...any) {
	if p.cfg.Logf != nil {
		p.cfg.Logf("faultproxy: "+format, args...)
	}
}
