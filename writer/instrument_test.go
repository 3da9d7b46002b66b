package writer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// panicky panics in every hook.
type panicky struct{}

func (panicky) WrapStore(store.Store) store.Store { panic("WrapStore") }
func (panicky) StartWrite(context.Context, string, string) (context.Context, writer.WriteSpan) {
	return context.Background(), panickySpan{}
}
func (panicky) Recovered(context.Context, *writer.RecoverReport, error) { panic("Recovered") }

type panickySpan struct{}

func (panickySpan) Event(writer.Event)        { panic("Event") }
func (panickySpan) End(*writer.Result, error) { panic("End") }

// An instrumentation that panics everywhere cannot break a write: it lands, and observers still
// see their events.
func TestInstrumentationPanicIgnored(t *testing.T) {
	mem := memstore.New(memstore.WithBuckets("b"))
	var events int
	up, err := writer.NewUploader(mem, func(o *writer.Options) {
		o.Profile = "minio"
		o.PartSize = part
		o.Concurrency = 1
		o.Instrumentation = panicky{}
		o.Observer = func(writer.Event) { events++ }
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := up.Upload(context.Background(), "b", "k", bytes.NewReader(make([]byte, 2*part+1)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Parts != 3 || events == 0 {
		t.Errorf("parts %d, %d observer events", res.Parts, events)
	}
}
