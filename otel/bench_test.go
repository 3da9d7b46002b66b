package otel_test

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	spotel "github.com/safeput/safeput/otel"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// cpuTime is the process's user and system CPU so far: the cost the issue bounds is client CPU,
// which on a multi-core run is not the wall time ns/op reports.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUpload1GiB uploads 1 GiB to the in-memory store (default 16 MiB parts, so 64 parts
// and about 70 requests) without instrumentation, with it on no-op providers (the globals
// before an SDK is installed), and with the SDK recording every span (always sampled, dropped by
// no exporter) and every metric (a manual reader). It reports CPU seconds per GiB: the cost of
// the instrumentation is the difference.
func BenchmarkUpload1GiB(b *testing.B) {
	const size = 1 << 30
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7 >> 3)
	}
	sdk := func(b *testing.B) func(*writer.Options) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		inst, err := spotel.New(spotel.WithTracerProvider(tp), spotel.WithMeterProvider(mp))
		if err != nil {
			b.Fatal(err)
		}
		return func(o *writer.Options) { o.Instrumentation = inst }
	}
	noop := func(b *testing.B) func(*writer.Options) {
		inst, err := spotel.New(spotel.WithTracerProvider(tracenoop.NewTracerProvider()), spotel.WithMeterProvider(metricnoop.NewMeterProvider()))
		if err != nil {
			b.Fatal(err)
		}
		return func(o *writer.Options) { o.Instrumentation = inst }
	}
	for _, c := range []struct {
		name string
		opt  func(*testing.B) func(*writer.Options)
	}{{"plain", nil}, {"otel-noop", noop}, {"otel-sdk", sdk}} {
		b.Run(c.name, func(b *testing.B) {
			opts := []func(*writer.Options){func(o *writer.Options) { o.Profile = "minio" }}
			if c.opt != nil {
				opts = append(opts, c.opt(b))
			}
			up, err := writer.NewUploader(memstore.New(memstore.WithBuckets("b")), opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			start := cpuTime(b)
			for b.Loop() {
				if _, err := up.Upload(context.Background(), "b", "k", bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime(b)-start).Seconds()/float64(b.N), "cpu-s/GiB")
		})
	}
}

// BenchmarkOverhead measures the instrumentation's own cost, which the 1 GiB benchmark's noise
// hides: one HeadObject through the wrapped in-memory store (the cost of every request's span
// and metrics), and one 1-byte Upload (a write span and its PutObject, whose answer proves
// it). A 1 GiB upload in 16 MiB parts is one write and about 68 requests (create, 64 parts,
// ListParts, complete, HEAD), so its overhead is about write + 66 × request.
func BenchmarkOverhead(b *testing.B) {
	variants := []struct {
		name string
		inst func(*testing.B) *spotel.Instrumentation
	}{
		{"plain", nil},
		{"otel-noop", func(b *testing.B) *spotel.Instrumentation {
			inst, err := spotel.New(spotel.WithTracerProvider(tracenoop.NewTracerProvider()), spotel.WithMeterProvider(metricnoop.NewMeterProvider()))
			if err != nil {
				b.Fatal(err)
			}
			return inst
		}},
		{"otel-sdk", func(b *testing.B) *spotel.Instrumentation {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
			inst, err := spotel.New(spotel.WithTracerProvider(tp), spotel.WithMeterProvider(mp))
			if err != nil {
				b.Fatal(err)
			}
			return inst
		}},
	}
	for _, v := range variants {
		b.Run("request/"+v.name, func(b *testing.B) {
			mem := memstore.New(memstore.WithBuckets("b"))
			if _, err := writer.Upload(context.Background(), mem, "b", "k", bytes.NewReader([]byte("x"))); err != nil {
				b.Fatal(err)
			}
			var st store.Store = mem
			if v.inst != nil {
				st = v.inst(b).WrapStore(mem)
			}
			in := &store.HeadObjectInput{Bucket: "b", Key: "k"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.HeadObject(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("write/"+v.name, func(b *testing.B) {
			opts := []func(*writer.Options){func(o *writer.Options) { o.Profile = "minio" }}
			if v.inst != nil {
				opts = append(opts, func(o *writer.Options) { o.Instrumentation = v.inst(b) })
			}
			up, err := writer.NewUploader(memstore.New(memstore.WithBuckets("b")), opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := up.Upload(context.Background(), "b", "k", bytes.NewReader([]byte("x"))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
