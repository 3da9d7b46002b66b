package otel

import (
	"context"
	stderrors "errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// The request spans' attributes, as otelaws and the semantic conventions name them.
const (
	AttrBucket      = attribute.Key("aws.s3.bucket")
	AttrKey         = attribute.Key("aws.s3.key")
	AttrUploadID    = attribute.Key("aws.s3.upload_id")
	AttrPartNumber  = attribute.Key("aws.s3.part_number")
	AttrRequestID   = attribute.Key("aws.request_id")
	AttrStatusCode  = attribute.Key("http.response.status_code")
	AttrResendCount = attribute.Key("http.request.resend_count")
	AttrRPCSystem   = attribute.Key("rpc.system")
	AttrRPCService  = attribute.Key("rpc.service")
	// AttrRequest is safeput's: RequestProbe on a request the write sends to learn what its
	// endpoint does rather than to store the object (the checksum probe's own upload: its create,
	// its part, its abort), which no write's Result counts; absent on the write's own requests.
	AttrRequest = attribute.Key("safeput.request")
)

// RequestProbe is AttrRequest's value on the checksum probe's requests (writer.SaveProbe).
const RequestProbe = "probe"

// isProbe reports whether ctx is a request of the writer's checksum probe.
func isProbe(ctx context.Context) bool { return ctx.Value(writer.SaveProbe) == true }

// operations are the store requests, named as S3 (and otelaws, prefixed "S3.") names them.
var operations = []string{
	"PutObject", "CreateMultipartUpload", "UploadPart", "ListParts", "CompleteMultipartUpload",
	"AbortMultipartUpload", "HeadObject", "GetObject", "DeleteObject", "ListMultipartUploads",
}

// spanNames are "S3."+op, built once.
var spanNames = func() map[string]string {
	m := make(map[string]string, len(operations))
	for _, op := range operations {
		m[op] = "S3." + op
	}
	return m
}()

var rpcBase = []attribute.KeyValue{AttrRPCSystem.String("aws-api"), AttrRPCService.String("S3")}

// WrapStore returns st with a client span and metrics per request (writer.Instrumentation).
func (in *Instrumentation) WrapStore(st store.Store) store.Store {
	if st == nil {
		return nil
	}
	return &tracedStore{next: st, in: in}
}

// tracedStore is a store.Store that reports every request it passes on.
type tracedStore struct {
	next store.Store
	in   *Instrumentation
}

// Unwrap keeps the capabilities of the store underneath (store.Find): its endpoint and TLS facts.
func (s *tracedStore) Unwrap() store.Store { return s.next }

// req is one request in flight: its span, and what it records at the end.
type req struct {
	ctx   context.Context
	span  trace.Span
	op    string
	probe bool // the checksum probe's (AttrRequest)
}

func (s *tracedStore) start(ctx context.Context, op, bucket, key, uploadID string, part int32) (context.Context, req) {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, rpcBase...)
	attrs = append(attrs, AttrRPCMethod.String(op), AttrBucket.String(bucket))
	if key != "" {
		attrs = append(attrs, AttrKey.String(key))
	}
	if uploadID != "" {
		attrs = append(attrs, AttrUploadID.String(uploadID))
	}
	if part > 0 {
		attrs = append(attrs, AttrPartNumber.Int(int(part)))
	}
	if n := retry.AttemptFromContext(ctx); n > 1 {
		attrs = append(attrs, AttrResendCount.Int(n-1))
	}
	probe := isProbe(ctx)
	if probe {
		attrs = append(attrs, AttrRequest.String(RequestProbe))
	}
	ctx, sp := s.in.tracer.Start(ctx, spanNames[op], trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, req{ctx: ctx, span: sp, op: op, probe: probe}
}

// end closes r's span with the request's outcome and counts it.
func (s *tracedStore) end(r req, requestID string, err error) {
	failed := err != nil
	var kind sperrors.Kind
	if failed {
		kind = sperrors.ClassifyContext(r.ctx, err).Kind
	}
	s.in.m.requests.Add(r.ctx, 1, metric.WithAttributeSet(requestAttrs(r.op, kind, failed, r.probe)))
	if r.span.IsRecording() {
		var re *store.ResponseError
		if stderrors.As(err, &re) {
			if re.StatusCode > 0 {
				r.span.SetAttributes(AttrStatusCode.Int(re.StatusCode))
			}
			if requestID == "" {
				requestID = re.RequestID
			}
		}
		if requestID != "" {
			r.span.SetAttributes(AttrRequestID.String(requestID))
		}
		if failed {
			r.span.SetAttributes(AttrErrorType.String(kind.String()))
			recordFailure(r.span, err)
		}
	}
	r.span.End()
}

func (s *tracedStore) sent(ctx context.Context, n int64) {
	switch {
	case n <= 0:
	case isProbe(ctx):
		s.in.m.bytes.Add(ctx, n, metric.WithAttributeSet(probeSet))
	default:
		s.in.m.bytes.Add(ctx, n)
	}
}

func (s *tracedStore) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	if in == nil {
		return s.next.PutObject(ctx, in)
	}
	ctx, r := s.start(ctx, "PutObject", in.Bucket, in.Key, "", 0)
	s.sent(ctx, in.ContentLength)
	out, err := s.next.PutObject(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
	}
	s.end(r, id, err)
	return out, err
}

func (s *tracedStore) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if in == nil {
		return s.next.CreateMultipartUpload(ctx, in)
	}
	ctx, r := s.start(ctx, "CreateMultipartUpload", in.Bucket, in.Key, "", 0)
	out, err := s.next.CreateMultipartUpload(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
		if out.UploadID != "" && r.span.IsRecording() {
			r.span.SetAttributes(AttrUploadID.String(out.UploadID))
		}
	}
	s.end(r, id, err)
	return out, err
}

func (s *tracedStore) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	if in == nil {
		return s.next.UploadPart(ctx, in)
	}
	ctx, r := s.start(ctx, "UploadPart", in.Bucket, in.Key, in.UploadID, in.PartNumber)
	s.sent(ctx, in.ContentLength)
	out, err := s.next.UploadPart(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
	}
	s.end(r, id, err)
	return out, err
}

func (s *tracedStore) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	if in == nil {
		return s.next.ListParts(ctx, in)
	}
	ctx, r := s.start(ctx, "ListParts", in.Bucket, in.Key, in.UploadID, 0)
	out, err := s.next.ListParts(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
	}
	s.end(r, id, err)
	return out, err
}

func (s *tracedStore) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	if in == nil {
		return s.next.CompleteMultipartUpload(ctx, in)
	}
	ctx, r := s.start(ctx, "CompleteMultipartUpload", in.Bucket, in.Key, in.UploadID, 0)
	out, err := s.next.CompleteMultipartUpload(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
	}
	s.end(r, id, err)
	return out, err
}

func (s *tracedStore) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	if in == nil {
		return s.next.AbortMultipartUpload(ctx, in)
	}
	ctx, r := s.start(ctx, "AbortMultipartUpload", in.Bucket, in.Key, in.UploadID, 0)
	err := s.next.AbortMultipartUpload(ctx, in)
	s.end(r, "", err)
	return err
}

func (s *tracedStore) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	if in == nil {
		return s.next.HeadObject(ctx, in)
	}
	ctx, r := s.start(ctx, "HeadObject", in.Bucket, in.Key, "", 0)
	out, err := s.next.HeadObject(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
	}
	s.end(r, id, err)
	return out, err
}

// GetObject's span ends when the answer's headers arrive; reading Body is the caller's, outside
// it (the read-back's time is the write span's).
func (s *tracedStore) GetObject(ctx context.Context, in *store.GetObjectInput) (*store.GetObjectOutput, error) {
	if in == nil {
		return s.next.GetObject(ctx, in)
	}
	ctx, r := s.start(ctx, "GetObject", in.Bucket, in.Key, "", 0)
	out, err := s.next.GetObject(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
	}
	s.end(r, id, err)
	return out, err
}

func (s *tracedStore) DeleteObject(ctx context.Context, in *store.DeleteObjectInput) error {
	if in == nil {
		return s.next.DeleteObject(ctx, in)
	}
	ctx, r := s.start(ctx, "DeleteObject", in.Bucket, in.Key, "", 0)
	err := s.next.DeleteObject(ctx, in)
	s.end(r, "", err)
	return err
}

func (s *tracedStore) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	if in == nil {
		return s.next.ListMultipartUploads(ctx, in)
	}
	ctx, r := s.start(ctx, "ListMultipartUploads", in.Bucket, in.Prefix, "", 0)
	out, err := s.next.ListMultipartUploads(ctx, in)
	id := ""
	if out != nil {
		id = out.RequestID
	}
	s.end(r, id, err)
	return out, err
}

func asError(err error) *sperrors.Error {
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		return e
	}
	return nil
}
