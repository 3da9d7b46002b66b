package otel_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	spotel "github.com/safeput/safeput/otel"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// A writer waiting for room in a shared memory budget: the wait is an event on its span and an
// observation of the wait histogram, and the budget's usage and limit are observed.
func TestBudgetWait(t *testing.T) {
	budget, err := writer.NewBudget(part)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, spotel.WithBudget(budget))
	mem := memstore.New(memstore.WithBuckets("b"))
	up, err := writer.NewUploader(mem, func(o *writer.Options) {
		o.Profile = "minio"
		o.PartSize = part
		o.Concurrency = 1
		o.MemoryBudget = budget
		o.Instrumentation = h.inst
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := up.New(ctx, "b", "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("a")); err != nil { // a now holds the whole budget
		t.Fatal(err)
	}
	if got := gauge(t, h, spotel.MetricBudgetUsage); got != part {
		t.Errorf("%s = %d while a holds a part, want %d", spotel.MetricBudgetUsage, got, part)
	}
	b, err := up.New(ctx, "b", "b")
	if err != nil {
		t.Fatal(err)
	}
	// a lets go of its buffer only after b has asked for one (b asks at once; a waits 200 ms).
	closed := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		closed <- a.Close()
	}()
	if _, err := b.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waits := 0
	for _, s := range h.spans.Ended() {
		for _, e := range s.Events() {
			if e.Name == spotel.EventBudgetWait {
				waits++
			}
		}
	}
	if waits != 1 {
		t.Errorf("%d budget-wait events, want 1", waits)
	}
	m := h.metrics(t)
	if got := m.hists[spotel.MetricBudgetWait]; got != 1 {
		t.Errorf("%s has %d observations, want 1", spotel.MetricBudgetWait, got)
	}
	if got := gauge(t, h, spotel.MetricBudgetUsage); got != 0 {
		t.Errorf("%s = %d after both writes, want 0", spotel.MetricBudgetUsage, got)
	}
	if got := gauge(t, h, spotel.MetricBudgetLimit); got != part {
		t.Errorf("%s = %d, want %d", spotel.MetricBudgetLimit, got, part)
	}
}

func gauge(t *testing.T, h *harness, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			if d, ok := md.Data.(metricdata.Sum[int64]); ok && md.Name == name {
				var n int64
				for _, p := range d.DataPoints {
					n += p.Value
				}
				return n
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A write whose abort fails counts an upload left behind; the next run's Recover, through an
// instrumented Uploader, counts the record it aborted.
func TestLeftBehindAndRecover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	const endpoint = "mem://otel"
	ctx := context.Background()
	mem := memstore.New(memstore.WithBuckets("b"))
	dying := faulty.New(mem,
		faulty.Rule{Op: faulty.OpUploadPart, Part: 2, Fault: faulty.Forbidden()},
		faulty.Always("AbortMultipartUpload", faulty.Forbidden()))
	h := newHarness(t)
	lost, err := writer.NewUploader(dying, func(o *writer.Options) {
		o.JournalDir, o.JournalEndpoint = dir, endpoint
		o.Profile = "minio"
		o.PartSize = part
		o.Concurrency = 1
		o.Instrumentation = h.inst
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lost.Upload(ctx, "b", "big", bytes.NewReader(make([]byte, 2*part+1))); err == nil {
		t.Fatal("the write landed through a store refusing its second part")
	}
	if got := h.metrics(t).total(spotel.MetricLeftBehind); got != 1 {
		t.Errorf("%s = %d after a failed abort, want 1", spotel.MetricLeftBehind, got)
	}
	next, err := writer.NewUploader(mem, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = dir, endpoint; o.Instrumentation = h.inst })
	if err != nil {
		t.Fatal(err)
	}
	rep, err := next.Recover(ctx, writer.RecoverOptions{Settle: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := h.metrics(t)
	if got, want := m.get(spotel.MetricRecoverUploads, spotel.AttrRecoverOutcome.String(string(writer.RecoverAborted))), int64(rep.Counts[writer.RecoverAborted]); got != want || got != 1 {
		t.Errorf("recovered uploads aborted = %d, report %d, want 1", got, want)
	}
	if len(h.spans.Ended()) == 0 || len(m.sums[spotel.MetricRequests]) == 0 {
		t.Error("Recover's requests are not traced")
	}
}
