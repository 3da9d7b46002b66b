// Package otel reports safeput's writes to OpenTelemetry: a span per write with a child span per
// store request (named and tagged as otelaws names and tags S3 calls), and metrics of bytes,
// durations, requests, retries, verification, incomplete uploads left behind, the memory budget
// and recovery.
//
// It is a module of its own, so the library's go.mod carries no OpenTelemetry dependency. Turn
// it on with one option:
//
//	inst, err := otel.New() // the global TracerProvider and MeterProvider
//	up, err := writer.NewUploader(st, func(o *writer.Options) { o.Instrumentation = inst })
//
// The caller's context carries the parent span: a flush's span contains its writes' spans.
package otel

import (
	"context"
	"errors"
	"sync"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/safeput/safeput/writer"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/safeput/safeput/otel"

// Option configures New.
type Option func(*config)

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	budgets []*writer.Budget
}

// WithTracerProvider sets where spans go (default: otel.GetTracerProvider() when New runs).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets where metrics go (default: otel.GetMeterProvider() when New runs).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithBudget reports b's memory in use and limit (safeput.memory.budget.usage and .limit): the
// budget given to writer.Options.MemoryBudget. It may be given once per budget.
func WithBudget(b *writer.Budget) Option {
	return func(c *config) {
		if b != nil {
			c.budgets = append(c.budgets, b)
		}
	}
}

// Instrumentation is a writer.Instrumentation that reports to OpenTelemetry. It is safe for
// concurrent use; one serves any number of Uploaders.
type Instrumentation struct {
	tracer trace.Tracer
	m      instruments
	reg    metric.Registration

	closeOnce sync.Once
}

var _ writer.Instrumentation = (*Instrumentation)(nil)

// New returns an Instrumentation for writer.Options.Instrumentation. It fails only when the meter
// refuses an instrument.
func New(opts ...Option) (*Instrumentation, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.tp == nil {
		c.tp = otelapi.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otelapi.GetMeterProvider()
	}
	meter := c.mp.Meter(ScopeName)
	m, err := newInstruments(meter)
	if err != nil {
		return nil, err
	}
	in := &Instrumentation{tracer: c.tp.Tracer(ScopeName), m: m}
	if len(c.budgets) > 0 {
		in.reg, err = registerBudgets(meter, c.budgets)
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}

// Close stops reporting the budgets of WithBudget (their callbacks keep them reachable
// otherwise). Spans and counters need no closing.
func (in *Instrumentation) Close() error {
	var err error
	in.closeOnce.Do(func() {
		if in.reg != nil {
			err = in.reg.Unregister()
		}
	})
	return err
}

// Recovered counts the outcomes of a Recover run (safeput.recover.uploads).
func (in *Instrumentation) Recovered(ctx context.Context, rep *writer.RecoverReport, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if rep != nil {
		for _, u := range rep.Uploads {
			in.m.recovered.Add(ctx, 1, metric.WithAttributeSet(recoverAttrs(u.Outcome)))
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		in.m.recoverFailed.Add(ctx, 1, metric.WithAttributeSet(kindAttrs(err)))
	}
}
