package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/safeput/safeput/cmd/safeput/internal/otlp"
	spotel "github.com/safeput/safeput/otel"
	"github.com/safeput/safeput/writer"
)

// telemetryFlushTimeout bounds the export of what a run recorded, at its end: a collector that
// is down must not hold the command's exit.
const telemetryFlushTimeout = 5 * time.Second

// otlpConfigured reports whether the standard OTLP variables ask for an export: the endpoint for
// all signals or for traces or metrics alone, and the SDK not disabled.
func otlpConfigured() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// telemetry returns the option that instruments a run's writes and the function that exports
// what they recorded, when the OTLP variables are set (internal/otlp reads the rest of them:
// headers, timeouts, per-signal endpoints; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name
// the resource). Without them it returns no option and a no-op flush: nothing changes. A signal
// whose variables cannot be honoured (a gRPC or JSON protocol, a bad URL…) is not exported and
// warn says why: telemetry never stops a write.
func telemetry(ctx context.Context, warn func(msg string, err error)) (func(*writer.Options), func() error, error) {
	noop := func() error { return nil }
	if !otlpConfigured() {
		return nil, noop, nil
	}
	tcfg, traces, terr := otlp.ConfigFromEnv(os.Getenv, otlp.Traces)
	if terr != nil {
		warn("OpenTelemetry traces are not exported", terr)
	}
	mcfg, metrics, merr := otlp.ConfigFromEnv(os.Getenv, otlp.Metrics)
	if merr != nil {
		warn("OpenTelemetry metrics are not exported", merr)
	}
	if !traces && !metrics {
		return nil, noop, nil
	}
	// The default name first: the variables (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), merged
	// after it, override it.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("safeput")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, noop, err
	}
	// A signal without an endpoint (only the other's per-signal variable is set) gets a provider
	// with nothing behind it: the instrumentation records, nothing is sent.
	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if traces {
		topts = append(topts, sdktrace.WithBatcher(otlp.NewSpanExporter(tcfg)))
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if metrics {
		// The periodic reader exports at shutdown too: a short run's metrics are not lost.
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(otlp.NewMetricExporter(mcfg))))
	}
	tp := sdktrace.NewTracerProvider(topts...)
	mp := sdkmetric.NewMeterProvider(mopts...)
	inst, err := spotel.New(spotel.WithTracerProvider(tp), spotel.WithMeterProvider(mp))
	if err != nil {
		return nil, noop, err
	}
	flush := func() error {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlushTimeout)
		defer cancel()
		return errors.Join(tp.Shutdown(fctx), mp.Shutdown(fctx))
	}
	return func(o *writer.Options) { o.Instrumentation = inst }, flush, nil
}
