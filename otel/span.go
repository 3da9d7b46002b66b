package otel

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/writer"
)

// SpanWrite is the name of a write's span.
const SpanWrite = "safeput.write"

// The write span's attributes of safeput's own (aws.s3.bucket, aws.s3.key and aws.s3.upload_id
// are otelaws's; error.type the semantic conventions').
const (
	AttrSize       = attribute.Key("safeput.size")
	AttrPartSize   = attribute.Key("safeput.part_size")
	AttrParts      = attribute.Key("safeput.parts")
	AttrBytesSent  = attribute.Key("safeput.bytes_sent")
	AttrRequests   = attribute.Key("safeput.requests")
	AttrAttempt    = attribute.Key("safeput.attempt")
	AttrWait       = attribute.Key("safeput.wait")
	AttrErrorCode  = attribute.Key("safeput.error.code")
	AttrLeftBehind = attribute.Key("safeput.left_behind")
)

// The write span's events.
const (
	// EventRetry: an attempt is sent again; error.type and safeput.error.code say why,
	// safeput.wait (s) how long it waited, aws.s3.part_number which part.
	EventRetry = "safeput.retry"
	// EventStall: the attempt retried was cut by stall detection (no byte moved for the window).
	EventStall = "safeput.stall"
	// EventThrottle: the store throttled; safeput.wait (s) is the wait before the retry.
	EventThrottle = "safeput.throttle"
	// EventBudgetWait: a part buffer waited safeput.wait (s) for room in the memory budget.
	EventBudgetWait = "safeput.budget_wait"
	// EventAbort: the multipart upload was aborted after a failure (error.type set when the
	// abort itself failed).
	EventAbort = "safeput.abort"
	// EventVerify: what landed was compared; safeput.verification.method says how.
	EventVerify = "safeput.verify"
)

// StartWrite starts a write's span as a child of ctx's span (writer.Instrumentation).
func (in *Instrumentation) StartWrite(ctx context.Context, bucket, key string) (context.Context, writer.WriteSpan) {
	ctx, sp := in.tracer.Start(ctx, SpanWrite, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrBucket.String(bucket), AttrKey.String(key)))
	return ctx, &writeSpan{in: in, ctx: ctx, span: sp, start: time.Now()}
}

// writeSpan is one write's span and what its end records.
type writeSpan struct {
	in    *Instrumentation
	ctx   context.Context
	span  trace.Span
	start time.Time
	// For a failed write, which has no Result: the parts done and the largest part size seen.
	parts    atomic.Int64
	partSize atomic.Int64
	uploadID atomic.Value // string
	ended    atomic.Bool
}

func (s *writeSpan) Event(e writer.Event) {
	switch e.Type {
	case writer.EventPartDone:
		s.parts.Add(1)
		for {
			cur := s.partSize.Load()
			if e.Size <= cur || s.partSize.CompareAndSwap(cur, e.Size) {
				break
			}
		}
		if e.UploadID != "" && s.uploadID.Load() == nil {
			s.uploadID.Store(e.UploadID)
		}
	case writer.EventRetry:
		s.retry(e)
	case writer.EventBudgetWait:
		s.in.m.budgetWait.Record(s.ctx, seconds(e.Elapsed))
		if s.span.IsRecording() {
			s.span.AddEvent(EventBudgetWait, trace.WithAttributes(AttrWait.Float64(seconds(e.Elapsed)), AttrSize.Int64(e.Size)))
		}
	case writer.EventAbort:
		if s.span.IsRecording() {
			attrs := []attribute.KeyValue{AttrUploadID.String(e.UploadID)}
			if e.Err != nil {
				attrs = append(attrs, AttrErrorType.String(sperrors.KindOf(e.Err).String()))
			}
			s.span.AddEvent(EventAbort, trace.WithAttributes(attrs...))
		}
	case writer.EventVerify:
		if s.span.IsRecording() {
			s.span.AddEvent(EventVerify, trace.WithAttributes(AttrVerification.String(string(e.Method))))
		}
	}
}

func (s *writeSpan) retry(e writer.Event) {
	s.in.m.retries.Add(s.ctx, 1, metric.WithAttributeSet(kindSet(e.Kind)))
	if !s.span.IsRecording() {
		return
	}
	code := ""
	if se := asError(e.Err); se != nil {
		code = se.Code
	}
	wait := seconds(e.Elapsed)
	attrs := []attribute.KeyValue{AttrAttempt.Int(e.Attempt), AttrErrorType.String(e.Kind.String()), AttrWait.Float64(wait)}
	if e.PartNumber > 0 {
		attrs = append(attrs, AttrPartNumber.Int(int(e.PartNumber)))
	}
	if code != "" {
		attrs = append(attrs, AttrErrorCode.String(code))
	}
	s.span.AddEvent(EventRetry, trace.WithAttributes(attrs...))
	if code == sperrors.CodeStalled {
		s.span.AddEvent(EventStall, trace.WithAttributes(AttrAttempt.Int(e.Attempt-1), AttrPartNumber.Int(int(e.PartNumber))))
	}
	if e.Kind == sperrors.Throttled {
		s.span.AddEvent(EventThrottle, trace.WithAttributes(AttrWait.Float64(wait), AttrErrorCode.String(code)))
	}
}

func (s *writeSpan) End(res *writer.Result, err error) {
	if !s.ended.CompareAndSwap(false, true) {
		return
	}
	elapsed := time.Since(s.start)
	m := &s.in.m
	set := writeAttrs(res, err)
	m.writeDuration.Record(s.ctx, seconds(elapsed), metric.WithAttributeSet(set))
	m.writes.Add(s.ctx, 1, metric.WithAttributeSet(set))
	left := leftBehind(res, err)
	if left > 0 {
		m.leftBehind.Add(s.ctx, int64(left))
	}
	if s.span.IsRecording() {
		s.span.SetAttributes(s.endAttrs(res, err, left)...)
		if err != nil {
			recordFailure(s.span, err)
		}
	}
	s.span.End()
}

func (s *writeSpan) endAttrs(res *writer.Result, err error, left int) []attribute.KeyValue {
	if res != nil {
		attrs := []attribute.KeyValue{
			AttrOutcome.String(OutcomeLanded),
			AttrSize.Int64(res.Size),
			AttrParts.Int(res.Parts),
			AttrVerification.String(string(res.Verified)),
			AttrBytesSent.Int64(res.BytesSent),
			AttrRequests.Int(res.Requests),
		}
		if res.Multipart {
			attrs = append(attrs, AttrPartSize.Int64(res.PartSize), AttrUploadID.String(res.UploadID))
		} else {
			attrs = append(attrs, AttrPartSize.Int64(res.Size))
		}
		if left > 0 {
			attrs = append(attrs, AttrLeftBehind.Int(left))
		}
		return attrs
	}
	attrs := []attribute.KeyValue{
		AttrOutcome.String(OutcomeFailed),
		AttrErrorType.String(sperrors.KindOf(err).String()),
		AttrParts.Int64(s.parts.Load()),
	}
	if ps := s.partSize.Load(); ps > 0 {
		attrs = append(attrs, AttrPartSize.Int64(ps))
	}
	if id, _ := s.uploadID.Load().(string); id != "" {
		attrs = append(attrs, AttrUploadID.String(id))
	}
	if se := asError(err); se != nil && se.Code != "" {
		attrs = append(attrs, AttrErrorCode.String(se.Code))
	}
	if left > 0 {
		attrs = append(attrs, AttrLeftBehind.Int(left))
	}
	return attrs
}

// leftBehind is how many incomplete uploads the write says it left (0 for a clean one).
func leftBehind(res *writer.Result, err error) int {
	if res != nil {
		return len(res.LeftBehind)
	}
	if se := asError(err); se != nil && se.AbortFailed {
		return 1
	}
	return 0
}

func kindSet(k sperrors.Kind) attribute.Set {
	if s, ok := kindSets[k]; ok {
		return s
	}
	return attribute.NewSet(AttrErrorType.String(k.String()))
}
