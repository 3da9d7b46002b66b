package flushsync

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	spotel "github.com/safeput/safeput/otel"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// With a Tracer in the Config and an instrumented Uploader, a flush's trace holds its uploads:
// each write's span sits under the task attempt that made it, its requests under the write.
func TestTaskTraceHoldsItsWrites(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	inst, err := spotel.New(spotel.WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	up := newUploader(t, memstore.New(memstore.WithBuckets("b")), func(o *writer.Options) { o.Instrumentation = inst; o.Profile = "minio"; o.PartSize = 5 << 20 })
	mgr := NewManager(context.Background(), Config{Tracer: tp.Tracer("flushsync")})
	task := &SegmentTask{Uploader: up, Bucket: "b", Chan: "ch0", Segment: 1, Files: segmentFiles(0, 1)}
	if err := mgr.Submit(task); err != nil {
		t.Fatal(err)
	}
	mgr.Close()
	if st := mgr.Stats(); st.Done != 1 {
		t.Fatalf("stats %+v, want 1 done", st)
	}
	spans := rec.Ended()
	var taskSpan sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "flushsync.task" {
			taskSpan = s
		}
	}
	if taskSpan == nil {
		t.Fatal("no flushsync.task span")
	}
	writes := 0
	for _, s := range spans {
		if s.Name() != spotel.SpanWrite {
			continue
		}
		writes++
		if s.Parent().SpanID() != taskSpan.SpanContext().SpanID() {
			t.Errorf("a write span's parent is %v, not the task's span", s.Parent().SpanID())
		}
	}
	// The segment's files and its manifest: one write each.
	if want := len(task.Files) + 1; writes != want {
		t.Errorf("%d write spans, want %d", writes, want)
	}
}
