package miniogo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/signer"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/s3error"
	"github.com/safeput/safeput/internal/secrets"
	"github.com/safeput/safeput/store"
)

// exchange records what happened on the wire during one call, so errors can be reported from
// the raw facts rather than from minio-go's reconstruction of them. minio-go invents codes for
// bodiless answers (NoSuchKey for any 404 HEAD, NoSuchUpload for any 404 abort), builds
// ErrorResponse values for problems it found locally (invalid names, unparsable headers), and
// replaces any transport error mentioning EOF with a plain string error.
type exchange struct {
	mu        sync.Mutex
	responded bool // a response arrived (status line read)
	status    int  // 0 when unknown (NewFromCore)
	header    http.Header
	errBody   *bytes.Buffer // first bytes of a non-2xx body
	errLost   error         // why reading that body failed (the connection dropped), nil if it did not
	rtErr     error         // last error from the transport, unchanged
	// extra are headers minio-go cannot send (it prefixes unknown names with x-amz-meta-); the
	// recording transport adds them and signs the request again.
	extra http.Header
	// noSniff skips keeping a success body (GetObject: the object, not an answer document).
	noSniff bool
	okBody  *bytes.Buffer // a success answer's document, from its root element on (bounded)
	okBytes int64         // how many bytes the success body had, whitespace included
}

type exchangeKey struct{}

// errBodyLimit bounds how much of an error body is kept; S3 error documents are small.
const errBodyLimit = 64 << 10

// track attaches a fresh exchange to ctx. The recording transport (New) fills in status,
// headers and error bodies; the client trace tells NewFromCore stores at least whether an answer
// arrived.
func (s *coreStore) track(ctx context.Context) (context.Context, *exchange) {
	ex := &exchange{}
	if ctx == nil {
		// minio-go would reject a nil context; treat it as Background rather than panic here.
		ctx = context.Background()
	}
	ctx = context.WithValue(ctx, exchangeKey{}, ex)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotFirstResponseByte: func() {
			ex.mu.Lock()
			ex.responded = true
			ex.mu.Unlock()
		},
	})
	return ctx, ex
}

// recordingTransport records each round trip into the request's exchange, and adds the
// exchange's extra headers (re-signing with the store's credentials, as they are now).
type recordingTransport struct {
	base   http.RoundTripper
	creds  *credentials.Credentials
	region string
	// renewed is set for the caller's Credentials, whose keys may change while the store is in
	// use: each request registers the keys it was signed with as secrets errors.Redact blanks.
	renewed bool
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.renewed {
		// minio-go signed req with the keys the credentials hold now (it asked just before).
		if keys, err := t.creds.GetWithContext(nil); err == nil {
			secrets.Register(keys.SecretAccessKey, keys.SessionToken)
		}
	}
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex != nil && len(ex.extra) > 0 {
		// A RoundTripper must not modify its request: work on a clone.
		r := req.Clone(req.Context())
		for k, v := range ex.extra {
			r.Header[http.CanonicalHeaderKey(k)] = v
		}
		r.Header.Del("Authorization")
		keys, err := t.creds.GetWithContext(nil)
		if err != nil {
			return nil, fmt.Errorf("credentials to sign with: %w", err)
		}
		req = signer.SignV4(*r, keys.AccessKeyID, keys.SecretAccessKey, keys.SessionToken, t.region)
	}
	resp, err := t.base.RoundTrip(req)
	if ex == nil {
		return resp, err
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if err != nil {
		ex.rtErr = err
		return resp, err
	}
	ex.responded = true
	ex.status = resp.StatusCode
	ex.header = resp.Header // read only, here and in minio-go: no copy per request
	ex.errBody, ex.errLost = nil, nil
	ex.okBody, ex.okBytes = nil, 0
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		// Keep a copy of the error body as minio-go reads (or drains) it.
		ex.errBody = &bytes.Buffer{}
		resp.Body = &teeBody{ReadCloser: resp.Body, ex: ex, buf: ex.errBody}
	case !ex.noSniff:
		// A success answer may carry an <Error> document (S3 does so for Complete; the aws
		// adapter's SDK checks every answer): keep it as minio-go reads or drains it.
		ex.okBody = &bytes.Buffer{}
		if resp.Body != nil && resp.Body != http.NoBody {
			resp.Body = &sniffBody{ReadCloser: resp.Body, ex: ex}
		}
	}
	return resp, nil
}

// sniffBody keeps a success body from its root element on (the XML declaration and the
// whitespace S3 sends to keep a long Complete alive are dropped), at most errBodyLimit bytes.
type sniffBody struct {
	io.ReadCloser
	ex       *exchange
	rooted   bool // the root element has started
	pendLess bool // a '<' ended the last read before the root
}

func (b *sniffBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.ex.mu.Lock()
		b.ex.okBytes += int64(n)
		b.keep(p[:n])
		b.ex.mu.Unlock()
	}
	return n, err
}

// keep appends what belongs to the document; called with ex.mu held.
func (b *sniffBody) keep(p []byte) {
	buf := b.ex.okBody
	for !b.rooted && len(p) > 0 {
		c := p[0]
		p = p[1:]
		switch {
		case b.pendLess && c != '?' && c != '!':
			b.rooted = true
			buf.WriteByte('<')
			buf.WriteByte(c)
		case c == '<':
			b.pendLess = true
			continue
		}
		b.pendLess = false
	}
	if room := errBodyLimit - buf.Len(); b.rooted && room > 0 {
		buf.Write(p[:min(len(p), room)])
	}
}

// embedded returns the error a success answer carried as its document, as the aws adapter
// reports one (the SDK rewrites it to a 500, as AWS advises treating it), or nil.
func (ex *exchange) embedded(op string) error {
	ex.mu.Lock()
	var doc []byte
	if ex.okBody != nil && ex.status >= 200 && ex.status <= 299 {
		doc = bytes.Clone(ex.okBody.Bytes())
	}
	h := ex.header
	ex.mu.Unlock()
	if len(doc) == 0 {
		return nil
	}
	d, ok := s3error.ParseBody(bytes.NewReader(doc))
	if !ok {
		return nil
	}
	rid := d.RequestID
	if rid == "" {
		rid = h.Get("x-amz-request-id")
	}
	return &store.ResponseError{
		Op:         op,
		StatusCode: http.StatusInternalServerError,
		Code:       d.Code,
		Message:    d.Message,
		RequestID:  rid,
		RetryAfter: retryAfter(h, time.Now()),
		Err:        errors.New("a success status carrying an error document"),
	}
}

// emptySuccess reports a success answer whose body was empty.
func (ex *exchange) emptySuccess() bool {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.status >= 200 && ex.status <= 299 && ex.okBody != nil && ex.okBytes == 0 && ex.rtErr == nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the base transport.
func (t *recordingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type teeBody struct {
	io.ReadCloser
	ex  *exchange
	buf *bytes.Buffer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 || (err != nil && err != io.EOF) { //nolint:errorlint // io.EOF is returned unwrapped by contract
		b.ex.mu.Lock()
		if room := errBodyLimit - b.buf.Len(); room > 0 {
			b.buf.Write(p[:min(n, room)])
		}
		if err != nil && err != io.EOF { //nolint:errorlint // as above
			b.ex.errLost = err
		}
		b.ex.mu.Unlock()
	}
	return n, err
}

type snapshot struct {
	responded bool
	status    int
	header    http.Header
	errBody   []byte
	errLost   error
	rtErr     error
}

func (ex *exchange) snapshot() snapshot {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	s := snapshot{responded: ex.responded, status: ex.status, header: ex.header, errLost: ex.errLost, rtErr: ex.rtErr}
	if ex.errBody != nil {
		s.errBody = bytes.Clone(ex.errBody.Bytes())
	}
	if s.header == nil {
		s.header = http.Header{}
	}
	return s
}

func (ex *exchange) requestID() string { return ex.snapshot().header.Get("x-amz-request-id") }

// answered2xx reports whether the recorded answer had a success status.
func (ex *exchange) answered2xx() bool {
	s := ex.snapshot()
	return s.status >= 200 && s.status <= 299
}

// nonCompliant reports an answer that broke the protocol, with the status the store sent.
func (ex *exchange) nonCompliant(op string, cause error) error {
	s := ex.snapshot()
	status := s.status
	if status == 0 {
		// Only NewFromCore stores lack the status. minio-go turns every non-2xx answer into an
		// ErrorResponse, so an answer it accepted and we then found broken was a success status.
		status = http.StatusOK
	}
	return &store.ResponseError{
		Op:         op,
		StatusCode: status,
		Message:    cause.Error(),
		RequestID:  s.header.Get("x-amz-request-id"),
		Err:        fmt.Errorf("%w: %w", store.ErrNonCompliant, cause),
	}
}

// statusText matches the code minio-go invents from resp.Status ("503 Service Unavailable")
// when an error body has no <Code>.
var statusText = regexp.MustCompile(`^[0-9]{3}( |$)`)

// fail turns an error from a Core call into the store contract's error.
func (s *coreStore) fail(op string, ex *exchange, err error) error {
	if e := ex.embedded(op); e != nil {
		return e
	}
	st := ex.snapshot()
	var er minio.ErrorResponse
	isER := errors.As(err, &er)

	if !st.responded {
		if st.rtErr != nil {
			return fmt.Errorf("%s: %w", op, restoreTransportError(err, st.rtErr))
		}
		if isTransportError(err) {
			return fmt.Errorf("%s: %w", op, err)
		}
		// minio-go rejected the call before sending it: its bucket and object name rules are
		// stricter than store.ValidateBucketKey ("ab" is too short a bucket name).
		return fmt.Errorf("%s: %w: %w", op, store.ErrInvalidInput, err)
	}

	if st.status >= 300 && st.errLost != nil {
		// The status arrived, then the connection dropped in the error document: an answer
		// whose code is unknown, whatever minio-go made of the rest.
		return &store.ResponseError{
			Op:           op,
			StatusCode:   st.status,
			Code:         st.header.Get("x-minio-error-code"), // MinIO's code in a header, if sent
			Message:      "error document lost: " + st.errLost.Error(),
			RequestID:    st.header.Get("x-amz-request-id"),
			RetryAfter:   retryAfter(st.header, time.Now()),
			DocumentLost: st.errLost,
			Err:          restoreTransportError(err, st.rtErr),
		}
	}
	if !isER {
		if isTransportError(err) {
			// The answer started but its body could not be read: a transport failure.
			return fmt.Errorf("%s: %w", op, restoreTransportError(err, st.rtErr))
		}
		// Malformed XML, empty body, unparsable field.
		return ex.nonCompliant(op, err)
	}

	status := er.StatusCode
	if status == 0 {
		status = st.status
	}
	if status == 0 && er.Code == minio.NoSuchUpload {
		status = http.StatusNotFound // minio-go's abort builds its 404 error without a status
	}
	if status == 0 || (status >= 200 && status <= 299 && (er.StatusCode == 0 || er.Code == "" || statusText.MatchString(er.Code))) {
		// minio-go built this ErrorResponse from a success answer it could not use (an empty or
		// garbled CompleteMultipartUpload body, a bad Last-Modified header): not an S3 error.
		return ex.nonCompliant(op, err)
	}

	re := &store.ResponseError{
		Op:         op,
		StatusCode: status,
		Code:       er.Code,
		Message:    er.Message,
		RequestID:  er.RequestID,
		RetryAfter: retryAfter(st.header, time.Now()),
		Err:        err,
	}
	if s.recording && status >= 300 {
		// The raw body is the authority: "" when it had no code (a HEAD never has a body).
		if doc, ok := s3error.ParseBody(bytes.NewReader(st.errBody)); ok {
			re.Code, re.Message = doc.Code, doc.Message
			if doc.RequestID != "" {
				re.RequestID = doc.RequestID
			}
		} else {
			re.Code = ""
			// Redacted before it is cut: a secret cut in two is no longer recognisable.
			re.Message = sperrors.Redact(strings.TrimSpace(string(st.errBody)))
			if len(re.Message) > 512 {
				re.Message = re.Message[:512] + "..."
			}
		}
		if c := st.header.Get("x-minio-error-code"); c != "" && re.Code == "" {
			re.Code = c // MinIO servers put the code in a header for bodiless answers
		}
	} else if statusText.MatchString(re.Code) {
		re.Code = ""
	}
	if id := st.header.Get("x-amz-request-id"); id != "" && (re.RequestID == "" || re.RequestID == "minio") {
		re.RequestID = id
	}
	return re
}

// isTransportError reports errors that come from the connection, not from the answer's content.
func isTransportError(err error) bool {
	var ne net.Error
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}

// restoreTransportError undoes minio-go's rewriting of transport errors: it replaces the cause
// of any *url.Error mentioning EOF with a string error, hiding io.EOF and *net.OpError.
func restoreTransportError(err, rtErr error) error {
	if rtErr == nil || errors.Is(err, rtErr) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: ue.URL, Err: rtErr}
	}
	return err
}

// retryAfter reads the store's hint with the errors package's parser, as the aws adapter does:
// x-amz-retry-after (milliseconds) first, else Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	return s3error.ParseRetryAfter(h.Get("Retry-After"), h.Get("x-amz-retry-after"), now)
}
