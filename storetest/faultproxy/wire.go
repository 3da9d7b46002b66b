package faultproxy

import (
	"bytes"
	"context"
	"crypto/md5"  //nolint:gosec // Content-MD5
	"crypto/sha1" //nolint:gosec // S3's SHA1 checksum
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/minio/crc64nvme"
)

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.hijackClose(w, false)
		return
	}
	p.inFlight.Add(1)
	p.mu.Unlock()
	defer p.inFlight.Done()

	op, t := Classify(r), parseTarget(r)
	fault, fired := p.decide(op, t)
	if !fired {
		p.mu.Lock()
		every := p.everyAttempt
		p.mu.Unlock()
		if every && op == ListParts {
			p.listEveryAttempt(w, r)
			return
		}
		p.forward(w, r)
		return
	}
	p.logf("%s on %s %s/%s part %d upload %q", fault.Kind, op, t.Bucket, t.Key, t.PartNumber, t.UploadID)
	switch fault.Kind {
	case ResetAfterBytes:
		_, _ = io.CopyN(io.Discard, r.Body, fault.Bytes)
		p.hijackClose(w, true)
	case DropResponse:
		p.dropResponse(w, r)
	case Hold:
		p.hold(w, r, fault.Hold)
	case StopReading:
		p.stopReading(w, r, fault.Bytes)
	case CutResponse:
		p.cutResponse(w, r)
	case Status:
		// A server reads the request before answering; not reading it would race the client's
		// write of the body against our answer (AnswerEarly does that on purpose).
		_, _ = io.Copy(io.Discard, r.Body)
		p.status(w, r, fault)
	case AnswerEarly:
		p.answerEarly(w, r, fault)
	case StoreTruncated, StoreFlipped:
		p.storeAltered(w, r, fault.Kind, fault.Rechecksum)
	case StripSSE:
		p.stripSSE(w, r)
	case IgnorePrefix:
		p.ignorePrefix(w, r)
	case OpaqueETag:
		p.opaqueETag(w, r)
	case Refuse:
		// The reset comes after the listener is gone: a client that retries at once on seeing
		// it must find the port closed, not a proxy still answering.
		conn := p.hijackReset(w)
		p.goAway(fault.Hold)
		if conn != nil {
			p.release(conn)
		}
	default:
		p.writeError(w, r, http.StatusInternalServerError, "FaultProxyUnknownKind", fmt.Sprintf("unknown fault kind %q", fault.Kind))
	}
}

// forward sends the request upstream unchanged and relays the answer.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	p.pass(w, r, r.Body, r.ContentLength, forwardHeader(r.Header), false)
}

// pass sends r upstream with the given body and header and relays the answer.
func (p *Proxy) pass(w http.ResponseWriter, r *http.Request, body io.Reader, length int64, h http.Header, resign bool) {
	resp, err := p.roundTrip(r, body, length, h, resign)
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	relay(w, resp)
}

func (p *Proxy) dropResponse(w http.ResponseWriter, r *http.Request) {
	resp, err := p.roundTrip(r, r.Body, r.ContentLength, forwardHeader(r.Header), false)
	if err != nil {
		p.logf("DropResponse: upstream failed, the request may not have landed: %v", err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	p.hijackClose(w, false)
}

// hold takes the whole body first, so the client sees a server that accepted the request and
// went silent (and so the request context ends when the client hangs up).
func (p *Proxy) hold(w http.ResponseWriter, r *http.Request, d time.Duration) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if !sleep(r.Context(), d) {
		p.hijackClose(w, false)
		return
	}
	p.pass(w, r, bytes.NewReader(body), int64(len(body)), forwardHeader(r.Header), false)
}

// sleep waits d (forever when d <= 0) and reports false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		<-ctx.Done()
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// stopReading parks the connection until Close: without reading, the proxy cannot see the
// client hang up, and a parked goroutine per injected fault is cheap in a test.
func (p *Proxy) stopReading(w http.ResponseWriter, r *http.Request, n int64) {
	if n <= 0 {
		n = max(r.ContentLength/2, 0)
	}
	_, _ = io.CopyN(io.Discard, r.Body, n)
	conn, err := p.hijack(w)
	if err != nil {
		return
	}
	<-p.ctx.Done()
	p.release(conn)
}

func (p *Proxy) cutResponse(w http.ResponseWriter, r *http.Request) {
	resp, err := p.roundTrip(r, r.Body, r.ContentLength, forwardHeader(r.Header), false)
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	h := forwardHeader(resp.Header)
	if r.Method != http.MethodHead {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", resp.Status)
	_ = h.Write(&head)
	head.WriteString("\r\n")
	out := head.Bytes()[:head.Len()/2]
	if len(body) > 0 {
		out = append(head.Bytes(), body[:len(body)/2]...)
	}
	conn, err := p.hijack(w)
	if err != nil {
		return
	}
	_, _ = conn.Write(out)
	p.release(conn)
}

func (p *Proxy) status(w http.ResponseWriter, r *http.Request, f Fault) {
	code := f.Status
	if code == 0 {
		code = http.StatusServiceUnavailable
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	p.writeError(w, r, code, f.Code, "injected by faultproxy")
}

// answerEarly sends the answer, then takes whatever body the client goes on sending, so the
// answer arrives while the client may still be sending and the connection ends cleanly: a server
// that closed with the body unread would reset it, and the client could see the reset before
// the answer. A client waiting for 100 Continue is not sent one.
func (p *Proxy) answerEarly(w http.ResponseWriter, r *http.Request, f Fault) {
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		p.logf("AnswerEarly: %v", err)
	}
	p.status(w, r, f)
	_ = rc.Flush()
	_, _ = io.Copy(io.Discard, r.Body)
}

// storeAltered forwards an altered body. The checksum headers and the signature's payload hash
// would make the store refuse it, so they go and the request is signed again.
func (p *Proxy) storeAltered(w http.ResponseWriter, r *http.Request, kind Kind, rechecksum bool) {
	if strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") || strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		_, _ = io.Copy(io.Discard, r.Body)
		p.writeError(w, r, http.StatusNotImplemented, "FaultProxyUnsupported", "aws-chunked bodies cannot be altered")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	switch {
	case len(body) == 0:
		p.logf("%s: empty body, forwarded unaltered", kind)
	case kind == StoreTruncated:
		body = body[:len(body)/2]
	default:
		body[len(body)/2] ^= 0xff
	}
	h := forwardHeader(r.Header)
	for k := range h {
		lk := strings.ToLower(k)
		switch {
		case strings.HasPrefix(lk, "x-amz-checksum-"), lk == "content-md5":
			sum, isDigest := digest(lk, body)
			switch {
			case !rechecksum:
				delete(h, k)
			case isDigest:
				h.Set(k, sum)
			}
		case lk == "x-amz-sdk-checksum-algorithm", lk == "x-amz-trailer", lk == "x-amz-decoded-content-length",
			lk == "authorization", lk == "x-amz-date":
			delete(h, k)
		}
	}
	h.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	p.pass(w, r, bytes.NewReader(body), int64(len(body)), h, true)
}

// stripSSE forwards r without its server-side encryption headers. They are signed, so the
// request is signed again; the body is unchanged, so its digests stay and only the payload hash
// becomes UNSIGNED-PAYLOAD (re-hashing would need the whole body first).
func (p *Proxy) stripSSE(w http.ResponseWriter, r *http.Request) {
	h := forwardHeader(r.Header)
	for k := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "x-amz-server-side-encryption") || lk == "authorization" || lk == "x-amz-date" {
			delete(h, k)
		}
	}
	if strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		_, _ = io.Copy(io.Discard, r.Body)
		p.writeError(w, r, http.StatusNotImplemented, "FaultProxyUnsupported", "aws-chunked bodies cannot be re-signed")
		return
	}
	h.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	p.pass(w, r, r.Body, r.ContentLength, h, true)
}

// ignorePrefix forwards a ListMultipartUploads without its prefix. The query is signed, so the
// request is signed again; it has no body.
func (p *Proxy) ignorePrefix(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if Classify(r) != ListMultipartUploads || !q.Has("prefix") {
		p.forward(w, r)
		return
	}
	q.Del("prefix")
	out := r.Clone(r.Context())
	out.URL.RawQuery = q.Encode()
	h := forwardHeader(r.Header)
	for k := range h {
		if lk := strings.ToLower(k); lk == "authorization" || lk == "x-amz-date" {
			delete(h, k)
		}
	}
	h.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	_, _ = io.Copy(io.Discard, r.Body)
	p.pass(w, out, http.NoBody, 0, h, true)
}

// opaqueETag forwards r unchanged and relays the answer with its ETag header made opaque.
func (p *Proxy) opaqueETag(w http.ResponseWriter, r *http.Request) {
	resp, err := p.roundTrip(r, r.Body, r.ContentLength, forwardHeader(r.Header), false)
	if err != nil {
		p.badGateway(w, r, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if etag := resp.Header.Get("ETag"); etag != "" {
		resp.Header.Set("ETag", opaque(etag))
	}
	relay(w, resp)
}

// opaque is the ETag a store that does not use MD5s would give the object the store gave etag.
func opaque(etag string) string {
	digest, parts, multipart := strings.Cut(strings.Trim(etag, `"`), "-")
	sum := md5.Sum([]byte("opaque:" + digest)) //nolint:gosec // a made-up ETag, not for security
	out := hex.EncodeToString(sum[:])
	if multipart {
		out += "-" + parts
	}
	return `"` + out + `"`
}

// digest computes the value of integrity header lk (lower case) over body, base64 as S3 wants.
func digest(lk string, body []byte) (string, bool) {
	var h hash.Hash
	switch lk {
	case "content-md5":
		h = md5.New() //nolint:gosec // Content-MD5 is MD5 by definition
	case "x-amz-checksum-crc32":
		h = crc32.NewIEEE()
	case "x-amz-checksum-crc32c":
		h = crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case "x-amz-checksum-crc64nvme":
		h = crc64nvme.New()
	case "x-amz-checksum-sha1":
		h = sha1.New() //nolint:gosec // S3's SHA1 checksum
	case "x-amz-checksum-sha256":
		h = sha256.New()
	default:
		return "", false
	}
	_, _ = h.Write(body)
	return base64.StdEncoding.EncodeToString(h.Sum(nil)), true
}

// roundTrip sends r's method, path, query and Host to the upstream with the given body and
// header, re-signing when resign is set.
func (p *Proxy) roundTrip(r *http.Request, body io.Reader, length int64, h http.Header, resign bool) (*http.Response, error) {
	u := *p.upstream
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	if length == 0 {
		body = http.NoBody
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	out.ContentLength = length
	out.Header = h
	out.Host = r.Host // the host the client signed
	if resign {
		creds := aws.Credentials{AccessKeyID: p.cfg.AccessKey, SecretAccessKey: p.cfg.SecretKey}
		if err := p.signer.SignHTTP(r.Context(), creds, out, "UNSIGNED-PAYLOAD", "s3", p.cfg.Region, time.Now()); err != nil {
			return nil, fmt.Errorf("re-sign: %w", err)
		}
	}
	resp, err := p.transport.RoundTrip(out)
	if err == nil {
		p.recordAttempt(r, length, resp)
	}
	return resp, err
}

// relay copies the upstream answer to the client, flushing as bytes arrive so a slow or
// keep-alive-streaming answer (Complete's whitespace) reaches the client as it comes.
func relay(w http.ResponseWriter, resp *http.Response) {
	for k, v := range forwardHeader(resp.Header) {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) badGateway(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client hung up or the proxy is closing: nobody to answer
	}
	p.logf("upstream: %v", err)
	p.writeError(w, r, http.StatusBadGateway, "FaultProxyUpstream", err.Error())
}

type s3Error struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code,omitempty"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource"`
	RequestID string   `xml:"RequestId"`
}

func (p *Proxy) writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	p.mu.Lock()
	p.requests++
	id := "faultproxy-" + strconv.Itoa(p.requests)
	p.mu.Unlock()
	body, err := xml.Marshal(s3Error{Code: code, Message: msg, Resource: r.URL.Path, RequestID: id})
	if err != nil {
		body = nil
	}
	body = append([]byte(xml.Header), body...)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("X-Amz-Request-Id", id)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// hijackClose closes the client connection without an answer; rst makes it a reset
// (SO_LINGER 0) instead of an orderly close.
func (p *Proxy) hijackClose(w http.ResponseWriter, rst bool) {
	conn, err := p.hijack(w)
	if err != nil {
		return
	}
	if rst {
		resetOnClose(conn)
	}
	p.release(conn)
}

// hijackReset takes the client connection over and makes its close a reset, without closing it
// yet; nil when it could not be taken.
func (p *Proxy) hijackReset(w http.ResponseWriter) net.Conn {
	conn, err := p.hijack(w)
	if err != nil {
		return nil
	}
	resetOnClose(conn)
	return conn
}

// resetOnClose makes closing conn send a TCP reset rather than a FIN.
func resetOnClose(conn net.Conn) {
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn() // the reset is the TCP connection's
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}

// hijack takes the client connection over from the server, which then no longer closes it, so
// the proxy tracks it until release: Close must not wait on a write to a client that stopped
// reading.
func (p *Proxy) hijack(w http.ResponseWriter) (net.Conn, error) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.logf("hijack: %v", err)
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = conn.Close()
		return nil, net.ErrClosed
	}
	p.hijacked[conn] = struct{}{}
	return conn, nil
}

func (p *Proxy) release(conn net.Conn) {
	p.mu.Lock()
	delete(p.hijacked, conn)
	p.mu.Unlock()
	_ = conn.Close()
}

// hopHeaders belong to one connection and are never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func forwardHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range hopHeaders {
		delete(out, k)
	}
	return out
}
