package otlp

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// SpanExporter sends spans to an OTLP/HTTP collector: an sdktrace.SpanExporter.
type SpanExporter struct {
	c       *client
	stopped atomic.Bool
}

var _ sdktrace.SpanExporter = (*SpanExporter)(nil)

// NewSpanExporter returns an exporter that posts to cfg.URL.
func NewSpanExporter(cfg Config) *SpanExporter {
	return &SpanExporter{c: newClient(cfg, "spans")}
}

// ExportSpans encodes spans as one ExportTraceServiceRequest and posts it. After Shutdown it sends
// nothing.
func (e *SpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() || len(spans) == 0 {
		return nil
	}
	return e.c.post(ctx, EncodeTraces(spans))
}

// Shutdown stops the exporter; the batch processor has flushed through ExportSpans before.
func (e *SpanExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.c.close()
	return nil
}

// resScope groups spans (or metrics) the way the protocol nests them: by resource, then scope.
type resScope struct {
	res   attribute.Distinct
	scope instrumentation.Scope
}

// EncodeTraces returns the ExportTraceServiceRequest of spans (resource_spans 1), grouped by
// resource and scope in their order of first appearance. Nil spans are skipped.
func EncodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type group struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	var resOrder []sdktrace.ReadOnlySpan // the first span of each resource, for its resource
	byRes := map[attribute.Distinct][]*group{}
	groups := map[resScope]*group{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		rk := s.Resource().Equivalent()
		k := resScope{rk, s.InstrumentationScope()}
		g, ok := groups[k]
		if !ok {
			if _, seen := byRes[rk]; !seen {
				resOrder = append(resOrder, s)
			}
			g = &group{scope: k.scope}
			groups[k] = g
			byRes[rk] = append(byRes[rk], g)
		}
		g.spans = append(g.spans, s)
	}
	var b []byte
	for _, first := range resOrder {
		res := first.Resource()
		// ResourceSpans: resource 1, scope_spans 2, schema_url 3.
		var rs int
		b, rs = beginMsg(b, 1)
		b = appendResource(b, 1, res)
		for _, g := range byRes[res.Equivalent()] {
			// ScopeSpans: scope 1, spans 2, schema_url 3.
			var ss int
			b, ss = beginMsg(b, 2)
			b = appendScope(b, 1, g.scope)
			for _, s := range g.spans {
				b = appendSpan(b, 2, s)
			}
			b = appendString(b, 3, g.scope.SchemaURL)
			b = endMsg(b, ss)
		}
		b = appendString(b, 3, schemaURL(res))
		b = endMsg(b, rs)
	}
	return b
}

// The span flags' bits above the W3C trace flags: whether the parent's remoteness is known, and
// whether it is remote (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK, SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK).
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if parent.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// Span: trace_id 1, span_id 2, trace_state 3, parent_span_id 4, name 5, kind 6, start 7, end 8,
// attributes 9, dropped_attributes_count 10, events 11, dropped_events_count 12, links 13,
// dropped_links_count 14, status 15, flags 16.
func appendSpan(b []byte, num protowire.Number, s sdktrace.ReadOnlySpan) []byte {
	b, start := beginMsg(b, num)
	sc := s.SpanContext()
	if sc.HasTraceID() {
		tid := sc.TraceID()
		b = appendBytes(b, 1, tid[:])
	}
	if sc.HasSpanID() {
		sid := sc.SpanID()
		b = appendBytes(b, 2, sid[:])
	}
	b = appendString(b, 3, sc.TraceState().String())
	parent := s.Parent()
	if parent.HasSpanID() {
		pid := parent.SpanID()
		b = appendBytes(b, 4, pid[:])
	}
	b = appendString(b, 5, s.Name())
	if k := s.SpanKind(); k >= trace.SpanKindInternal && k <= trace.SpanKindConsumer {
		// trace.SpanKind numbers its kinds as the protocol does (INTERNAL 1 … CONSUMER 5).
		b = appendVarint(b, 6, uint64(k))
	}
	b = appendFixed64(b, 7, unixNano(s.StartTime()))
	b = appendFixed64(b, 8, unixNano(s.EndTime()))
	b = appendKeyValues(b, 9, s.Attributes())
	b = appendVarint(b, 10, nonNeg(s.DroppedAttributes()))
	for _, ev := range s.Events() {
		// Event: time 1, name 2, attributes 3, dropped_attributes_count 4.
		var es int
		b, es = beginMsg(b, 11)
		b = appendFixed64(b, 1, unixNano(ev.Time))
		b = appendString(b, 2, ev.Name)
		b = appendKeyValues(b, 3, ev.Attributes)
		b = appendVarint(b, 4, nonNeg(ev.DroppedAttributeCount))
		b = endMsg(b, es)
	}
	b = appendVarint(b, 12, nonNeg(s.DroppedEvents()))
	for _, l := range s.Links() {
		// Link: trace_id 1, span_id 2, trace_state 3, attributes 4, dropped_attributes_count 5,
		// flags 6.
		var ls int
		b, ls = beginMsg(b, 13)
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytes(b, 1, tid[:])
		b = appendBytes(b, 2, sid[:])
		b = appendString(b, 3, l.SpanContext.TraceState().String())
		b = appendKeyValues(b, 4, l.Attributes)
		b = appendVarint(b, 5, nonNeg(l.DroppedAttributeCount))
		b = appendFixed32(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = endMsg(b, ls)
	}
	b = appendVarint(b, 14, nonNeg(s.DroppedLinks()))
	// Status: message 2, code 3 (UNSET 0, OK 1, ERROR 2: not codes.Code's order).
	st := s.Status()
	var code uint64
	switch st.Code {
	case codes.Ok:
		code = 1
	case codes.Error:
		code = 2
	}
	var ss int
	b, ss = beginMsg(b, 15)
	b = appendString(b, 2, st.Description)
	b = appendVarint(b, 3, code)
	b = endMsg(b, ss)
	b = appendFixed32(b, 16, spanFlags(sc.TraceFlags(), parent))
	return endMsg(b, start)
}

func nonNeg(n int) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}
