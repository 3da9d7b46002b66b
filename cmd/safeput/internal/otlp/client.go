package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
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

	sperrors "github.com/safeput/safeput/errors"
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

// parseEndpoint parses the endpoint v of variable name. Its errors never quote v's password: a
// url.Error quotes the whole URL, so only its cause is kept.
func parseEndpoint(name, v string) (*url.URL, error) {
	u, err := url.Parse(v)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s is not a URL: %s", name, sperrors.Redact(err.Error()))
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: want an http:// or https:// URL", name, shownURL(u))
	}
	return u, nil
}

// shownURL is u as messages print it: a password in its user info is replaced by REDACTED.
func shownURL(u *url.URL) string {
	if _, ok := u.User.Password(); !ok {
		return u.String()
	}
	c := *u
	c.User = url.UserPassword(u.User.Username(), "REDACTED")
	return c.String()
}

// parseHeaders adds the headers of v (key=value,key=value, values percent-encoded) to h. Its
// errors name the entry and the header, never a value: the values are credentials (an API key,
// an Authorization header), and an entry without "=" may be one whole.
func parseHeaders(name, v string, h map[string]string) error {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	n := 0
	for pair := range strings.SplitSeq(v, ",") {
		n++
		k, val, found := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !found || k == "" {
			return fmt.Errorf("%s: entry %d is not key=value", name, n)
		}
		dec, err := url.PathUnescape(val)
		if err != nil {
			return fmt.Errorf("%s: header %q: its value is not percent-encoded", name, k)
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
	// shown is the URL as errors print it (shownURL); secrets are the header values and the
	// URL's password, which errors never carry, whatever a collector echoes of the request.
	shown   string
	secrets []string
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
	c := &client{cfg: cfg, hc: &http.Client{Transport: tr}, what: what, shown: cfg.URL}
	if u, err := url.Parse(cfg.URL); err == nil {
		c.shown = shownURL(u)
		if pw, ok := u.User.Password(); ok {
			// The password as given, as a URL escapes it, and inside the Basic credentials
			// net/http sends for it.
			basic := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pw))
			c.secrets = append(c.secrets, pw, url.QueryEscape(pw), basic)
		}
	}
	for _, v := range cfg.Headers {
		c.secrets = append(c.secrets, v)
	}
	return c
}

// minSecretLen is the shortest header value or password redact blanks: a shorter one would
// blank ordinary words of a message.
const minSecretLen = 8

// redact returns s without the client's secrets, and redacted as errors.Redact does.
func (c *client) redact(s string) string {
	for _, v := range c.secrets {
		if len(v) >= minSecretLen {
			s = strings.ReplaceAll(s, v, "REDACTED")
		}
	}
	return sperrors.Redact(s)
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
		return -1, errors.New(c.redact(err.Error()))
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
		// net/http masks the URL's password in its error already; the redaction is for the rest.
		return -1, fmt.Errorf("OTLP export: %w", redactedError{err, c.redact(err.Error())})
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
	// Redacted before it is cut, and after: a secret cut in two is no longer recognisable.
	err = errors.New(c.redact(fmt.Sprintf("OTLP export to %s: %s: %s", c.shown, resp.Status, snippet(c.redact(string(rb))))))
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

func snippet(s string) string {
	const n = 200
	s = strings.TrimSpace(s)
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
	return errors.New(c.redact(fmt.Sprintf("OTLP export to %s: the collector rejected %d %s: %s", c.shown, rejected, c.what, msg)))
}

// redactedError is err with its text redacted; errors.Is and As still reach err (a timeout, a
// cancelled context).
type redactedError struct {
	err  error
	text string
}

func (e redactedError) Error() string { return e.text }
func (e redactedError) Unwrap() error { return e.err }
