package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/encoding/protowire"
)

// Signal names a signal as the per-signal variables do (OTEL_EXPORTER_OTLP_<Signal>_ENDPOINT).
type Signal string

// The signals this package exports.
const (
	Traces  Signal = "TRACES"
	Metrics Signal = "METRICS"
)

// DefaultTimeout is the protocol's default for one export (OTEL_EXPORTER_OTLP_TIMEOUT unset).
const DefaultTimeout = 10 * time.Second

// Config is where and how one signal is exported.
type Config struct {
	URL         string            // the full URL posted to
	Headers     map[string]string // added to every request
	Timeout     time.Duration     // of one export, its retry included
	Gzip        bool              // compress the body
	TLS         *tls.Config       // nil: the system's roots, no client certificate
	Temporality sdkmetric.TemporalitySelector
}

// ConfigFromEnv reads the standard OTLP variables for sig with getenv: the per-signal variable
// wins over the general one. ok is false when no endpoint applies to sig (the signal is not
// exported). An error names the variable that cannot be honoured: a protocol other than
// http/protobuf (this package speaks no gRPC and no JSON), an endpoint that is not an http(s) URL,
// an unreadable certificate, a malformed header list, timeout or compression.
func ConfigFromEnv(getenv func(string) string, sig Signal) (cfg Config, ok bool, err error) {
	get := func(name string) (string, string) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + string(sig) + "_" + name)); v != "" {
			return v, "OTEL_EXPORTER_OTLP_" + string(sig) + "_" + name
		}
		return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + name)), "OTEL_EXPORTER_OTLP_" + name
	}
	// The endpoint: per signal, used as given (an empty path is /); for all signals, a base URL
	// the signal's path is joined to.
	sigURL := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + string(sig) + "_ENDPOINT"))
	baseURL := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	var u *url.URL
	switch {
	case sigURL != "":
		if u, err = parseEndpoint("OTEL_EXPORTER_OTLP_"+string(sig)+"_ENDPOINT", sigURL); err != nil {
			return cfg, false, err
		}
		if u.Path == "" {
			u.Path = "/"
		}
	case baseURL != "":
		if u, err = parseEndpoint("OTEL_EXPORTER_OTLP_ENDPOINT", baseURL); err != nil {
			return cfg, false, err
		}
		u.Path = path.Join("/", u.Path, "v1", strings.ToLower(string(sig)))
		u.RawPath = ""
	default:
		return cfg, false, nil
	}
	cfg.URL = u.String()

	if p, name := get("PROTOCOL"); p != "" && p != "http/protobuf" {
		return cfg, false, fmt.Errorf("%s=%s is not supported: safeput exports OTLP over http/protobuf only", name, p)
	}
	cfg.Headers = map[string]string{}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_" + string(sig) + "_HEADERS"} {
		if err := parseHeaders(name, getenv(name), cfg.Headers); err != nil {
			return cfg, false, err
		}
	}
	cfg.Timeout = DefaultTimeout
	if v, name := get("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return cfg, false, fmt.Errorf("%s=%q: want a positive number of milliseconds", name, v)
		}
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		cfg.Gzip = true
	default:
		return cfg, false, fmt.Errorf("%s=%q: want gzip or none", name, v)
	}
	if cfg.TLS, err = tlsConfig(get); err != nil {
		return cfg, false, err
	}
	if sig == Metrics {
		if cfg.Temporality, err = temporalitySelector(getenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE")); err != nil {
			return cfg, false, err
		}
	}
	return cfg, true, nil
}

func parseEndpoint(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: want an http:// or https:// URL", name, v)
	}
	return u, nil
}

// parseHeaders adds the headers of v (key=value,key=value, values percent-encoded) to h.
func parseHeaders(name, v string, h map[string]string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for pair := range strings.SplitSeq(v, ",") {
		k, val, found := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !found || k == "" {
			return fmt.Errorf("%s: %q is not key=value", name, pair)
		}
		dec, err := url.PathUnescape(val)
		if err != nil {
			return fmt.Errorf("%s: header %s: %w", name, k, err)
		}
		h[k] = strings.TrimSpace(dec)
	}
	return nil
}

// tlsConfig reads the CA and client certificate variables; nil when none is set.
func tlsConfig(get func(string) (string, string)) (*tls.Config, error) {
	ca, caName := get("CERTIFICATE")
	cert, certName := get("CLIENT_CERTIFICATE")
	key, _ := get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", caName, ca)
		}
	}
	if cert != "" || key != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s and _CLIENT_KEY: %w", certName, err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}

// temporalitySelector is OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE's selector, as the
// specification defines its values.
func temporalitySelector(v string) (sdkmetric.TemporalitySelector, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "cumulative":
		return sdkmetric.DefaultTemporalitySelector, nil
	case "delta":
		return func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			if k == sdkmetric.InstrumentKindUpDownCounter || k == sdkmetric.InstrumentKindObservableUpDownCounter {
				return metricdata.CumulativeTemporality
			}
			return metricdata.DeltaTemporality
		}, nil
	case "lowmemory":
		return func(k sdkmetric.InstrumentKind) metricdata.Temporality {
			if k == sdkmetric.InstrumentKindCounter || k == sdkmetric.InstrumentKindHistogram {
				return metricdata.DeltaTemporality
			}
			return metricdata.CumulativeTemporality
		}, nil
	}
	return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=%q: want cumulative, delta or lowmemory", v)
}

// client posts encoded requests to one URL.
type client struct {
	cfg  Config
	hc   *http.Client
	what string // what the collector counts as rejected: "spans", "data points"
}

func newClient(cfg Config, what string) *client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	// Its own transport: closing its idle connections at shutdown touches no one else's.
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = dt.Clone()
	} else {
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	return &client{cfg: cfg, hc: &http.Client{Transport: tr}, what: what}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// maxRetryWait bounds the one wait before a retry, whatever Retry-After asks.
const maxRetryWait = 2 * time.Second

// post sends body, bounded by the configured timeout. A 429 or 503 is retried once, after the
// response's Retry-After (at most maxRetryWait; 1 s without it) and within the same deadline;
// anything else that is not a 2xx is an error. An export is telemetry: it gives up rather than
// hold the command.
func (c *client) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if c.cfg.Gzip {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		body = zb.Bytes()
	}
	for attempt := 0; ; attempt++ {
		retryAfter, err := c.once(ctx, body)
		if err == nil || retryAfter < 0 || attempt > 0 {
			return err
		}
		t := time.NewTimer(retryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// once makes one request. On a retryable status it returns the wait before a retry; otherwise
// the wait is negative.
func (c *client) once(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.cfg.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return -1, fmt.Errorf("OTLP export: %w", err)
	}
	defer resp.Body.Close()
	// A response is small (a partial success at most); a bound keeps a wrong server from making
	// the exporter read without end.
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
			return -1, c.partialSuccess(rb)
		}
		return -1, nil
	}
	err = fmt.Errorf("OTLP export to %s: %s: %s", c.cfg.URL, resp.Status, snippet(rb))
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		return retryWait(resp.Header.Get("Retry-After")), err
	}
	return -1, err
}

func retryWait(v string) time.Duration {
	d := time.Second
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = time.Until(t)
	}
	return max(0, min(d, maxRetryWait))
}

func snippet(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// partialSuccess decodes an Export*ServiceResponse: partial_success 1 { rejected 1, error_message
// 2 }, the same shape for spans and metrics. A collector that rejected some is an error; one
// whose response does not parse is not (the request was accepted).
func (c *client) partialSuccess(b []byte) error {
	var rejected int64
	var msg string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			ps, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil
			}
			b = b[n:]
			for len(ps) > 0 {
				pnum, ptyp, m := protowire.ConsumeTag(ps)
				if m < 0 {
					return nil
				}
				ps = ps[m:]
				switch {
				case pnum == 1 && ptyp == protowire.VarintType:
					v, m := protowire.ConsumeVarint(ps)
					if m < 0 {
						return nil
					}
					rejected, ps = int64(v), ps[m:]
				case pnum == 2 && ptyp == protowire.BytesType:
					v, m := protowire.ConsumeString(ps)
					if m < 0 {
						return nil
					}
					msg, ps = v, ps[m:]
				default:
					m := protowire.ConsumeFieldValue(pnum, ptyp, ps)
					if m < 0 {
						return nil
					}
					ps = ps[m:]
				}
			}
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	if rejected == 0 && msg == "" {
		return nil
	}
	return fmt.Errorf("OTLP export to %s: the collector rejected %d %s: %s", c.cfg.URL, rejected, c.what, msg)
}
