// Command sdk sets up what the CLI's telemetry links besides its encoder: a tracer and a meter
// provider of the OpenTelemetry SDK, one span and one counter, and protowire, then prints its
// resident memory. No exporter: the CLI's own encoder is protowire and little code.
package main

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/safeput/safeput/bench/internal/otlpcost"
)

func main() {
	ctx := context.Background()
	rec := sdktrace.NewSimpleSpanProcessor(nopSpans{})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	_, span := tp.Tracer("otlpcost").Start(ctx, "put")
	span.End()
	counter, _ := mp.Meter("otlpcost").Int64Counter("bytes")
	counter.Add(ctx, 1)
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(ctx, &rm)
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, span.SpanContext().TraceID().String())
	fmt.Println("encoded", len(b), "bytes of", len(rm.ScopeMetrics), "scopes")
	otlpcost.PrintRSS()
}

type nopSpans struct{}

func (nopSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (nopSpans) Shutdown(context.Context) error                             { return nil }
