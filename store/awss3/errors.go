package awss3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/safeput/safeput/internal/s3error"
	"github.com/safeput/safeput/store"
)

// call is the state of one request: its operation name and what the raw response looked like
// before the SDK deserialized it.
type call struct {
	op string
	// status is the HTTP status as received (the SDK may rewrite a 200 <Error> to 500 later).
	status int
	// emptyErrorBody is true when an error status came with no body, in which case the SDK
	// invents a code from the status text ("NotFound"); the contract wants "" then.
	emptyErrorBody bool
	// errorBodyLost is why reading an error status's body failed (the connection dropped
	// before the error document arrived), so the error can say the code is unknown, not absent.
	errorBodyLost error
}

func newCall(op string) *call { return &call{op: op} }

// maxErrorBody bounds how much of an error body is buffered to see whether it is empty.
const maxErrorBody = 1 << 20

// addCapture inserts the raw-response capture as the innermost deserialize middleware, so it
// sees the response exactly as the transport returned it.
func (c *call) addCapture(stack *middleware.Stack) error {
	return stack.Deserialize.Add(captureMiddleware{c}, middleware.After)
}

type captureMiddleware struct{ c *call }

func (captureMiddleware) ID() string { return "safeput:CaptureRawResponse" }

func (m captureMiddleware) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	out middleware.DeserializeOutput, md middleware.Metadata, err error,
) {
	out, md, err = next.HandleDeserialize(ctx, in)
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp == nil || resp.Response == nil || resp.StatusCode == 0 {
		return out, md, err
	}
	m.c.status = resp.StatusCode
	if resp.StatusCode >= 300 && resp.Body != nil {
		buf, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		m.c.emptyErrorBody = len(bytes.TrimSpace(buf)) == 0
		m.c.errorBodyLost = rerr
		// Hand the deserializer the same bytes (and any read error) it would have seen.
		resp.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(buf), resp.Body), Closer: resp.Body}
	}
	return out, md, err
}

type replayBody struct {
	io.Reader
	io.Closer
}

// wrap turns an SDK error into the contract's shape: a *store.ResponseError when the store
// answered, the transport error wrapped with the op name when it did not.
func (c *call) wrap(err error) error {
	var re *awshttp.ResponseError
	// The SDK fills in an empty response (status 0) when the request was never answered.
	if !errors.As(err, &re) || re.Response == nil || re.Response.Response == nil || re.HTTPStatusCode() == 0 {
		return fmt.Errorf("%s: %w", c.op, err)
	}
	status := re.HTTPStatusCode()
	var api smithy.APIError
	isAPI := errors.As(err, &api)
	if !isAPI && status >= 200 && status < 300 && isTransport(err) {
		// The status line arrived but the body was cut off: that is a lost connection, not an
		// answer, so keep net.Error / context errors reachable without a ResponseError.
		return fmt.Errorf("%s: %w", c.op, err)
	}
	out := &store.ResponseError{
		Op:         c.op,
		StatusCode: status,
		RequestID:  re.ServiceRequestID(),
		RetryAfter: retryAfter(re.Response.Header, time.Now()),
		Err:        err,
	}
	switch {
	case c.errorBodyLost != nil:
		// Whatever the SDK made of a cut-off document is not the store's word.
		out.Message = "error document lost: " + c.errorBodyLost.Error()
		out.DocumentLost = c.errorBodyLost
	case isAPI && !c.emptyErrorBody:
		out.Code, out.Message = api.ErrorCode(), api.ErrorMessage()
	case !isAPI && status >= 200 && status < 300:
		// A success status whose body the SDK could not parse: malformed XML.
		out.Message = "unparsable response body"
		out.Err = fmt.Errorf("%w: %w", store.ErrNonCompliant, err)
	}
	return out
}

// isTransport reports whether err comes from the connection rather than the store's answer.
func isTransport(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// nonCompliant reports a success answer that broke the protocol (no ETag, no UploadId...).
func (c *call) nonCompliant(md middleware.Metadata, format string, args ...any) error {
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	return &store.ResponseError{
		Op:         c.op,
		StatusCode: status,
		Message:    fmt.Sprintf(format, args...),
		RequestID:  requestID(md),
		Err:        store.ErrNonCompliant,
	}
}

func requestID(md middleware.Metadata) string {
	id, _ := awsmiddleware.GetRequestIDMetadata(md)
	return id
}

// retryAfter reads the store's hint with the errors package's parser: x-amz-retry-after
// (milliseconds) first, else Retry-After (seconds or an HTTP date); 0 when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	return s3error.ParseRetryAfter(h.Get("Retry-After"), h.Get("x-amz-retry-after"), now)
}

// s3Error200ID names the SDK's check for an error document in a 200 answer.
const s3Error200ID = "S3:ProcessResponseFor200Error"

// skip200CheckWhenEmpty wraps the SDK's check for an error document in a 200 answer so it runs
// only on an answer that may have a body. The check builds an XML decoder, buffers and all, for
// every answer, the body-less 200 of each UploadPart included, where it can only find nothing
// (BenchmarkUploadPart's B/op counts it: `go test -run '^$' -bench UploadPart ./store/awss3/`).
func skip200CheckWhenEmpty(stack *middleware.Stack) error {
	check, ok := stack.Deserialize.Get(s3Error200ID)
	if !ok {
		return nil
	}
	_, err := stack.Deserialize.Swap(s3Error200ID, skipWhenEmpty{check: check})
	return err
}

type skipWhenEmpty struct {
	check middleware.DeserializeMiddleware
}

func (skipWhenEmpty) ID() string { return s3Error200ID }

func (m skipWhenEmpty) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if resp, ok := out.RawResponse.(*smithyhttp.Response); err == nil && ok && resp.Response != nil && resp.ContentLength == 0 {
		return out, md, nil // nothing to find: the check would stop at the empty body
	}
	return m.check.HandleDeserialize(ctx, in, answered{out, md, err})
}

// answered hands the check the answer already received, so the request is not sent twice.
type answered struct {
	out middleware.DeserializeOutput
	md  middleware.Metadata
	err error
}

func (a answered) HandleDeserialize(context.Context, middleware.DeserializeInput) (middleware.DeserializeOutput, middleware.Metadata, error) {
	return a.out, a.md, a.err
}
