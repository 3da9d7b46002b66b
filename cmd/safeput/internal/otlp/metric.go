package otlp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/encoding/protowire"
)

// MetricExporter sends metrics to an OTLP/HTTP collector: an sdkmetric.Exporter, for a periodic
// reader.
type MetricExporter struct {
	c           *client
	temporality sdkmetric.TemporalitySelector
	stopped     atomic.Bool
}

var _ sdkmetric.Exporter = (*MetricExporter)(nil)

// NewMetricExporter returns an exporter that posts to cfg.URL, with cfg.Temporality.
func NewMetricExporter(cfg Config) *MetricExporter {
	sel := cfg.Temporality
	if sel == nil {
		sel = sdkmetric.DefaultTemporalitySelector
	}
	return &MetricExporter{c: newClient(cfg, "data points"), temporality: sel}
}

// Temporality is the configured one (cumulative unless
// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE says otherwise).
func (e *MetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

// Aggregation is the SDK's default for each instrument kind.
func (e *MetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export encodes rm as one ExportMetricsServiceRequest and posts it. A metric whose data type
// the encoder does not know is left out, and reported in the error after the rest is sent.
func (e *MetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if e.stopped.Load() || rm == nil {
		return nil
	}
	body, skipped := EncodeMetrics(rm)
	var err error
	if len(body) > 0 && hasMetrics(rm) {
		err = e.c.post(ctx, body)
	}
	if skipped > 0 {
		err = errors.Join(err, fmt.Errorf("OTLP export: %d metrics of an unsupported data type left out", skipped))
	}
	return err
}

// hasMetrics reports whether rm holds any metric: a reader collects an empty ResourceMetrics
// when nothing was recorded, and posting it would only cost the collector a request.
func hasMetrics(rm *metricdata.ResourceMetrics) bool {
	for _, sm := range rm.ScopeMetrics {
		if len(sm.Metrics) > 0 {
			return true
		}
	}
	return false
}

// ForceFlush has nothing to do: Export posts synchronously.
func (e *MetricExporter) ForceFlush(context.Context) error { return nil }

// Shutdown stops the exporter; the reader has made its last Export before.
func (e *MetricExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.c.close()
	return nil
}

// EncodeMetrics returns the ExportMetricsServiceRequest of rm (resource_metrics 1) and the number
// of metrics left out because their data type is not one of metricdata's.
func EncodeMetrics(rm *metricdata.ResourceMetrics) ([]byte, int) {
	if rm == nil {
		return nil, 0
	}
	skipped := 0
	// ResourceMetrics: resource 1, scope_metrics 2, schema_url 3.
	b, rs := beginMsg(nil, 1)
	b = appendResource(b, 1, rm.Resource)
	for _, sm := range rm.ScopeMetrics {
		// ScopeMetrics: scope 1, metrics 2, schema_url 3.
		var ss int
		b, ss = beginMsg(b, 2)
		b = appendScope(b, 1, sm.Scope)
		for _, m := range sm.Metrics {
			var ok bool
			if b, ok = appendMetric(b, 2, m); !ok {
				skipped++
			}
		}
		b = appendString(b, 3, sm.Scope.SchemaURL)
		b = endMsg(b, ss)
	}
	b = appendString(b, 3, schemaURL(rm.Resource))
	return endMsg(b, rs), skipped
}

// Metric: name 1, description 2, unit 3, gauge 5, sum 7, histogram 9, exponential_histogram 10,
// summary 11. It returns b unchanged and false for a data type it does not encode.
func appendMetric(b []byte, num protowire.Number, m metricdata.Metrics) ([]byte, bool) {
	orig := len(b)
	b, start := beginMsg(b, num)
	b = appendString(b, 1, m.Name)
	b = appendString(b, 2, m.Description)
	b = appendString(b, 3, m.Unit)
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		b = appendGauge(b, d)
	case metricdata.Gauge[float64]:
		b = appendGauge(b, d)
	case metricdata.Sum[int64]:
		b = appendSum(b, d)
	case metricdata.Sum[float64]:
		b = appendSum(b, d)
	case metricdata.Histogram[int64]:
		b = appendHistogram(b, d)
	case metricdata.Histogram[float64]:
		b = appendHistogram(b, d)
	case metricdata.ExponentialHistogram[int64]:
		b = appendExpHistogram(b, d)
	case metricdata.ExponentialHistogram[float64]:
		b = appendExpHistogram(b, d)
	case metricdata.Summary:
		b = appendSummary(b, d)
	default:
		return b[:orig], false
	}
	return endMsg(b, start), true
}

// temporality is t in the protocol's numbers (DELTA 1, CUMULATIVE 2: not metricdata's order).
func temporality(t metricdata.Temporality) uint64 {
	switch t {
	case metricdata.DeltaTemporality:
		return 1
	case metricdata.CumulativeTemporality:
		return 2
	}
	return 0
}

// Gauge: data_points 1.
func appendGauge[N int64 | float64](b []byte, g metricdata.Gauge[N]) []byte {
	b, start := beginMsg(b, 5)
	for i := range g.DataPoints {
		b = appendNumberPoint(b, 1, &g.DataPoints[i])
	}
	return endMsg(b, start)
}

// Sum: data_points 1, aggregation_temporality 2, is_monotonic 3.
func appendSum[N int64 | float64](b []byte, s metricdata.Sum[N]) []byte {
	b, start := beginMsg(b, 7)
	for i := range s.DataPoints {
		b = appendNumberPoint(b, 1, &s.DataPoints[i])
	}
	b = appendVarint(b, 2, temporality(s.Temporality))
	b = appendVarint(b, 3, protowire.EncodeBool(s.IsMonotonic))
	return endMsg(b, start)
}

// appendNumber appends v as a oneof double (field dbl) or sfixed64 (field i64): the two number
// forms of NumberDataPoint and Exemplar.
func appendNumber[N int64 | float64](b []byte, dbl, i64 protowire.Number, v N) []byte {
	switch x := any(v).(type) {
	case int64:
		return appendFixed64Always(b, i64, uint64(x))
	case float64:
		return appendDoubleAlways(b, dbl, x)
	}
	return b
}

// NumberDataPoint: start_time 2, time 3, as_double 4, exemplars 5, as_int 6, attributes 7.
func appendNumberPoint[N int64 | float64](b []byte, num protowire.Number, p *metricdata.DataPoint[N]) []byte {
	b, start := beginMsg(b, num)
	b = appendFixed64(b, 2, unixNano(p.StartTime))
	b = appendFixed64(b, 3, unixNano(p.Time))
	b = appendNumber(b, 4, 6, p.Value)
	b = appendExemplars(b, 5, p.Exemplars)
	b = appendSet(b, 7, &p.Attributes)
	return endMsg(b, start)
}

// Exemplar: time 2, as_double 3, span_id 4, trace_id 5, as_int 6, filtered_attributes 7.
func appendExemplars[N int64 | float64](b []byte, num protowire.Number, exs []metricdata.Exemplar[N]) []byte {
	for _, ex := range exs {
		var start int
		b, start = beginMsg(b, num)
		b = appendFixed64(b, 2, unixNano(ex.Time))
		b = appendNumber(b, 3, 6, ex.Value)
		b = appendBytes(b, 4, ex.SpanID)
		b = appendBytes(b, 5, ex.TraceID)
		b = appendKeyValues(b, 7, ex.FilteredAttributes)
		b = endMsg(b, start)
	}
	return b
}

// Histogram: data_points 1, aggregation_temporality 2.
func appendHistogram[N int64 | float64](b []byte, h metricdata.Histogram[N]) []byte {
	b, start := beginMsg(b, 9)
	for i := range h.DataPoints {
		b = appendHistogramPoint(b, 1, &h.DataPoints[i])
	}
	b = appendVarint(b, 2, temporality(h.Temporality))
	return endMsg(b, start)
}

// HistogramDataPoint: start_time 2, time 3, count 4, sum 5 (optional), bucket_counts 6 (packed
// fixed64), explicit_bounds 7 (packed double), exemplars 8, attributes 9, min 11, max 12
// (optional).
func appendHistogramPoint[N int64 | float64](b []byte, num protowire.Number, p *metricdata.HistogramDataPoint[N]) []byte {
	b, start := beginMsg(b, num)
	b = appendFixed64(b, 2, unixNano(p.StartTime))
	b = appendFixed64(b, 3, unixNano(p.Time))
	b = appendFixed64(b, 4, p.Count)
	b = appendDoubleAlways(b, 5, float64(p.Sum))
	b = appendPackedFixed64(b, 6, len(p.BucketCounts), func(i int) uint64 { return p.BucketCounts[i] })
	b = appendPackedFixed64(b, 7, len(p.Bounds), func(i int) uint64 { return math.Float64bits(p.Bounds[i]) })
	b = appendExemplars(b, 8, p.Exemplars)
	b = appendSet(b, 9, &p.Attributes)
	b = appendExtrema(b, 11, 12, p.Min, p.Max)
	return endMsg(b, start)
}

// appendExtrema appends the min and max that are defined, as optional doubles.
func appendExtrema[N int64 | float64](b []byte, minNum, maxNum protowire.Number, lo, hi metricdata.Extrema[N]) []byte {
	if v, ok := lo.Value(); ok {
		b = appendDoubleAlways(b, minNum, float64(v))
	}
	if v, ok := hi.Value(); ok {
		b = appendDoubleAlways(b, maxNum, float64(v))
	}
	return b
}

func appendPackedFixed64(b []byte, num protowire.Number, n int, at func(int) uint64) []byte {
	if n == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(n)*8)
	for i := range n {
		b = protowire.AppendFixed64(b, at(i))
	}
	return b
}

// ExponentialHistogram: data_points 1, aggregation_temporality 2.
func appendExpHistogram[N int64 | float64](b []byte, h metricdata.ExponentialHistogram[N]) []byte {
	b, start := beginMsg(b, 10)
	for i := range h.DataPoints {
		b = appendExpHistogramPoint(b, 1, &h.DataPoints[i])
	}
	b = appendVarint(b, 2, temporality(h.Temporality))
	return endMsg(b, start)
}

// ExponentialHistogramDataPoint: attributes 1, start_time 2, time 3, count 4, sum 5 (optional),
// scale 6 (sint32), zero_count 7, positive 8, negative 9, exemplars 11, min 12, max 13,
// zero_threshold 14.
func appendExpHistogramPoint[N int64 | float64](b []byte, num protowire.Number, p *metricdata.ExponentialHistogramDataPoint[N]) []byte {
	b, start := beginMsg(b, num)
	b = appendSet(b, 1, &p.Attributes)
	b = appendFixed64(b, 2, unixNano(p.StartTime))
	b = appendFixed64(b, 3, unixNano(p.Time))
	b = appendFixed64(b, 4, p.Count)
	b = appendDoubleAlways(b, 5, float64(p.Sum))
	b = appendVarint(b, 6, protowire.EncodeZigZag(int64(p.Scale)))
	b = appendFixed64(b, 7, p.ZeroCount)
	b = appendBuckets(b, 8, p.PositiveBucket)
	b = appendBuckets(b, 9, p.NegativeBucket)
	b = appendExemplars(b, 11, p.Exemplars)
	b = appendExtrema(b, 12, 13, p.Min, p.Max)
	b = appendDouble(b, 14, p.ZeroThreshold)
	return endMsg(b, start)
}

// Buckets: offset 1 (sint32), bucket_counts 2 (packed uint64).
func appendBuckets(b []byte, num protowire.Number, bk metricdata.ExponentialBucket) []byte {
	b, start := beginMsg(b, num)
	b = appendVarint(b, 1, protowire.EncodeZigZag(int64(bk.Offset)))
	if len(bk.Counts) > 0 {
		var pc int
		b, pc = beginMsg(b, 2)
		for _, c := range bk.Counts {
			b = protowire.AppendVarint(b, c)
		}
		b = endMsg(b, pc)
	}
	return endMsg(b, start)
}

// Summary: data_points 1. SummaryDataPoint: start_time 2, time 3, count 4, sum 5,
// quantile_values 6 (ValueAtQuantile: quantile 1, value 2), attributes 7.
func appendSummary(b []byte, s metricdata.Summary) []byte {
	b, start := beginMsg(b, 11)
	for i := range s.DataPoints {
		p := &s.DataPoints[i]
		var ps int
		b, ps = beginMsg(b, 1)
		b = appendFixed64(b, 2, unixNano(p.StartTime))
		b = appendFixed64(b, 3, unixNano(p.Time))
		b = appendFixed64(b, 4, p.Count)
		b = appendDouble(b, 5, p.Sum)
		for _, q := range p.QuantileValues {
			var qs int
			b, qs = beginMsg(b, 6)
			b = appendDouble(b, 1, q.Quantile)
			b = appendDouble(b, 2, q.Value)
			b = endMsg(b, qs)
		}
		b = appendSet(b, 7, &p.Attributes)
		b = endMsg(b, ps)
	}
	return endMsg(b, start)
}
