package progress

import (
	"context"
	"errors"
	"net/http/httptrace"
	"testing"
)

// Stacked hooks each hear of their request once, inner first, with the error of a write that
// failed. (A Store's own report, store.ReportRequestWritten, reaches them the same way: see
// TestReportRequestWrittenReachesHooks in store.)
func TestOnWrittenStacks(t *testing.T) {
	var got []string
	ctx := OnWritten(context.Background(), func(err error) { got = append(got, "outer:"+errText(err)) })
	ctx = OnWritten(ctx, func(err error) { got = append(got, "inner:"+errText(err)) })

	trace := httptrace.ContextClientTrace(ctx)
	trace.WroteRequest(httptrace.WroteRequestInfo{Err: errors.New("reset")})
	trace.WroteRequest(httptrace.WroteRequestInfo{})
	want := []string{"inner:reset", "outer:reset", "inner:ok", "outer:ok"}
	if len(got) != len(want) {
		t.Fatalf("hooks heard %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("hooks heard %v, want %v", got, want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
