package store

import (
	"bytes"
	"context"
	"io"
	"net/http/httptrace"
	"testing"

	"github.com/safeput/safeput/internal/progress"
)

type sizeRecorder struct {
	bytes.Buffer
	largest int
}

func (s *sizeRecorder) Write(p []byte) (int, error) {
	s.largest = max(s.largest, len(p))
	return s.Buffer.Write(p)
}

// TestProgressBodyWritesItselfInChunks: a body that writes itself keeps doing so through the
// progress wrapper, in writes of at most progressChunk with a report after each, so a stall
// watchdog hears of a part as the connection takes it; a body that cannot is read as before.
func TestProgressBodyWritesItselfInChunks(t *testing.T) {
	data := bytes.Repeat([]byte("safeput!"), (4*progressChunk+8)/8)
	reports := 0
	b := newProgressBody(io.NopCloser(bytes.NewReader(data)), func() { reports++ })
	wt, ok := b.(io.WriterTo)
	if !ok {
		t.Fatal("the wrapper hid the body's WriteTo")
	}
	var dst sizeRecorder
	n, err := wt.WriteTo(&dst)
	if err != nil || n != int64(len(data)) || !bytes.Equal(dst.Bytes(), data) {
		t.Fatalf("WriteTo = %d, %v; %d bytes arrived, want %d", n, err, dst.Len(), len(data))
	}
	if dst.largest > progressChunk {
		t.Errorf("largest write %d, want at most %d", dst.largest, progressChunk)
	}
	if reports != 5 {
		t.Errorf("%d progress reports for %d bytes, want 5 (one per %d-byte chunk)", reports, len(data), progressChunk)
	}

	plain := newProgressBody(io.NopCloser(struct{ io.Reader }{bytes.NewReader(data)}), func() { reports++ })
	if _, ok := plain.(io.WriterTo); ok {
		t.Error("a body without WriteTo gained one")
	}
}

// TestReportRequestWrittenReachesHooks: a Store not on net/http reports its request written to
// the same hooks net/http would tell, the writer's (progress.OnWritten) and any httptrace hook
// of the caller's, each once and without an error; a context without hooks, or none, is no
// panic.
func TestReportRequestWrittenReachesHooks(t *testing.T) {
	var writer, caller []error
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) { caller = append(caller, info.Err) },
	})
	ctx = progress.OnWritten(ctx, func(err error) { writer = append(writer, err) })
	ReportRequestWritten(ctx)
	if len(writer) != 1 || writer[0] != nil || len(caller) != 1 || caller[0] != nil {
		t.Fatalf("the writer's hook heard %v and the caller's %v, want one nil each", writer, caller)
	}
	ReportRequestWritten(context.Background())
	ReportRequestWritten(nil) //nolint:staticcheck // a nil context must not panic
}
