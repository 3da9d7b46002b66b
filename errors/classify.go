package errors

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	stderrors "errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"
)

// The facts Classify reads from an error chain. store.ResponseError implements the first five
// (operationer too, so both adapters' errors classify alike); the AWS SDK's errors implement them
// across its chain (smithy.APIError, awshttp.ResponseError, smithy.OperationError), so SDK errors
// classify without an adapter.
type (
	statusCoder interface{ HTTPStatusCode() int }
	errorCoder  interface{ ErrorCode() string }
	messager    interface{ ErrorMessage() string }
	requestIDer interface{ ServiceRequestID() string }
	operationer interface{ Operation() string }
	// invalidInputer lets an error mark itself as rejected input without sharing a sentinel.
	invalidInputer interface{ InvalidInput() bool }
	// documentLoser is an error status whose error document the connection lost on the way
	// (store.ResponseError.DocumentLost).
	documentLoser interface{ ErrorDocumentLost() bool }
	// requestHoster names the host of a request that failed before it had a connection (the
	// store.NotSentError of store.ProgressTransport), for the message of a TLS failure.
	requestHoster interface{ RequestHost() string }
)

// Limits on what is copied from a store's answer into an *Error, to keep a log line a line.
const (
	maxCodeLen    = 128
	maxMessageLen = 512
)

// Classify returns err as an *Error with a Kind other than Unknown; Classify(nil) is nil.
//
// An error already classified (an *Error with a Kind anywhere in the chain) is returned as it is.
// An *Error whose Kind is Unknown is a template: its fields (Op, Bucket, Key, ...) are kept and
// its cause is classified, so Classify(&Error{Op: "Complete", Err: err}) applies the rules that
// depend on the operation. Otherwise the rules are, in order:
//
//  1. context.Canceled or context.DeadlineExceeded anywhere in the chain: Canceled. Classify
//     cannot tell the caller's context from a per-attempt timeout; ClassifyContext can.
//  2. Rejected input (store.ErrInvalidInput, or an error with InvalidInput() true): Permanent.
//  3. An S3 error code in the code table (package doc): its Kind.
//  4. An HTTP status of 400 or more without a code whose error document the connection lost
//     on the way (store.ResponseError.DocumentLost, or ErrorDocumentLost() true): Transient,
//     since the status alone cannot tell a refusal worth another attempt from a final one.
//     Otherwise an HTTP status of 400 or more: the status table (package doc), else 5xx
//     Transient and 4xx Permanent.
//  5. An unknown code in a success answer (an <Error> in a 200 Complete body): Transient.
//  6. TLS certificate and handshake failures: Permanent.
//  7. fs.ErrNotExist or fs.ErrPermission (reading the source, a unix socket): Permanent.
//  8. Connection reset/refused/aborted, broken pipe, unreachable network, *net.OpError,
//     *net.DNSError (a flaky resolver is common in containers), timeouts, io.EOF,
//     io.ErrUnexpectedEOF, net.ErrClosed: Transient.
//  9. A success status without a code (a non-compliant answer: no ETag, malformed XML):
//     Compatibility.
//  10. Anything else: Transient. Errors that reach here are almost always transport failures
//     whose types a library did not keep; one bounded retry costs less than failing a flush.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	return classify(err, "", false)
}

// ClassifyContext is Classify for an error returned under ctx, the caller's context. It returns
// Canceled for a context error only when ctx is done. While ctx is live a context error (or an
// *Error of kind Canceled caused by one) came from a per-attempt timeout or an inner cancel, and
// is Transient. A nil ctx behaves as Classify.
func ClassifyContext(ctx context.Context, err error) *Error {
	if err == nil {
		return nil
	}
	return classify(err, "", ctx != nil && ctx.Err() == nil)
}

func classify(err error, op string, ctxAlive bool) (res *Error) {
	// Classify calls methods of foreign errors (Error, HTTPStatusCode, ...); one that panics
	// must not take the caller down with it.
	defer func() {
		if r := recover(); r != nil {
			res = &Error{Kind: Internal, Op: op, Message: fmt.Sprintf("panic while classifying an error: %v", r), Err: err}
		}
	}()
	var ce *Error
	if stderrors.As(err, &ce) && ce != nil {
		if ce.Kind == Unknown {
			return fromTemplate(ce, ctxAlive)
		}
		if ctxAlive && ce.Kind == Canceled && isContextErr(ce.Err) {
			c := *ce
			c.Kind = Transient
			return &c
		}
		return ce
	}
	return classifyFresh(err, op, ctxAlive)
}

// fromTemplate classifies t.Err and returns a copy of t with the Kind and the facts t lacks.
func fromTemplate(t *Error, ctxAlive bool) *Error {
	c := *t
	if t.Err == nil {
		c.Kind = Internal
		if c.Message == "" {
			c.Message = "unclassified error without a cause"
		}
		return &c
	}
	inner := classify(t.Err, t.Op, ctxAlive)
	c.Kind = inner.Kind
	c.UploadGone = c.UploadGone || inner.UploadGone
	c.AbortFailed = c.AbortFailed || inner.AbortFailed
	c.ObjectLeft = c.ObjectLeft || inner.ObjectLeft
	c.StoreFull = c.StoreFull || inner.StoreFull
	fillString(&c.Op, inner.Op)
	fillString(&c.Bucket, inner.Bucket)
	fillString(&c.Key, inner.Key)
	fillString(&c.UploadID, inner.UploadID)
	fillString(&c.Code, inner.Code)
	fillString(&c.RequestID, inner.RequestID)
	if c.PartNumber == 0 {
		c.PartNumber = inner.PartNumber
	}
	if c.StatusCode == 0 {
		c.StatusCode = inner.StatusCode
	}
	if c.Attempts == 0 {
		c.Attempts = inner.Attempts
	}
	if _, ok := t.Err.(*Error); ok { //nolint:errorlint // only a direct *Error is flattened
		// inner is t.Err or a copy of it. Flatten, so errors.Is(err, SomeKind) cannot match two
		// kinds.
		fillString(&c.Message, inner.Message)
		c.Err = inner.Err
	} else if inner.Err == t.Err { //nolint:errorlint // identity: is inner a classification of exactly t.Err
		// inner is a fresh classification of t.Err: take its store message, keep t's cause.
		fillString(&c.Message, inner.Message)
	}
	return &c
}

func fillString(dst *string, src string) {
	if *dst == "" {
		*dst = src
	}
}

func classifyFresh(err error, op string, ctxAlive bool) *Error {
	e := &Error{Err: err, Op: op}
	var sc statusCoder
	if stderrors.As(err, &sc) {
		if s := sc.HTTPStatusCode(); s >= 100 && s <= 999 {
			e.StatusCode = s
		}
	}
	var ec errorCoder
	if stderrors.As(err, &ec) {
		e.Code = clip(Redact(strings.TrimSpace(ec.ErrorCode())), maxCodeLen)
	}
	var em messager
	if stderrors.As(err, &em) {
		// Redacted before it is cut: a secret cut in two is no longer recognisable.
		e.Message = clip(Redact(strings.TrimSpace(em.ErrorMessage())), maxMessageLen)
	}
	var rq requestIDer
	if stderrors.As(err, &rq) {
		e.RequestID = clip(Redact(strings.TrimSpace(rq.ServiceRequestID())), maxCodeLen)
	}
	if e.Op == "" {
		var oe operationer
		if stderrors.As(err, &oe) {
			e.Op = clip(oe.Operation(), maxCodeLen)
		}
	}
	e.Kind, e.UploadGone = kindFor(err, e.Op, e.StatusCode, e.Code, ctxAlive)
	e.StoreFull = e.Kind == Transient && storeFull(e.StatusCode, e.Code, e.Message)
	if e.StatusCode == 0 && e.Message == "" && !isContextErr(err) && isTLSFailure(err) {
		// The one fact that matters leads: whose certificate failed, and why.
		e.Message = tlsMessage(err)
	}
	return e
}

// tlsMessage says which host's TLS failed and why, for an error isTLSFailure accepts.
func tlsMessage(err error) string {
	host := ""
	var rh requestHoster
	var ue *url.Error
	var hn x509.HostnameError
	switch {
	case stderrors.As(err, &rh):
		host = rh.RequestHost()
	case stderrors.As(err, &ue):
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Host
		}
	case stderrors.As(err, &hn):
		host = hn.Host
	}
	if host == "" {
		host = "the endpoint"
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalid          x509.CertificateInvalidError
		verify           *tls.CertificateVerificationError
	)
	switch {
	case stderrors.As(err, &unknownAuthority):
		return "TLS certificate of " + host + " does not verify: signed by an unknown authority (trust the CA that signed it with a CA bundle)"
	case stderrors.As(err, &hn):
		return "TLS certificate of " + host + " does not verify: not for this host name: " + hn.Error()
	case stderrors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "TLS certificate of " + host + " does not verify: expired or not yet valid: " + invalid.Error()
	case stderrors.As(err, &invalid):
		return "TLS certificate of " + host + " does not verify: " + invalid.Error()
	case stderrors.As(err, &verify):
		return "TLS certificate of " + host + " does not verify: " + verify.Error()
	}
	return "TLS handshake with " + host + " failed"
}

func kindFor(err error, op string, status int, code string, ctxAlive bool) (Kind, bool) {
	if isContextErr(err) {
		if ctxAlive {
			return Transient, false
		}
		return Canceled, false
	}
	if isInvalidInput(err) {
		return Permanent, false
	}
	if code != "" {
		if k, gone, ok := lookupCode(code, op); ok {
			return k, gone
		}
	}
	if status >= 400 && code == "" && documentLost(err) {
		// The connection broke while the store explained its refusal: the status alone cannot
		// tell a refusal worth another attempt (BadDigest, SlowDown) from a final one, and
		// another attempt gets the store's whole answer.
		return Transient, false
	}
	if status >= 400 {
		return statusKind(status), false
	}
	if status > 0 && code != "" {
		return Transient, false
	}
	if isTLSFailure(err) {
		return Permanent, false
	}
	// Before the transport checks: a syscall.Errno is a net.Error too.
	if stderrors.Is(err, fs.ErrNotExist) || stderrors.Is(err, fs.ErrPermission) {
		return Permanent, false
	}
	if isTransportFailure(err) {
		return Transient, false
	}
	if status > 0 {
		return Compatibility, false
	}
	return Transient, false
}

func isContextErr(err error) bool {
	return err != nil && (stderrors.Is(err, context.Canceled) || stderrors.Is(err, context.DeadlineExceeded))
}

// isInvalidInput recognises store.ErrInvalidInput without importing store: some error in the
// chain is a leaf (no Unwrap) whose whole text is "invalid input". Matching the leaf's whole text,
// not a substring, means a store message that merely mentions "invalid input" does not count;
// errors_test pins it to store.ErrInvalidInput so a rename fails a test. Errors from elsewhere can
// say the same with an InvalidInput() bool method.
func isInvalidInput(err error) bool {
	var ii invalidInputer
	return stderrors.As(err, &ii) && ii.InvalidInput()
}

func documentLost(err error) bool {
	var dl documentLoser
	return stderrors.As(err, &dl) && dl.ErrorDocumentLost()
}

// isTLSFailure: a certificate the client does not trust, or a server that does not speak TLS.
// Neither changes on a retry.
func isTLSFailure(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		roots            x509.SystemRootsError
		constraint       x509.ConstraintViolationError
		insecure         x509.InsecureAlgorithmError
		critical         x509.UnhandledCriticalExtension
		verify           *tls.CertificateVerificationError
		header           tls.RecordHeaderError
		alert            tls.AlertError
	)
	return stderrors.As(err, &unknownAuthority) || stderrors.As(err, &hostname) ||
		stderrors.As(err, &invalid) || stderrors.As(err, &roots) || stderrors.As(err, &constraint) ||
		stderrors.As(err, &insecure) || stderrors.As(err, &critical) || stderrors.As(err, &verify) ||
		stderrors.As(err, &header) || stderrors.As(err, &alert)
}

var transientErrnos = []error{
	syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE,
	syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN,
	syscall.EADDRNOTAVAIL,
}

func isTransportFailure(err error) bool {
	for _, target := range transientErrnos {
		if stderrors.Is(err, target) {
			return true
		}
	}
	if stderrors.Is(err, io.EOF) || stderrors.Is(err, io.ErrUnexpectedEOF) ||
		stderrors.Is(err, net.ErrClosed) || stderrors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var (
		ne  net.Error
		op  *net.OpError
		dns *net.DNSError
	)
	return stderrors.As(err, &op) || stderrors.As(err, &dns) || (stderrors.As(err, &ne) && ne.Timeout())
}

// IsTimeout reports whether err is a timeout: a per-attempt or connection deadline, a net.Error
// timeout, or the store's RequestTimeout (408). A retry budget charges these more, as the AWS
// SDK does, since they hold a connection for the whole timeout.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	var e *Error
	if stderrors.As(err, &e) && e != nil {
		if e.Kind == Canceled {
			return false
		}
		if e.StatusCode == 408 || isTimeoutCode(e.Code) {
			return true
		}
	}
	if stderrors.Is(err, context.DeadlineExceeded) || stderrors.Is(err, os.ErrDeadlineExceeded) ||
		stderrors.Is(err, syscall.ETIMEDOUT) {
		return true
	}
	var ne net.Error
	if stderrors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var sc statusCoder
	if stderrors.As(err, &sc) && sc.HTTPStatusCode() == 408 {
		return true
	}
	var ec errorCoder
	return stderrors.As(err, &ec) && isTimeoutCode(ec.ErrorCode())
}

func isTimeoutCode(code string) bool {
	return code == "RequestTimeout" || code == "RequestTimeoutException" || code == CodeStalled
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
