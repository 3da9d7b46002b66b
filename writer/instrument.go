package writer

import (
	"context"

	"github.com/safeput/safeput/store"
)

// Instrumentation is what a tracing or metrics package (such as github.com/safeput/safeput/otel)
// plugs into an Uploader with Options.Instrumentation. Its methods must be safe for concurrent use;
// a panic in one is recovered and ignored, as an observer's is.
type Instrumentation interface {
	// WrapStore returns the store a write (or Recover) sends its requests through: a wrapper
	// sees every request, with the write's context (from StartWrite) as its parent. The
	// requests the write sends to learn what its endpoint does rather than to store the object
	// (the checksum probe's own upload: SaveProbe) carry ctx.Value(SaveProbe) == true.
	WrapStore(st store.Store) store.Store
	// StartWrite is called once per write (a Writer's lifetime, or one Upload call however many
	// whole-upload attempts it makes) with the caller's context; the context it returns is the
	// write's, so every request of the write derives from it.
	StartWrite(ctx context.Context, bucket, key string) (context.Context, WriteSpan)
	// Recovered is called when Uploader.Recover returns, with what it returned.
	Recovered(ctx context.Context, rep *RecoverReport, err error)
}

// WriteSpan receives one write's events (every Event an observer would see, and
// EventBudgetWait) and then, exactly once, its end: the Result on success, else the error.
type WriteSpan interface {
	Event(e Event)
	End(res *Result, err error)
}

// startSpan starts the write's span when the write is instrumented and no outer span (Upload's)
// covers it; it returns the context the write runs under.
func (cfg *config) startSpan(ctx context.Context, bucket, key string) context.Context {
	if cfg.instrument == nil || cfg.span != nil {
		return ctx
	}
	sctx, span := safeStart(cfg.instrument, ctx, bucket, key)
	if span == nil {
		return ctx
	}
	cfg.span, cfg.ownSpan = span, true
	return sctx
}

func safeStart(in Instrumentation, ctx context.Context, bucket, key string) (sctx context.Context, span WriteSpan) {
	defer func() {
		if recover() != nil {
			sctx, span = ctx, nil
		}
	}()
	sctx, span = in.StartWrite(ctx, bucket, key)
	if sctx == nil {
		sctx = ctx
	}
	return sctx, span
}

// endSpan ends span with the write's outcome; a panic in it must not break the write.
func endSpan(span WriteSpan, res *Result, err error) {
	if span == nil {
		return
	}
	defer func() { _ = recover() }()
	span.End(res, err)
}

// wrapStore is st as the instrumentation wraps it (st itself when there is none or it fails).
func wrapStore(in Instrumentation, st store.Store) (out store.Store) {
	if in == nil {
		return st
	}
	defer func() {
		if recover() != nil {
			out = st
		}
	}()
	if w := in.WrapStore(st); w != nil {
		return w
	}
	return st
}
