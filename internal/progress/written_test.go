package progress

import (
	"context"
	"errors"
	"net/http/httptrace"
	"testing"
)

// A hook hears of its request once whichever way the news comes (httptrace's WroteRequest, or
// a Store's report through Written), and stacked hooks each hear of it once, inner first.
func TestOnWrittenStacks(t *testing.T) {
	var got []string
	ctx := OnWritten(context.Background(), func(err error) { got = append(got, "outer:"+errText(err)) })
	ctx = OnWritten(ctx, func(err error) { got = append(got, "inner:"+errText(err)) })

	httptrace.ContextClientTrace(ctx).WroteRequest(httptrace.WroteRequestInfo{Err: errors.New("reset")})
	Written(ctx)(nil)
	want := []string{"inner:reset", "outer:reset", "inner:ok", "outer:ok"}
	if len(got) != len(want) {
		t.Fatalf("hooks heard %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("hooks heard %v, want %v", got, want)
		}
	}
	if Written(context.Background()) != nil || Written(nil) != nil { //nolint:staticcheck // a nil context must not panic
		t.Error("a context without a hook has one")
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
