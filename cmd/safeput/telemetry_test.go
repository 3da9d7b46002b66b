package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/safeput/safeput/internal/s3test"
)

// receiver is a local OTLP/HTTP collector: it decodes what it is sent and keeps the span and
// metric names, and the service names of their resources.
type receiver struct {
	mu       sync.Mutex
	spans    map[string]int
	metrics  map[string]bool
	services map[string]bool
	posts    int
}

func newReceiver(t *testing.T) (*receiver, string) {
	t.Helper()
	r := &receiver{spans: map[string]int{}, metrics: map[string]bool{}, services: map[string]bool{}}
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
					r.spans[s.Name]++
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
					r.metrics[md.Name] = true
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
			if rec.spans[name] == 0 {
				t.Errorf("no %s span exported (got %v)", name, rec.spans)
			}
		}
		if rec.spans["S3.UploadPart"] != 3 {
			t.Errorf("%d S3.UploadPart spans, want 3", rec.spans["S3.UploadPart"])
		}
		for _, name := range []string{"safeput.writes", "safeput.write.duration", "safeput.requests", "safeput.upload.bytes"} {
			if !rec.metrics[name] {
				t.Errorf("metric %s not exported (got %v)", name, rec.metrics)
			}
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
		defer off.mu.Unlock()
		if off.posts != 0 {
			t.Errorf("%d exports with OTEL_SDK_DISABLED=true", off.posts)
		}
	})
}
