// Command official sets up what sdk does with the official OTLP/HTTP exporters in place of an
// encoder of its own: otlptracehttp behind the tracer provider and otlpmetrichttp behind the
// meter provider, pointed at an endpoint nothing is sent to, then prints its resident memory.
package main

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/safeput/safeput/bench/internal/otlpcost"
)

func main() {
	ctx := context.Background()
	spans, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint("127.0.0.1:9"), otlptracehttp.WithInsecure())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	metrics, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint("127.0.0.1:9"), otlpmetrichttp.WithInsecure())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	_, span := tp.Tracer("otlpcost").Start(ctx, "put")
	span.End()
	counter, _ := mp.Meter("otlpcost").Int64Counter("bytes")
	counter.Add(ctx, 1)
	fmt.Println("set up exporters to", "127.0.0.1:9")
	otlpcost.PrintRSS()
}
