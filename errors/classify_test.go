package errors_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	stderrors "errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// wrappers put an error under the kinds of wrapping callers and adapters use; classification must
// not depend on them.
var wrappers = map[string]func(error) error{
	"bare":   func(err error) error { return err },
	"errorf": func(err error) error { return fmt.Errorf("upload part 3: %w", err) },
	"join":   func(err error) error { return stderrors.Join(stderrors.New("cleanup also failed"), err) },
	"double": func(err error) error { return fmt.Errorf("a: %w", fmt.Errorf("b: %w", err)) },
}

func response(op string, status int, code string) *store.ResponseError {
	return &store.ResponseError{Op: op, StatusCode: status, Code: code, Message: "the store says " + code, RequestID: "REQ1", Err: stderrors.New("sdk error")}
}

// TestCodeTable drives Classify with every row of the code table, through store.ResponseError.
func TestCodeTable(t *testing.T) {
	for _, r := range errors.CodeTable() {
		for wname, wrap := range wrappers {
			t.Run(r.Code+"/"+wname, func(t *testing.T) {
				err := wrap(response("UploadPart", r.Status, r.Code))
				e := errors.Classify(err)
				if e.Kind != r.Kind {
					t.Fatalf("Classify(%s) = %s, want %s", r.Code, e.Kind, r.Kind)
				}
				if e.Code != r.Code || e.StatusCode != r.Status || e.RequestID != "REQ1" || e.Message != "the store says "+r.Code {
					t.Errorf("facts not copied: %+v", e)
				}
				if e.UploadGone != r.UploadGone {
					t.Errorf("UploadGone = %v, want %v", e.UploadGone, r.UploadGone)
				}
				if !stderrors.Is(e, r.Kind) {
					t.Errorf("errors.Is(e, %s) is false", r.Kind)
				}
				var re *store.ResponseError
				if !stderrors.As(e, &re) || re.Code != r.Code {
					t.Errorf("errors.As does not reach the ResponseError")
				}
				// The code wins over any status, including a 200 with an embedded error.
				for _, status := range []int{200, 400, 500, 503} {
					if k := errors.Classify(wrap(response("UploadPart", status, r.Code))).Kind; k != r.Kind {
						t.Errorf("status %d: %s, want %s", status, k, r.Kind)
					}
				}
				// Operation-dependent rows: the op comes from a template *Error.
				want := r.Kind
				if r.OnComplete != errors.Unknown {
					want = r.OnComplete
				}
				tmpl := &errors.Error{Op: "CompleteMultipartUpload", Bucket: "b", Key: "k", UploadID: "u1", Err: err}
				c := errors.Classify(tmpl)
				if c.Kind != want || c.Bucket != "b" || c.UploadID != "u1" || c.Code != r.Code {
					t.Errorf("Complete: %+v, want kind %s", c, want)
				}
				if r.OnComplete != errors.Unknown && c.UploadGone {
					t.Errorf("Complete: UploadGone set")
				}
			})
		}
	}
}

// TestStatusTable drives Classify with every status row, with no code and with an unknown code.
func TestStatusTable(t *testing.T) {
	for _, r := range errors.StatusTable() {
		for _, code := range []string{"", "SomethingNew"} {
			for wname, wrap := range wrappers {
				if k := errors.Classify(wrap(response("PutObject", r.Status, code))).Kind; k != r.Kind {
					t.Errorf("status %d code %q %s: %s, want %s", r.Status, code, wname, k, r.Kind)
				}
			}
		}
	}
	for status, want := range map[int]errors.Kind{
		400: errors.Permanent, 404: errors.Permanent, 418: errors.Permanent, 451: errors.Permanent,
		505: errors.Transient, 507: errors.Transient, 599: errors.Transient,
	} {
		if k := errors.Classify(response("Head", status, "")).Kind; k != want {
			t.Errorf("unknown status %d: %s, want %s", status, k, want)
		}
	}
}

func TestEmbeddedAndNonCompliantAnswers(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want errors.Kind
	}{
		{"200 InternalError", response("CompleteMultipartUpload", 200, "InternalError"), errors.Transient},
		{"200 unknown code", response("CompleteMultipartUpload", 200, "WeirdFailure"), errors.Transient},
		{"200 SlowDown", response("CompleteMultipartUpload", 200, "SlowDown"), errors.Throttled},
		{"200 non-compliant", &store.ResponseError{Op: "UploadPart", StatusCode: 200, Err: store.ErrNonCompliant}, errors.Compatibility},
		{"200 truncated body", &store.ResponseError{Op: "CompleteMultipartUpload", StatusCode: 200, Err: fmt.Errorf("%w: %w", store.ErrNonCompliant, io.ErrUnexpectedEOF)}, errors.Transient},
		{"503 throttle code", response("UploadPart", 503, "SlowDown"), errors.Throttled},
		{"503 plain", response("UploadPart", 503, ""), errors.Transient},
		{"400 throttle code", response("UploadPart", 400, "Throttling"), errors.Throttled},
		{"501 NotImplemented", response("PutObject", 501, "NotImplemented"), errors.Compatibility},
		{"408 no code", response("UploadPart", 408, ""), errors.Transient},
		{"499 no code", response("UploadPart", 499, ""), errors.Transient},
		{"429 no code", response("UploadPart", 429, ""), errors.Throttled},
		{"412 HEAD", response("Head", 412, ""), errors.Precondition},
		// The connection dropped while the error document arrived: the status alone is not the
		// store's whole word, and another attempt gets it.
		{"400 document lost", &store.ResponseError{Op: "UploadPart", StatusCode: 400, Message: "error document lost: unexpected EOF", DocumentLost: io.ErrUnexpectedEOF}, errors.Transient},
		{"403 document lost", &store.ResponseError{Op: "PutObject", StatusCode: 403, DocumentLost: io.ErrUnexpectedEOF}, errors.Transient},
		{"403 document lost, code from a header", &store.ResponseError{Op: "PutObject", StatusCode: 403, Code: "AccessDenied", DocumentLost: io.ErrUnexpectedEOF}, errors.Permanent},
		{"NoSuchUpload on Complete", response("Complete", 404, "NoSuchUpload"), errors.Precondition /* the ResponseError names its op */},
		{"NoSuchUpload on an unnamed op", response("", 404, "NoSuchUpload"), errors.Transient /* op unknown: no template */},
	}
	for _, c := range cases {
		if k := errors.Classify(c.err).Kind; k != c.want {
			t.Errorf("%s: %s, want %s", c.name, k, c.want)
		}
	}
}

// timeoutErr is a net.Error timeout, as a dialer or a read deadline returns.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func opErr(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

func urlErr(err error) error {
	return &url.Error{Op: "Put", URL: "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260101&X-Amz-Signature=0123abcdef", Err: err}
}

func TestTransportErrors(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		want    errors.Kind
		timeout bool
	}{
		{"ECONNRESET", opErr("read", syscall.ECONNRESET), errors.Transient, false},
		{"ECONNREFUSED", opErr("dial", syscall.ECONNREFUSED), errors.Transient, false},
		{"EPIPE", opErr("write", syscall.EPIPE), errors.Transient, false},
		{"ETIMEDOUT", opErr("read", syscall.ETIMEDOUT), errors.Transient, true},
		{"url ECONNRESET", urlErr(opErr("read", syscall.ECONNRESET)), errors.Transient, false},
		{"unexpected EOF", io.ErrUnexpectedEOF, errors.Transient, false},
		{"EOF mid-response", urlErr(io.EOF), errors.Transient, false},
		{"net timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, errors.Transient, true},
		{"deadline", os.ErrDeadlineExceeded, errors.Transient, true},
		{"closed", net.ErrClosed, errors.Transient, false},
		{"dns", &net.DNSError{Err: "no such host", Name: "s3.example", IsNotFound: true}, errors.Transient, false},
		{"x509 unknown authority", urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), errors.Permanent, false},
		{"x509 hostname", urlErr(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "s3.example"}), errors.Permanent, false},
		{"x509 expired", x509.CertificateInvalidError{Reason: x509.Expired}, errors.Permanent, false},
		{"not TLS", urlErr(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), errors.Permanent, false},
		{"source missing", &os.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, errors.Permanent, false},
		{"unknown error", stderrors.New("something odd"), errors.Transient, false},
		{"invalid input", store.Validate(&store.PutObjectInput{}), errors.Permanent, false},
		{"invalid input wrapped", fmt.Errorf("writer: %w", store.Validate(&store.UploadPartInput{Bucket: "b", Key: "k"})), errors.Permanent, false},
		{"panic", errors.FromPanic("UploadPart", "boom"), errors.Internal, false},
	}
	for _, c := range cases {
		e := errors.Classify(c.err)
		if e.Kind != c.want {
			t.Errorf("%s: %s, want %s (%v)", c.name, e.Kind, c.want, e)
		}
		if got := errors.IsTimeout(e); got != c.timeout {
			t.Errorf("%s: IsTimeout = %v, want %v", c.name, got, c.timeout)
		}
		if !stderrors.Is(e, c.err) {
			t.Errorf("%s: errors.Is does not reach the cause", c.name)
		}
	}
	var ne *net.OpError
	if !stderrors.As(errors.Classify(urlErr(opErr("read", syscall.ECONNRESET))), &ne) {
		t.Error("errors.As does not reach *net.OpError")
	}
}

func TestStoreInvalidInput(t *testing.T) {
	// store.ErrInvalidInput is recognised through its InvalidInput method, however wrapped.
	wrapped := fmt.Errorf("PutObject: %w", fmt.Errorf("%w: empty bucket", store.ErrInvalidInput))
	if k := errors.Classify(wrapped).Kind; k != errors.Permanent {
		t.Fatalf("wrapped ErrInvalidInput classified %s", k)
	}
	// A store message that merely mentions it is not rejected input.
	if k := errors.Classify(response("PutObject", 503, "")).Kind; k != errors.Transient {
		t.Fatal(k)
	}
	if k := errors.Classify(fmt.Errorf("got invalid input from peer")).Kind; k != errors.Transient {
		t.Fatal("a mention is not", k)
	}
}

type markedInvalid struct{}

func (markedInvalid) Error() string      { return "bad part size" }
func (markedInvalid) InvalidInput() bool { return true }

func TestInvalidInputInterface(t *testing.T) {
	if k := errors.Classify(fmt.Errorf("x: %w", markedInvalid{})).Kind; k != errors.Permanent {
		t.Fatal(k)
	}
}

func TestContextErrors(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, cerr := range []error{context.Canceled, context.DeadlineExceeded, urlErr(context.DeadlineExceeded), fmt.Errorf("dial: %w", context.Canceled)} {
		if k := errors.Classify(cerr).Kind; k != errors.Canceled {
			t.Errorf("Classify(%v) = %s, want canceled", cerr, k)
		}
		if k := errors.ClassifyContext(done, cerr).Kind; k != errors.Canceled {
			t.Errorf("ClassifyContext(done, %v) = %s, want canceled", cerr, k)
		}
		e := errors.ClassifyContext(live, cerr)
		if e.Kind != errors.Transient {
			t.Errorf("ClassifyContext(live, %v) = %s, want transient", cerr, e.Kind)
		}
		// An inner Classify already said Canceled: the live caller context overrides it.
		if k := errors.ClassifyContext(live, errors.Classify(cerr)).Kind; k != errors.Transient {
			t.Errorf("ClassifyContext(live, Classify(%v)) = %s, want transient", cerr, k)
		}
		if !errors.ClassifyContext(live, cerr).Retryable() || errors.Classify(cerr).Retryable() {
			t.Errorf("retryable for %v", cerr)
		}
	}
	if !errors.IsTimeout(errors.ClassifyContext(live, context.DeadlineExceeded)) {
		t.Error("a per-attempt deadline is a timeout")
	}
	// A real answer that arrives as the caller gives up is still that answer.
	if k := errors.ClassifyContext(done, response("UploadPart", 403, "AccessDenied")).Kind; k != errors.Permanent {
		t.Error(k)
	}
	if errors.ClassifyContext(nil, context.Canceled).Kind != errors.Canceled { //nolint:staticcheck // nil ctx is documented
		t.Error("nil ctx behaves as Classify")
	}
}

func TestAlreadyClassified(t *testing.T) {
	e := errors.New(errors.Integrity, "Verify", "size %d, want %d", 1, 2)
	if got := errors.Classify(e); got != e {
		t.Error("an *Error is returned unchanged")
	}
	if got := errors.Classify(fmt.Errorf("x: %w", e)); got != e || got.Kind != errors.Integrity {
		t.Error("a wrapped *Error keeps its kind")
	}
	// Every kind survives classification, even with a contradicting cause.
	for _, k := range errors.Kinds() {
		w := &errors.Error{Kind: k, Err: response("UploadPart", 503, "SlowDown")}
		if errors.Classify(w).Kind != k || errors.ClassifyContext(context.Background(), w).Kind != k {
			t.Errorf("kind %s changed", k)
		}
	}
	// A template around a classified *Error takes its kind and is flattened (one kind in the chain).
	tmpl := errors.Classify(&errors.Error{Op: "UploadPart", Bucket: "b", Key: "k", PartNumber: 3, Err: e})
	if tmpl.Kind != errors.Integrity || tmpl.Op != "UploadPart" || tmpl.PartNumber != 3 || tmpl.Message == "" {
		t.Errorf("template: %+v", tmpl)
	}
	if stderrors.Is(tmpl, errors.Transient) {
		t.Error("template matches a second kind")
	}
	if k := errors.Classify(&errors.Error{Op: "x"}).Kind; k != errors.Internal {
		t.Errorf("template without cause: %s", k)
	}
	if errors.Classify(nil) != nil || errors.ClassifyContext(context.Background(), nil) != nil {
		t.Error("Classify(nil) must be nil")
	}
	if errors.KindOf(nil) != errors.Unknown || errors.KindOf(io.EOF) != errors.Transient {
		t.Error("KindOf")
	}
}

// TestAWSSDKChain classifies the error chain aws-sdk-go-v2 returns, without an adapter: the op
// comes from smithy.OperationError, the status and request id from the response errors.
func TestAWSSDKChain(t *testing.T) {
	sdk := func(op string, status int, code string) error {
		return &smithy.OperationError{ServiceID: "S3", OperationName: op, Err: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
				Err:      &smithy.GenericAPIError{Code: code, Message: "msg " + code},
			},
			RequestID: "SDKREQ",
		}}
	}
	e := errors.Classify(sdk("CompleteMultipartUpload", 404, "NoSuchUpload"))
	if e.Kind != errors.Precondition || e.Op != "CompleteMultipartUpload" || e.StatusCode != 404 || e.RequestID != "SDKREQ" || e.Message != "msg NoSuchUpload" {
		t.Errorf("%+v", e)
	}
	e = errors.Classify(sdk("UploadPart", 404, "NoSuchUpload"))
	if e.Kind != errors.Transient || !e.UploadGone || !e.Retryable() { // a new upload can work
		t.Errorf("%+v", e)
	}
	if k := errors.Classify(sdk("PutObject", 503, "SlowDown")).Kind; k != errors.Throttled {
		t.Error(k)
	}
}

// TestRetryable: which kinds a sync manager may run again once safeput's own retries are spent.
func TestRetryable(t *testing.T) {
	want := map[errors.Kind]bool{errors.Unknown: true, errors.Transient: true, errors.Throttled: true}
	for _, k := range append([]errors.Kind{errors.Unknown}, errors.Kinds()...) {
		if got := (&errors.Error{Kind: k}).Retryable(); got != want[k] {
			t.Errorf("%s.Retryable() = %v, want %v", k, got, want[k])
		}
	}
	if (*errors.Error)(nil).Retryable() {
		t.Error("nil *Error is retryable")
	}
	if errors.Classify(response("UploadPart", 403, "AccessDenied")).Retryable() {
		t.Error("AccessDenied is retryable")
	}
	if !errors.Classify(response("UploadPart", 503, "SlowDown")).Retryable() {
		t.Error("SlowDown is not retryable")
	}
}

func TestErrorString(t *testing.T) {
	e := errors.Classify(&errors.Error{
		Op: "UploadPart", Bucket: "bkt", Key: "a/b", UploadID: "U1", PartNumber: 7, Attempts: 3,
		Err: fmt.Errorf("send: %w", &store.ResponseError{Op: "UploadPart", StatusCode: 400, Code: "BadDigest",
			Message:   "The Content-MD5 you specified did not match.\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024",
			RequestID: "R9", Err: urlErr(io.ErrUnexpectedEOF)}),
	})
	s := e.Error()
	want := "safeput: UploadPart bkt/a/b part 7 integrity code=BadDigest status=400 attempts=3 upload=U1 request=R9: "
	if !strings.HasPrefix(s, want) {
		t.Errorf("got  %s\nwant prefix %s", s, want)
	}
	for _, secret := range []string{"AKIAIOSFODNN7EXAMPLE", "fe5f80f77d5f", "0123abcdef", "\n"} {
		if strings.Contains(s, secret) || strings.Contains(e.Message, secret) && secret != "\n" {
			t.Errorf("%q leaked: %s", secret, s)
		}
	}
	if !strings.Contains(s, "Authorization: REDACTED (request id R9)") {
		t.Errorf("redaction marker missing: %s", s)
	}
	// The store's message is printed once even though the cause repeats it.
	if strings.Count(s, "did not match") != 1 {
		t.Errorf("message repeated: %s", s)
	}
	gone := errors.Classify(&errors.Error{Op: "UploadPart", Err: response("UploadPart", 404, "NoSuchUpload")}).Error()
	if !strings.Contains(gone, "upload gone") {
		t.Error(gone)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://h/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIAX%2F2026&X-Amz-Signature=abc&x=1": "https://h/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x=1",
		"x-amz-security-token=FQoGZX":                      "x-amz-security-token=REDACTED",
		"Authorization: AWS AKIAIOSFODNN7EXAMPLE:frJIUN8=": "Authorization: REDACTED",
		"key AKIAIOSFODNN7EXAMPLE in use":                  "key REDACTED in use",
		"SignatureDoesNotMatch: check your key":            "SignatureDoesNotMatch: check your key",
		"":                                                 "",
	} {
		if got := errors.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWrapAndPanic(t *testing.T) {
	cause := stderrors.New("etag mismatch")
	e := &errors.Error{Kind: errors.Integrity, Op: "Verify", Err: cause}
	if !stderrors.Is(e, errors.Integrity) || !stderrors.Is(e, cause) {
		t.Error("Wrap")
	}
	p := errors.FromPanic("UploadPart", io.EOF)
	if p.Kind != errors.Internal || !stderrors.Is(p, io.EOF) || !strings.Contains(p.Error(), "panic: EOF") {
		t.Error(p)
	}
}

// panicky is an error whose methods panic, as a buggy third-party error might.
type panicky struct{}

func (panicky) Error() string       { panic("bad Error") }
func (panicky) HTTPStatusCode() int { panic("bad status") }

func TestClassifyForeignPanic(t *testing.T) {
	if k := errors.Classify(panicky{}).Kind; k != errors.Internal {
		t.Error(k)
	}
}

// TestCodeKinds spells out, independently of CodeTable, the kind of the codes that decide what
// safeput does: a wrong row in the table (or a missing one, which falls back to the status
// rules) fails here. Complete is the kind on CompleteMultipartUpload where it differs.
func TestCodeKinds(t *testing.T) {
	cases := []struct {
		code       string
		status     int
		kind       errors.Kind
		complete   errors.Kind
		uploadGone bool
	}{
		{"SlowDown", 503, errors.Throttled, errors.Throttled, false},
		{"TooManyRequests", 429, errors.Throttled, errors.Throttled, false},
		{"XAmzContentChecksumMismatch", 400, errors.Integrity, errors.Integrity, false},
		{"BadDigest", 400, errors.Integrity, errors.Integrity, false},
		{"IncompleteBody", 400, errors.Integrity, errors.Integrity, false},
		{"EntityTooSmall", 400, errors.Compatibility, errors.Compatibility, false},
		{"InvalidPart", 400, errors.Compatibility, errors.Compatibility, false},
		{"NotImplemented", 501, errors.Compatibility, errors.Compatibility, false},
		{"NoSuchUpload", 404, errors.Transient, errors.Precondition, true},
		{"NoSuchBucket", 404, errors.Permanent, errors.Permanent, false},
		{"AccessDenied", 403, errors.Permanent, errors.Permanent, false},
		{"SignatureDoesNotMatch", 403, errors.Permanent, errors.Permanent, false},
		{"PreconditionFailed", 412, errors.Precondition, errors.Precondition, false},
		{"ConditionalRequestConflict", 409, errors.Precondition, errors.Precondition, false},
		{"InternalError", 500, errors.Transient, errors.Transient, false},
		{"ServiceUnavailable", 503, errors.Transient, errors.Transient, false},
		{"RequestTimeout", 400, errors.Transient, errors.Transient, false},
		{"RequestTimeTooSkewed", 403, errors.Transient, errors.Transient, false},
	}
	inTable := map[string]bool{}
	for _, r := range errors.CodeTable() {
		inTable[r.Code] = true
	}
	for _, c := range cases {
		if !inTable[c.code] {
			t.Errorf("%s: not in the code table", c.code)
		}
		// A misleading status: the code alone must decide.
		for _, status := range []int{c.status, 200, 500} {
			e := errors.Classify(response("UploadPart", status, c.code))
			if e.Kind != c.kind || e.UploadGone != c.uploadGone {
				t.Errorf("%s (HTTP %d) on UploadPart: %s, UploadGone %v; want %s, %v", c.code, status, e.Kind, e.UploadGone, c.kind, c.uploadGone)
			}
			tmpl := &errors.Error{Op: "CompleteMultipartUpload", Err: response("CompleteMultipartUpload", status, c.code)}
			if k := errors.Classify(tmpl).Kind; k != c.complete {
				t.Errorf("%s (HTTP %d) on Complete: %s, want %s", c.code, status, k, c.complete)
			}
		}
	}
}
