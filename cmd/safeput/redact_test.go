package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/safeput/safeput/storetest/echostore"
	"github.com/safeput/safeput/storetest/s3test"
)

// collector is an OTLP/HTTP endpoint that keeps every body it is sent; with refuse, it answers
// 401 quoting the request's headers back, as a collector that echoes them would.
type collector struct {
	mu     sync.Mutex
	bodies bytes.Buffer
	refuse bool
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies.Write(b)
	c.mu.Unlock()
	if c.refuse {
		http.Error(w, "refused: "+headerText(r.Header), http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func headerText(h http.Header) string {
	var b strings.Builder
	for k, v := range h {
		b.WriteString(k + ": " + strings.Join(v, ",") + "; ")
	}
	return b.String()
}

func (c *collector) received() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bodies.String()
}

// TestPutPrintsNoSecret: put, through both backends at every log level, writes with temporary
// credentials and an SSE-C key to a store that echoes every request header into its error
// message (echostore), exporting its spans and metrics over OTLP to a collector whose URL has a
// password and whose header carries an API key; the metrics collector refuses, quoting the
// request's headers. Neither the --json answer nor stderr (the outcome line, the log lines, the
// telemetry warning), nor the spans the collector received, holds the secret key, the session
// token, the SSE-C key, a request signature, the collector's password or its API key. A
// malformed OTEL_EXPORTER_OTLP_HEADERS is reported by name, without the value.
func TestPutPrintsNoSecret(t *testing.T) {
	const (
		secretKey = "wJalrXUtnFEMI/K7MDENG/cli-Zq9SECRETkey"
		token     = "IQoJb3JpZ2luX2VjEJr//////////cli-Zq9TOKENvalue+/="
		otelPass  = "otel-Zq9PASSWORD"
		apiKey    = "api-Zq9HEADERkey"
		bearer    = "Zq9BEARERtokenValue"
	)
	srv := echostore.Start(t, secretKey)
	traces, metrics := &collector{}, &collector{refuse: true}
	tracesSrv, metricsSrv := httptest.NewServer(traces), httptest.NewServer(metrics)
	t.Cleanup(tracesSrv.Close)
	t.Cleanup(metricsSrv.Close)
	withPass := func(u string) string { return strings.Replace(u, "http://", "http://otel:"+otelPass+"@", 1) }

	dir := t.TempDir()
	sseKey := s3test.RandomBytes(32)
	caFile, keyFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "sse-c.key")
	for p, b := range map[string][]byte{caFile: srv.CABundle, keyFile: []byte(base64.StdEncoding.EncodeToString(sseKey) + "\n")} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := writeFile(t, s3test.RandomBytes(1000))
	env := append(cleanEnv(), "AWS_REGION=us-east-1",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+withPass(tracesSrv.URL)+"/v1/traces",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="+withPass(metricsSrv.URL)+"/v1/metrics",
		"OTEL_EXPORTER_OTLP_HEADERS=x-api-key="+apiKey)
	secrets := []string{secretKey, token, base64.StdEncoding.EncodeToString(sseKey), string(sseKey), otelPass, apiKey,
		base64.StdEncoding.EncodeToString([]byte("otel:" + otelPass))}
	var printed strings.Builder
	for _, backend := range []string{"aws", "minio"} {
		for _, level := range []string{"debug", "info", "warn", "error"} {
			r := runWith(t, env, nil, "--endpoint", srv.URL, "--ca-bundle", caFile, "--path-style", "--backend", backend,
				"--access-key", "AKIAIOSFODNN7EXAMPLE", "--secret-key", secretKey, "--session-token", token,
				"--log-level", level, "--json", "put", "--sse-c-key-file", keyFile, file, "s3://bucket/"+backend+"-"+level)
			expectCode(t, r, 4, backend+" at "+level) // InvalidRequest: permanent
			var je struct{ Kind, Error string }
			if err := json.Unmarshal([]byte(r.stdout), &je); err != nil || je.Kind != "permanent" || !strings.Contains(je.Error, "Also: REDACTED") {
				t.Errorf("%s at %s: --json answer %q (%v) is not the store's redacted refusal", backend, level, r.stdout, err)
			}
			if !strings.Contains(r.stderr, "safeput: ") || (level == "debug") != strings.Contains(r.stderr, "operation failed") {
				t.Errorf("%s at %s: stderr is not the outcome line and the level's log lines:\n%s", backend, level, r.stderr)
			}
			if level != "error" && !strings.Contains(r.stderr, "otel:REDACTED@") {
				t.Errorf("%s at %s: the refused metrics export is not logged with the URL redacted:\n%s", backend, level, r.stderr)
			}
			printed.WriteString(r.stdout + r.stderr)
		}
	}

	// A header list with an entry that is not key=value: the warning names the variable and the
	// entry, not what it holds.
	bad := append(env[:len(env):len(env)], "OTEL_EXPORTER_OTLP_METRICS_HEADERS=x-ok=1,Authorization Bearer "+bearer)
	r := runWith(t, bad, nil, "--endpoint", srv.URL, "--ca-bundle", caFile, "--path-style", "--access-key", "AKIAIOSFODNN7EXAMPLE",
		"--secret-key", secretKey, "put", file, "s3://bucket/bad-headers")
	if !strings.Contains(r.stderr, "OpenTelemetry metrics are not exported: OTEL_EXPORTER_OTLP_METRICS_HEADERS: entry 2 is not key=value") {
		t.Errorf("the malformed header list is not reported by name:\n%s", r.stderr)
	}
	printed.WriteString(r.stdout + r.stderr)

	out := printed.String()
	spans := traces.received()
	if !strings.Contains(spans, "S3.PutObject") {
		t.Fatal("the collector received no span: the test shows nothing")
	}
	for _, s := range append(append(secrets, bearer), srv.Signatures()...) {
		part := s[:min(len(s), 16)]
		if strings.Contains(out, part) {
			t.Errorf("%q (of the secret %q) is in the output:\n%s", part, s, out)
		}
		if strings.Contains(spans, part) {
			t.Errorf("%q (of the secret %q) is in the spans the collector received", part, s)
		}
	}
}
