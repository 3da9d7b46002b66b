package main

import (
	"bytes"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/safeput/safeput/storetest/s3test"
)

// receiver is a local OTLP/HTTP collector: it decodes what it is sent with the official proto
// packages and keeps the spans and metrics, and the service names of their resources.
type receiver struct {
	mu       sync.Mutex
	spans    map[string][]*tracepb.Span
	metrics  map[string][]*metricspb.Metric
	services map[string]bool
	posts    int
}

func newReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	r := &receiver{spans: map[string][]*tracepb.Span{}, metrics: map[string][]*metricspb.Metric{}, services: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.posts++
	switch req.URL.Path {
	case "/v1/traces":
		var m colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range m.ResourceSpans {
			r.service(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans[s.Name] = append(r.spans[s.Name], s)
				}
			}
		}
		out, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	case "/v1/metrics":
		var m collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range m.ResourceMetrics {
			r.service(rm.GetResource().GetAttributes())
			for _, sm := range rm.ScopeMetrics {
				for _, md := range sm.Metrics {
					r.metrics[md.Name] = append(r.metrics[md.Name], md)
				}
			}
		}
		out, _ := proto.Marshal(&collmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	default:
		http.NotFound(w, req)
	}
}

func (r *receiver) service(attrs []*commonpb.KeyValue) {
	for _, kv := range attrs {
		if kv.Key == "service.name" {
			r.services[kv.GetValue().GetStringValue()] = true
		}
	}
}

// attr is the value of attribute key in attrs, nil without it.
func attr(attrs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range attrs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// intSum is the total of a monotonic integer sum's data points whose attribute key (if key is
// not empty) has value want.
func intSum(t *testing.T, ms []*metricspb.Metric, key, want string) int64 {
	t.Helper()
	var total int64
	for _, m := range ms {
		s := m.GetSum()
		if s == nil || !s.IsMonotonic || s.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
			t.Errorf("%s: not a cumulative monotonic sum: %v", m.Name, m.Data)
			continue
		}
		for _, dp := range s.DataPoints {
			if key == "" || attr(dp.Attributes, key).GetStringValue() == want {
				total += dp.GetAsInt()
			}
		}
	}
	return total
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, put exports its write's spans (the write and its S3
// requests) and metrics over OTLP/HTTP before it exits; with the SDK disabled, or without the
// variable, it sends nothing.
func TestPutExportsOTLP(t *testing.T) {
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		bucket := s3test.NewBucket(t, s)
		file := writeFile(t, s3test.RandomBytes(11<<20))
		rec, url := newReceiver(t)
		env := append(serverEnv(s), "OTEL_EXPORTER_OTLP_ENDPOINT="+url, "OTEL_SERVICE_NAME=ingest")
		r := runWith(t, env, nil, "--path-style", "--provider", provider(s), "--part-size", "5MiB", "put", file, "s3://"+bucket+"/otlp")
		expectCode(t, r, 0, "put with OTLP export")
		rec.mu.Lock()
		for _, name := range []string{"safeput.write", "S3.CreateMultipartUpload", "S3.UploadPart", "S3.CompleteMultipartUpload"} {
			if len(rec.spans[name]) == 0 {
				t.Errorf("no %s span exported (got %v)", name, slices.Collect(maps.Keys(rec.spans)))
			}
		}
		if len(rec.spans["safeput.write"]) == 1 {
			w := rec.spans["safeput.write"][0]
			if len(w.TraceId) != 16 || len(w.SpanId) != 8 || w.EndTimeUnixNano <= w.StartTimeUnixNano {
				t.Errorf("safeput.write: trace id %x, span id %x, start %d, end %d", w.TraceId, w.SpanId, w.StartTimeUnixNano, w.EndTimeUnixNano)
			}
			if v := attr(w.Attributes, "safeput.size").GetIntValue(); v != 11<<20 {
				t.Errorf("safeput.write: safeput.size %d, want %d", v, 11<<20)
			}
			if v := attr(w.Attributes, "safeput.parts").GetIntValue(); v != 3 {
				t.Errorf("safeput.write: safeput.parts %d, want 3", v)
			}
			if v := attr(w.Attributes, "safeput.outcome").GetStringValue(); v != "landed" {
				t.Errorf("safeput.write: safeput.outcome %q, want landed", v)
			}
			// The S3 requests are the write's children, client spans with the part they sent.
			var parts []int64
			for _, p := range rec.spans["S3.UploadPart"] {
				if !bytes.Equal(p.TraceId, w.TraceId) || !bytes.Equal(p.ParentSpanId, w.SpanId) || p.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("S3.UploadPart: trace %x parent %x kind %v; want trace %x parent %x, a client span", p.TraceId, p.ParentSpanId, p.Kind, w.TraceId, w.SpanId)
				}
				parts = append(parts, attr(p.Attributes, "aws.s3.part_number").GetIntValue())
			}
			slices.Sort(parts)
			if !slices.Equal(parts, []int64{1, 2, 3}) {
				t.Errorf("S3.UploadPart spans of parts %v, want [1 2 3]", parts)
			}
		} else {
			t.Errorf("%d safeput.write spans, want 1", len(rec.spans["safeput.write"]))
		}
		for _, name := range []string{"safeput.writes", "safeput.write.duration", "safeput.requests", "safeput.upload.bytes"} {
			if len(rec.metrics[name]) == 0 {
				t.Errorf("metric %s not exported (got %v)", name, slices.Collect(maps.Keys(rec.metrics)))
			}
		}
		if n := intSum(t, rec.metrics["safeput.writes"], "safeput.outcome", "landed"); n != 1 {
			t.Errorf("safeput.writes{safeput.outcome=landed} = %d, want 1", n)
		}
		if n := intSum(t, rec.metrics["safeput.upload.bytes"], "", ""); n < 11<<20 {
			t.Errorf("safeput.upload.bytes = %d, want at least %d", n, 11<<20)
		}
		if n := intSum(t, rec.metrics["safeput.requests"], "", ""); n < 5 {
			t.Errorf("safeput.requests = %d, want at least 5 (create, 3 parts, complete)", n)
		}
		var durations uint64
		for _, m := range rec.metrics["safeput.write.duration"] {
			for _, dp := range m.GetHistogram().GetDataPoints() {
				durations += dp.Count
				if dp.GetSum() <= 0 {
					t.Errorf("safeput.write.duration: sum %v", dp.GetSum())
				}
			}
		}
		if durations != 1 {
			t.Errorf("safeput.write.duration: %d writes counted, want 1", durations)
		}
		if !rec.services["ingest"] {
			t.Errorf("service names %v, want OTEL_SERVICE_NAME's ingest", rec.services)
		}
		rec.mu.Unlock()

		off, offURL := newReceiver(t)
		r = runWith(t, append(serverEnv(s), "OTEL_EXPORTER_OTLP_ENDPOINT="+offURL, "OTEL_SDK_DISABLED=true"), nil,
			"--path-style", "--provider", provider(s), "put", file, "s3://"+bucket+"/otlp-off")
		expectCode(t, r, 0, "put with the SDK disabled")
		r = runWith(t, serverEnv(s), nil, "--path-style", "--provider", provider(s), "put", file, "s3://"+bucket+"/otlp-unset")
		expectCode(t, r, 0, "put without OTEL variables")
		off.mu.Lock()
		if off.posts != 0 {
			t.Errorf("%d exports with OTEL_SDK_DISABLED=true", off.posts)
		}
		off.mu.Unlock()

		// A protocol the CLI does not speak: the write lands, nothing is sent, a warning says why.
		grpc, grpcURL := newReceiver(t)
		r = runWith(t, append(serverEnv(s), "OTEL_EXPORTER_OTLP_ENDPOINT="+grpcURL, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"), nil,
			"--path-style", "--provider", provider(s), "put", file, "s3://"+bucket+"/otlp-grpc")
		expectCode(t, r, 0, "put with OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
		if !strings.Contains(r.stderr, "warning: OpenTelemetry traces are not exported: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported") {
			t.Errorf("no warning about the grpc protocol:\n%s", r.stderr)
		}
		grpc.mu.Lock()
		if grpc.posts != 0 {
			t.Errorf("%d exports with OTEL_EXPORTER_OTLP_PROTOCOL=grpc", grpc.posts)
		}
		grpc.mu.Unlock()

		// A collector that is down costs the write nothing: it exits 0, without waiting out the
		// 5 s flush bound.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String()
		_ = l.Close()
		start := time.Now()
		r = runWith(t, append(serverEnv(s), "OTEL_EXPORTER_OTLP_ENDPOINT="+down), nil,
			"--path-style", "--provider", provider(s), "put", file, "s3://"+bucket+"/otlp-down")
		expectCode(t, r, 0, "put with the collector down")
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("put with the collector down took %v", d)
		}
	})
}
