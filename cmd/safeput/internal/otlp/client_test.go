package otlp

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/protobuf/proto"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFromEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		sig     Signal
		ok      bool
		url     string
		errWant string
	}{
		{"unset", nil, Traces, false, "", ""},
		{"base", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, Traces, true, "http://c:4318/v1/traces", ""},
		{"base path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/otlp/"}, Metrics, true, "https://c/otlp/v1/metrics", ""},
		{"per signal as is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x/y"}, Traces, true, "http://t:1/x/y", ""},
		{"per signal no path", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:2"}, Metrics, true, "http://m:2/", ""},
		{"other signal only", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:2"}, Traces, false, "", ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, Traces, false, "", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported"},
		{"json per signal", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"}, Metrics, false, "", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json is not supported"},
		{"protobuf", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, Traces, true, "http://c/v1/traces", ""},
		{"no scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, Traces, false, "", "want an http:// or https:// URL"},
		{"bad timeout", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "5s"}, Traces, false, "", "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{"bad header", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, Traces, false, "", "not key=value"},
		{"bad compression", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, Traces, false, "", "want gzip or none"},
		{"missing CA", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent.pem"}, Traces, false, "", "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{"bad temporality", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "sometimes"}, Metrics, false, "", "TEMPORALITY_PREFERENCE"},
	}
	for _, c := range cases {
		cfg, ok, err := ConfigFromEnv(env(c.env), c.sig)
		if c.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), c.errWant) {
				t.Errorf("%s: error %v, want one with %q", c.name, err, c.errWant)
			}
			continue
		}
		if err != nil || ok != c.ok || cfg.URL != c.url {
			t.Errorf("%s: %q, %v, %v; want %q, %v", c.name, cfg.URL, ok, err, c.url, c.ok)
		}
	}

	cfg, _, err := ConfigFromEnv(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":                       "http://c",
		"OTEL_EXPORTER_OTLP_HEADERS":                        "Authorization=Basic%20abc, x-a = 1 ",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS":                "x-a=2",
		"OTEL_EXPORTER_OTLP_TIMEOUT":                        "1500",
		"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT":                "250",
		"OTEL_EXPORTER_OTLP_COMPRESSION":                    "gzip",
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta",
	}), Metrics)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Headers["Authorization"] != "Basic abc" || cfg.Headers["x-a"] != "2" || len(cfg.Headers) != 2 {
		t.Errorf("headers %v", cfg.Headers)
	}
	if cfg.Timeout != 250*time.Millisecond || !cfg.Gzip {
		t.Errorf("timeout %v, gzip %v", cfg.Timeout, cfg.Gzip)
	}
	if cfg.Temporality(sdkmetric.InstrumentKindCounter) != metricdata.DeltaTemporality ||
		cfg.Temporality(sdkmetric.InstrumentKindObservableUpDownCounter) != metricdata.CumulativeTemporality {
		t.Error("delta preference not applied")
	}
}

// The exporter posts protobuf with the headers, gzip when asked; a 503 is retried once, a 400 is
// not; a partial success is an error.
func TestPost(t *testing.T) {
	var calls atomic.Int32
	var status atomic.Int32
	status.Store(http.StatusOK)
	var partial atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("X-Key") != "k" || r.URL.Path != "/v1/metrics" {
			http.Error(w, "bad request "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var m collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil || len(m.ResourceMetrics) != 1 {
			http.Error(w, "undecodable", http.StatusBadRequest)
			return
		}
		if s := int(status.Load()); s != http.StatusOK {
			status.Store(http.StatusOK) // once
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", s)
			return
		}
		resp := &collmetrics.ExportMetricsServiceResponse{}
		if partial.Load() {
			resp.PartialSuccess = &collmetrics.ExportMetricsPartialSuccess{RejectedDataPoints: 2, ErrorMessage: "too old"}
		}
		out, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	for _, gz := range []bool{false, true} {
		e := NewMetricExporter(Config{URL: srv.URL + "/v1/metrics", Headers: map[string]string{"X-Key": "k"}, Gzip: gz, Timeout: 5 * time.Second})
		rm := &metricdata.ResourceMetrics{ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{{Name: "m", Data: metricdata.Gauge[int64]{}}}}}}
		ctx := context.Background()
		calls.Store(0)
		if err := e.Export(ctx, rm); err != nil || calls.Load() != 1 {
			t.Errorf("gzip %v: %v after %d calls", gz, err, calls.Load())
		}
		calls.Store(0)
		status.Store(http.StatusServiceUnavailable)
		if err := e.Export(ctx, rm); err != nil || calls.Load() != 2 {
			t.Errorf("gzip %v, 503 then 200: %v after %d calls", gz, err, calls.Load())
		}
		calls.Store(0)
		status.Store(http.StatusBadGateway)
		if err := e.Export(ctx, rm); err == nil || calls.Load() != 1 || !strings.Contains(err.Error(), "502") {
			t.Errorf("gzip %v, 502: %v after %d calls", gz, err, calls.Load())
		}
		status.Store(http.StatusOK)
		partial.Store(true)
		if err := e.Export(ctx, rm); err == nil || !strings.Contains(err.Error(), "rejected 2 data points: too old") {
			t.Errorf("gzip %v, partial success: %v", gz, err)
		}
		partial.Store(false)
		// Nothing recorded: no request.
		calls.Store(0)
		if err := e.Export(ctx, &metricdata.ResourceMetrics{}); err != nil || calls.Load() != 0 {
			t.Errorf("empty export: %v, %d calls", err, calls.Load())
		}
		_ = e.Shutdown(ctx)
		if err := e.Export(ctx, rm); err != nil || calls.Load() != 0 {
			t.Errorf("export after shutdown: %v, %d calls", err, calls.Load())
		}
	}
}

// A collector that is down fails the export at once; one that hangs fails it at the deadline;
// neither retries past it.
func TestPostCollectorDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	e := NewSpanExporter(Config{URL: "http://" + addr + "/v1/traces", Timeout: 5 * time.Second})
	start := time.Now()
	if err := e.c.post(context.Background(), []byte{}); err == nil {
		t.Error("no error from a closed port")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refused connection took %v", d)
	}

	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	e = NewSpanExporter(Config{URL: srv.URL + "/v1/traces", Timeout: 300 * time.Millisecond})
	start = time.Now()
	if err := e.c.post(context.Background(), []byte{}); err == nil {
		t.Error("no error from a hanging collector")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("hanging collector held the export %v", d)
	}
}

// TestSecretsNotPrinted: an endpoint's password and the header values are credentials: no error
// quotes them, neither ConfigFromEnv's about a malformed variable nor an export's, even when the
// collector echoes the request back.
func TestSecretsNotPrinted(t *testing.T) {
	const password, apiKey, bearer = "pw-Zq9otlpPASS", "key-Zq9otlpHEADER", "Zq9otlpBEARERtoken"
	leaks := func(what, s string) {
		t.Helper()
		for _, v := range []string{password, apiKey, bearer} {
			if strings.Contains(s, v) {
				t.Errorf("%s quotes %q: %s", what, v, s)
			}
		}
	}
	for _, e := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://otel:" + password + "@c:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:" + password + "@c:bad"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://otel:" + password + "@c\x7f"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=" + apiKey + ",Authorization Bearer " + bearer},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-api-key=" + apiKey + "%zz"},
	} {
		_, _, err := ConfigFromEnv(env(e), Traces)
		if err == nil {
			t.Errorf("%v: no error", e)
			continue
		}
		leaks("ConfigFromEnv", err.Error())
	}
	_, _, err := ConfigFromEnv(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://otel:" + password + "@c:4318"}), Traces)
	if err == nil || !strings.Contains(err.Error(), "otel:REDACTED@c:4318") {
		t.Errorf("error %v does not show the endpoint with its password redacted", err)
	}

	// A collector that refuses every export, echoing the request's headers.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		for k, v := range r.Header {
			b.WriteString(k + " " + strings.Join(v, " ") + "; ")
		}
		http.Error(w, "refused: "+b.String(), http.StatusUnauthorized)
	}))
	defer srv.Close()
	withUser := strings.Replace(srv.URL, "http://", "http://otel:"+password+"@", 1)
	cfg, ok, err := ConfigFromEnv(env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": withUser,
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-api-key=" + apiKey + ",x-token=" + bearer,
	}), Traces)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	c := newClient(cfg, "spans")
	defer c.close()
	err = c.post(context.Background(), []byte{})
	if err == nil {
		t.Fatal("a refused export is not an error")
	}
	leaks("post", err.Error())
	if basic := base64.StdEncoding.EncodeToString([]byte("otel:" + password)); strings.Contains(err.Error(), basic) {
		t.Errorf("post quotes the Basic credentials: %v", err)
	}
	if !strings.Contains(err.Error(), "otel:REDACTED@") || !strings.Contains(err.Error(), "401") {
		t.Errorf("error %v does not say where and what", err)
	}
}
