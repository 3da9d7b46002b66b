package otlp

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// The tests decode what the encoder writes with the official OTLP Go packages and compare it
// with the message built by hand: a wrong field number, wire type or enum value fails them.

// allAttrs holds one attribute of every attribute.Type, and anyAll what each must decode to.
var allAttrs = []attribute.KeyValue{
	attribute.Bool("bool", true),
	attribute.Bool("false", false),
	attribute.Int64("int", -42),
	attribute.Int64("zero", 0),
	attribute.Float64("float", 1.5),
	attribute.String("string", "s"),
	attribute.String("empty-string", ""),
	attribute.BoolSlice("bools", []bool{true, false}),
	attribute.Int64Slice("ints", []int64{1, -2}),
	attribute.Float64Slice("floats", []float64{0.25, -3}),
	attribute.StringSlice("strings", []string{"a", ""}),
	attribute.ByteSlice("bytes", []byte{0, 1, 255}),
	attribute.Slice("slice", attribute.IntValue(7), attribute.StringValue("x"), attribute.SliceValue(attribute.BoolValue(true))),
	attribute.Map("map", attribute.String("k", "v"), attribute.Map("inner", attribute.Int("n", 3))),
	{Key: "empty"}, // attribute.EMPTY
	attribute.StringSlice("no-strings", nil),
}

func str(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
func boolv(b bool) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
}
func intv(i int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
}
func dbl(f float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
}
func arr(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}
func kvl(kvs ...*commonpb.KeyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
}
func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}

var anyAll = []*commonpb.KeyValue{
	kv("bool", boolv(true)),
	kv("false", boolv(false)),
	kv("int", intv(-42)),
	kv("zero", intv(0)),
	kv("float", dbl(1.5)),
	kv("string", str("s")),
	kv("empty-string", str("")),
	kv("bools", arr(boolv(true), boolv(false))),
	kv("ints", arr(intv(1), intv(-2))),
	kv("floats", arr(dbl(0.25), dbl(-3))),
	kv("strings", arr(str("a"), str(""))),
	kv("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 255}}}),
	kv("slice", arr(intv(7), str("x"), arr(boolv(true)))),
	kv("map", kvl(kv("inner", kvl(kv("n", intv(3)))), kv("k", str("v")))), // attribute.Map sorts by key
	kv("empty", &commonpb.AnyValue{}),
	kv("no-strings", arr()),
}

func equal(t *testing.T, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("decoded:\n%s\nwant:\n%s", prototext.Format(got), prototext.Format(want))
	}
}

var (
	t0  = time.Unix(1700000000, 123456789)
	t1  = t0.Add(1500 * time.Millisecond)
	tid = trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sid = trace.SpanID{1, 1, 2, 3, 5, 8, 13, 21}
	pid = trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}
	res = resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "ingest"), attribute.Int("pid", 12))
	scope = instrumentation.Scope{Name: "github.com/safeput/safeput/otel", Version: "0.1.0",
		SchemaURL: "https://scope", Attributes: attribute.NewSet(attribute.String("s", "v"))}
)

var resPB = &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("pid", intv(12)), kv("service.name", str("ingest"))}}
var scopePB = &commonpb.InstrumentationScope{Name: scope.Name, Version: scope.Version, Attributes: []*commonpb.KeyValue{kv("s", str("v"))}}

func TestEncodeTraces(t *testing.T) {
	ts, _ := trace.ParseTraceState("k=v")
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid, Remote: true, TraceFlags: trace.FlagsSampled})
	spans := tracetest.SpanStubs{
		{
			Name:        "safeput.write",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts}),
			Parent:      parent,
			SpanKind:    trace.SpanKindClient,
			StartTime:   t0,
			EndTime:     t1,
			Attributes:  allAttrs,
			Events: []sdktrace.Event{{Name: "throttle", Time: t0.Add(time.Second), Attributes: []attribute.KeyValue{attribute.Float64("wait", 0.5)}, DroppedAttributeCount: 2},
				{Name: "bare"}},
			Links:                []sdktrace.Link{{SpanContext: parent, Attributes: []attribute.KeyValue{attribute.String("l", "v")}, DroppedAttributeCount: 1}},
			Status:               sdktrace.Status{Code: codes.Error, Description: "boom"},
			DroppedAttributes:    3,
			DroppedEvents:        4,
			DroppedLinks:         5,
			Resource:             res,
			InstrumentationScope: scope,
		},
		{ // A span with nothing set: zero times, no ids, no resource.
			Name:   "bare",
			Status: sdktrace.Status{Code: codes.Ok},
		},
		{
			Name:                 "S3.UploadPart",
			SpanContext:          trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid}),
			SpanKind:             trace.SpanKindInternal,
			Resource:             res,
			InstrumentationScope: scope,
		},
	}.Snapshots()
	var got colltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(EncodeTraces(spans), &got); err != nil {
		t.Fatal(err)
	}
	want := &colltrace.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{
			Resource: resPB,
			ScopeSpans: []*tracepb.ScopeSpans{{
				Scope: scopePB,
				Spans: []*tracepb.Span{
					{
						TraceId: tid[:], SpanId: sid[:], TraceState: "k=v", ParentSpanId: pid[:],
						Flags: 0x01 | 0x100 | 0x200,
						Name:  "safeput.write", Kind: tracepb.Span_SPAN_KIND_CLIENT,
						StartTimeUnixNano: uint64(t0.UnixNano()), EndTimeUnixNano: uint64(t1.UnixNano()),
						Attributes: anyAll, DroppedAttributesCount: 3,
						Events: []*tracepb.Span_Event{
							{TimeUnixNano: uint64(t0.Add(time.Second).UnixNano()), Name: "throttle", Attributes: []*commonpb.KeyValue{kv("wait", dbl(0.5))}, DroppedAttributesCount: 2},
							{Name: "bare"},
						},
						DroppedEventsCount: 4,
						Links: []*tracepb.Span_Link{{TraceId: tid[:], SpanId: pid[:], Attributes: []*commonpb.KeyValue{kv("l", str("v"))},
							DroppedAttributesCount: 1, Flags: 0x01 | 0x100 | 0x200}},
						DroppedLinksCount: 5,
						Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "boom"},
					},
					{TraceId: tid[:], SpanId: pid[:], Name: "S3.UploadPart", Kind: tracepb.Span_SPAN_KIND_INTERNAL, Flags: 0x100, Status: &tracepb.Status{}},
				},
				SchemaUrl: "https://scope",
			}},
			SchemaUrl: "https://opentelemetry.io/schemas/1.26.0",
		},
		{
			Resource: &resourcepb.Resource{},
			ScopeSpans: []*tracepb.ScopeSpans{{
				Scope: &commonpb.InstrumentationScope{},
				Spans: []*tracepb.Span{{Name: "bare", Flags: 0x100, Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}}},
			}},
		},
	}}
	equal(t, &got, want)
}

func TestEncodeTracesEmpty(t *testing.T) {
	for _, spans := range [][]sdktrace.ReadOnlySpan{nil, {}, {nil}} {
		b := EncodeTraces(spans)
		var got colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		equal(t, &got, &colltrace.ExportTraceServiceRequest{})
	}
}

func ptr(f float64) *float64 { return &f }

func TestEncodeMetrics(t *testing.T) {
	set := attribute.NewSet(attribute.String("op", "UploadPart"), attribute.Bool("ok", true))
	setPB := []*commonpb.KeyValue{kv("ok", boolv(true)), kv("op", str("UploadPart"))}
	ex := metricdata.Exemplar[int64]{FilteredAttributes: []attribute.KeyValue{attribute.Int("f", 1)}, Time: t1, Value: 9, SpanID: sid[:], TraceID: tid[:]}
	rm := &metricdata.ResourceMetrics{
		Resource: res,
		ScopeMetrics: []metricdata.ScopeMetrics{{
			Scope: scope,
			Metrics: []metricdata.Metrics{
				{Name: "safeput.writes", Description: "writes", Unit: "{write}", Data: metricdata.Sum[int64]{
					Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
					DataPoints: []metricdata.DataPoint[int64]{{Attributes: set, StartTime: t0, Time: t1, Value: 3, Exemplars: []metricdata.Exemplar[int64]{ex}}, {Value: 0}},
				}},
				{Name: "safeput.budget.usage", Unit: "By", Data: metricdata.Sum[int64]{
					Temporality: metricdata.CumulativeTemporality,
					DataPoints:  []metricdata.DataPoint[int64]{{Time: t1, Value: -5}},
				}},
				{Name: "fsum", Data: metricdata.Sum[float64]{
					Temporality: metricdata.DeltaTemporality, IsMonotonic: true,
					DataPoints: []metricdata.DataPoint[float64]{{Time: t1, Value: 2.5, Exemplars: []metricdata.Exemplar[float64]{{Value: 0.5}}}},
				}},
				{Name: "igauge", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Time: t1, Value: 7}}}},
				{Name: "fgauge", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: t1, Value: -0.5}}}},
				{Name: "safeput.write.duration", Unit: "s", Data: metricdata.Histogram[float64]{
					Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.HistogramDataPoint[float64]{{
						Attributes: set, StartTime: t0, Time: t1, Count: 3, Bounds: []float64{0.1, 1, 10}, BucketCounts: []uint64{0, 2, 1, 0},
						Min: metricdata.NewExtrema(0.2), Max: metricdata.NewExtrema(4.0), Sum: 5.5,
					}, {Count: 0, Bounds: []float64{1}, BucketCounts: []uint64{0, 0}}},
				}},
				{Name: "ihist", Data: metricdata.Histogram[int64]{
					Temporality: metricdata.DeltaTemporality,
					DataPoints:  []metricdata.HistogramDataPoint[int64]{{Count: 1, Bounds: []float64{5}, BucketCounts: []uint64{1, 0}, Min: metricdata.NewExtrema[int64](2), Max: metricdata.NewExtrema[int64](2), Sum: 2}},
				}},
				{Name: "fexp", Data: metricdata.ExponentialHistogram[float64]{
					Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{
						Attributes: set, StartTime: t0, Time: t1, Count: 6, Min: metricdata.NewExtrema(-1.0), Max: metricdata.NewExtrema(300.0), Sum: 320,
						Scale: -2, ZeroCount: 1, ZeroThreshold: 0.001,
						PositiveBucket: metricdata.ExponentialBucket{Offset: -3, Counts: []uint64{1, 0, 300}},
						NegativeBucket: metricdata.ExponentialBucket{Offset: 2, Counts: []uint64{1}},
					}},
				}},
				{Name: "iexp", Data: metricdata.ExponentialHistogram[int64]{
					Temporality: metricdata.DeltaTemporality,
					DataPoints:  []metricdata.ExponentialHistogramDataPoint[int64]{{Count: 1, Sum: 4, Scale: 3}},
				}},
				{Name: "summary", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{
					Attributes: set, StartTime: t0, Time: t1, Count: 4, Sum: 10,
					QuantileValues: []metricdata.QuantileValue{{Quantile: 0, Value: 1}, {Quantile: 0.5, Value: 2}, {Quantile: 1, Value: 4}},
				}}}},
			},
		}, {}},
	}
	b, skipped := EncodeMetrics(rm)
	if skipped != 0 {
		t.Errorf("%d skipped", skipped)
	}
	var got collmetrics.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	n0, n1 := uint64(t0.UnixNano()), uint64(t1.UnixNano())
	cum, delta := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	asInt := func(v int64) *metricspb.NumberDataPoint_AsInt { return &metricspb.NumberDataPoint_AsInt{AsInt: v} }
	asDbl := func(v float64) *metricspb.NumberDataPoint_AsDouble {
		return &metricspb.NumberDataPoint_AsDouble{AsDouble: v}
	}
	want := &collmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource:  resPB,
		SchemaUrl: "https://opentelemetry.io/schemas/1.26.0",
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:     scopePB,
			SchemaUrl: "https://scope",
			Metrics: []*metricspb.Metric{
				{Name: "safeput.writes", Description: "writes", Unit: "{write}", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
					AggregationTemporality: cum, IsMonotonic: true,
					DataPoints: []*metricspb.NumberDataPoint{
						{Attributes: setPB, StartTimeUnixNano: n0, TimeUnixNano: n1, Value: asInt(3), Exemplars: []*metricspb.Exemplar{{
							FilteredAttributes: []*commonpb.KeyValue{kv("f", intv(1))}, TimeUnixNano: n1,
							Value: &metricspb.Exemplar_AsInt{AsInt: 9}, SpanId: sid[:], TraceId: tid[:],
						}}},
						{Value: asInt(0)},
					},
				}}},
				{Name: "safeput.budget.usage", Unit: "By", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
					AggregationTemporality: cum,
					DataPoints:             []*metricspb.NumberDataPoint{{TimeUnixNano: n1, Value: asInt(-5)}},
				}}},
				{Name: "fsum", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
					AggregationTemporality: delta, IsMonotonic: true,
					DataPoints: []*metricspb.NumberDataPoint{{TimeUnixNano: n1, Value: asDbl(2.5),
						Exemplars: []*metricspb.Exemplar{{Value: &metricspb.Exemplar_AsDouble{AsDouble: 0.5}}}}},
				}}},
				{Name: "igauge", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{TimeUnixNano: n1, Value: asInt(7)}}}}},
				{Name: "fgauge", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{TimeUnixNano: n1, Value: asDbl(-0.5)}}}}},
				{Name: "safeput.write.duration", Unit: "s", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
					AggregationTemporality: cum,
					DataPoints: []*metricspb.HistogramDataPoint{
						{Attributes: setPB, StartTimeUnixNano: n0, TimeUnixNano: n1, Count: 3, Sum: ptr(5.5),
							BucketCounts: []uint64{0, 2, 1, 0}, ExplicitBounds: []float64{0.1, 1, 10}, Min: ptr(0.2), Max: ptr(4)},
						{Sum: ptr(0), BucketCounts: []uint64{0, 0}, ExplicitBounds: []float64{1}},
					},
				}}},
				{Name: "ihist", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
					AggregationTemporality: delta,
					DataPoints: []*metricspb.HistogramDataPoint{{Count: 1, Sum: ptr(2), BucketCounts: []uint64{1, 0}, ExplicitBounds: []float64{5},
						Min: ptr(2), Max: ptr(2)}},
				}}},
				{Name: "fexp", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
					AggregationTemporality: cum,
					DataPoints: []*metricspb.ExponentialHistogramDataPoint{{
						Attributes: setPB, StartTimeUnixNano: n0, TimeUnixNano: n1, Count: 6, Sum: ptr(320), Scale: -2, ZeroCount: 1,
						Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: -3, BucketCounts: []uint64{1, 0, 300}},
						Negative: &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: 2, BucketCounts: []uint64{1}},
						Min:      ptr(-1), Max: ptr(300),
						ZeroThreshold: 0.001,
					}},
				}}},
				{Name: "iexp", Data: &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
					AggregationTemporality: delta,
					DataPoints: []*metricspb.ExponentialHistogramDataPoint{{Count: 1, Sum: ptr(4), Scale: 3,
						Positive: &metricspb.ExponentialHistogramDataPoint_Buckets{}, Negative: &metricspb.ExponentialHistogramDataPoint_Buckets{}}},
				}}},
				{Name: "summary", Data: &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: []*metricspb.SummaryDataPoint{{
					Attributes: setPB, StartTimeUnixNano: n0, TimeUnixNano: n1, Count: 4, Sum: 10,
					QuantileValues: []*metricspb.SummaryDataPoint_ValueAtQuantile{{Quantile: 0, Value: 1}, {Quantile: 0.5, Value: 2}, {Quantile: 1, Value: 4}},
				}}}}},
			},
		}, {Scope: &commonpb.InstrumentationScope{}}},
	}}}
	equal(t, &got, want)
}

// Odd input: no resource, a metric without data (left out and counted, not a panic), an empty
// collection; a nil ResourceMetrics encodes to nothing.
func TestEncodeMetricsOdd(t *testing.T) {
	if b, n := EncodeMetrics(nil); b != nil || n != 0 {
		t.Errorf("nil: %x, %d", b, n)
	}
	rm := &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
		{Name: "nodata"},
		{Name: "kept", Data: metricdata.Gauge[int64]{}},
	}}}}
	b, skipped := EncodeMetrics(rm)
	if skipped != 1 {
		t.Errorf("%d skipped, want 1", skipped)
	}
	var got collmetrics.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	equal(t, &got, &collmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Scope: &commonpb.InstrumentationScope{}, Metrics: []*metricspb.Metric{
			{Name: "kept", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{}}},
		}}},
	}}})
	b, _ = EncodeMetrics(&metricdata.ResourceMetrics{})
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
}

// An attribute value nested past maxDepth is cut to an empty value, not a stack overflow.
func TestEncodeDeepValue(t *testing.T) {
	v := attribute.IntValue(1)
	for range maxDepth + 5 {
		v = attribute.SliceValue(v)
	}
	b := appendKeyValue(nil, 1, attribute.KeyValue{Key: "deep", Value: v}, 0)
	var got commonpb.KeyValueList
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	depth := 0
	for a := got.Values[0].Value; a.GetArrayValue() != nil; a = a.GetArrayValue().Values[0] {
		depth++
	}
	if depth != maxDepth {
		t.Errorf("depth %d, want %d", depth, maxDepth)
	}
}
