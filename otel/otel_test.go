package otel_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	sperrors "github.com/safeput/safeput/errors"
	spotel "github.com/safeput/safeput/otel"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/writer"
)

const part = 5 << 20 // the smallest part the test servers accept

// harness is an Instrumentation whose spans and metrics the test reads back.
type harness struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	inst   *spotel.Instrumentation
}

func newHarness(t *testing.T, opts ...spotel.Option) *harness {
	t.Helper()
	h := &harness{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	inst, err := spotel.New(append([]spotel.Option{spotel.WithTracerProvider(h.tp), spotel.WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.inst = inst
	t.Cleanup(func() {
		_ = inst.Close()
		_ = h.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return h
}

// root starts the caller's span (a flush, say) that the write's span must sit under.
func (h *harness) root(ctx context.Context) (context.Context, trace.Span) {
	return h.tp.Tracer("test").Start(ctx, "flush")
}

func fastPolicy(extra ...func(*retry.Options)) *retry.Policy {
	return retry.New(append([]func(*retry.Options){
		func(o *retry.Options) { o.InitialInterval = time.Millisecond }, func(o *retry.Options) { o.ThrottleInterval = 2 * time.Millisecond },
		func(o *retry.Options) { o.MaxInterval = 20 * time.Millisecond }, func(o *retry.Options) { o.MaxAttempts = 4 },
	}, extra...)...)
}

// tree is the finished spans: the write's, its requests' and everything by name.
type tree struct {
	write    sdktrace.ReadOnlySpan
	requests []sdktrace.ReadOnlySpan
	byName   map[string][]sdktrace.ReadOnlySpan
}

func (h *harness) tree(t *testing.T, parent trace.SpanContext) tree {
	t.Helper()
	tr := tree{byName: map[string][]sdktrace.ReadOnlySpan{}}
	for _, s := range h.spans.Ended() {
		tr.byName[s.Name()] = append(tr.byName[s.Name()], s)
	}
	writes := tr.byName[spotel.SpanWrite]
	if len(writes) != 1 {
		t.Fatalf("%d %s spans, want 1", len(writes), spotel.SpanWrite)
	}
	tr.write = writes[0]
	if got := tr.write.Parent().SpanID(); got != parent.SpanID() || tr.write.SpanContext().TraceID() != parent.TraceID() {
		t.Errorf("write span's parent is %v, want the caller's span %v", got, parent.SpanID())
	}
	for _, s := range h.spans.Ended() {
		if s.Name() == spotel.SpanWrite || s.Name() == "flush" {
			continue
		}
		if s.Parent().SpanID() != tr.write.SpanContext().SpanID() {
			t.Errorf("%s span's parent is %v, want the write span", s.Name(), s.Parent().SpanID())
		}
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("%s span kind %v, want client", s.Name(), s.SpanKind())
		}
		tr.requests = append(tr.requests, s)
	}
	return tr
}

func attr(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, k attribute.Key, want any) {
	t.Helper()
	v, ok := attr(s, k)
	if !ok {
		t.Errorf("%s: no attribute %s (want %v)", s.Name(), k, want)
		return
	}
	if got := v.AsInterface(); got != want {
		t.Errorf("%s: %s = %v (%T), want %v (%T)", s.Name(), k, got, got, want, want)
	}
}

// metrics collects the reader's data points: sums by name and attribute set, histogram counts.
type metrics struct {
	sums  map[string]map[attribute.Distinct]int64
	sets  map[attribute.Distinct]attribute.Set
	hists map[string]uint64
}

func (h *harness) metrics(t *testing.T) metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	m := metrics{sums: map[string]map[attribute.Distinct]int64{}, sets: map[attribute.Distinct]attribute.Set{}, hists: map[string]uint64{}}
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if m.sums[md.Name] == nil {
						m.sums[md.Name] = map[attribute.Distinct]int64{}
					}
					m.sums[md.Name][p.Attributes.Equivalent()] += p.Value
					m.sets[p.Attributes.Equivalent()] = p.Attributes
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					m.hists[md.Name] += p.Count
				}
			}
		}
	}
	return m
}

// total sums name over every attribute set.
func (m metrics) total(name string) int64 {
	var n int64
	for _, v := range m.sums[name] {
		n += v
	}
	return n
}

// get is name's value for exactly the attributes kvs.
func (m metrics) get(name string, kvs ...attribute.KeyValue) int64 {
	set := attribute.NewSet(kvs...)
	return m.sums[name][set.Equivalent()]
}

// A clean multipart write: a write span under the caller's, one client span per request named as
// otelaws names them and tagged with bucket, key, upload id and part number, and metrics that
// match the Result.
func TestCleanMultipartWrite(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		h := newHarness(t)
		// Every kind of request a multipart write may send, the listing included.
		up, err := writer.NewUploader(env.Store, func(o *writer.Options) {
			o.Profile, o.PartSize, o.Instrumentation = env.Profile(), part, h.inst
			o.Savings &^= writer.SaveRereads
		})
		if err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(2*part + 1)
		ctx, root := h.root(context.Background())
		w, err := up.New(ctx, env.Bucket, "otel/clean")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		root.End()
		res := w.Result()
		tr := h.tree(t, root.SpanContext())

		ws := tr.write
		wantAttr(t, ws, spotel.AttrBucket, env.Bucket)
		wantAttr(t, ws, spotel.AttrKey, "otel/clean")
		wantAttr(t, ws, spotel.AttrSize, int64(len(data)))
		wantAttr(t, ws, spotel.AttrParts, int64(3))
		wantAttr(t, ws, spotel.AttrPartSize, int64(part))
		wantAttr(t, ws, spotel.AttrUploadID, res.UploadID)
		wantAttr(t, ws, spotel.AttrVerification, string(res.Verified))
		wantAttr(t, ws, spotel.AttrOutcome, spotel.OutcomeLanded)
		if _, ok := attr(ws, spotel.AttrErrorType); ok {
			t.Error("a landed write's span has error.type")
		}
		if ws.Status().Code == codes.Error {
			t.Errorf("write span status %v", ws.Status())
		}

		if len(tr.requests) != res.Requests {
			t.Errorf("%d request spans, Result.Requests %d", len(tr.requests), res.Requests)
		}
		for name, n := range map[string]int{"S3.CreateMultipartUpload": 1, "S3.UploadPart": 3, "S3.ListParts": 1, "S3.CompleteMultipartUpload": 1} {
			if got := len(tr.byName[name]); got != n {
				t.Errorf("%d %s spans, want %d", got, name, n)
			}
		}
		if len(tr.byName["S3.HeadObject"]) < 1 {
			t.Error("no S3.HeadObject span: the verification is not traced")
		}
		seen := map[int64]bool{}
		for _, s := range tr.byName["S3.UploadPart"] {
			wantAttr(t, s, spotel.AttrBucket, env.Bucket)
			wantAttr(t, s, spotel.AttrKey, "otel/clean")
			wantAttr(t, s, spotel.AttrUploadID, res.UploadID)
			wantAttr(t, s, spotel.AttrRPCMethod, "UploadPart")
			v, _ := attr(s, spotel.AttrPartNumber)
			seen[v.AsInt64()] = true
			if _, ok := attr(s, spotel.AttrResendCount); ok {
				t.Errorf("first attempt of part %d has http.request.resend_count", v.AsInt64())
			}
			if s.Status().Code == codes.Error {
				t.Errorf("part %d span status %v", v.AsInt64(), s.Status())
			}
		}
		if !seen[1] || !seen[2] || !seen[3] {
			t.Errorf("part numbers on UploadPart spans: %v, want 1, 2, 3", seen)
		}
		for _, s := range tr.byName["S3.CompleteMultipartUpload"] {
			wantAttr(t, s, spotel.AttrUploadID, res.UploadID)
		}

		m := h.metrics(t)
		if got := m.total(spotel.MetricUploadBytes); got != res.BytesSent {
			t.Errorf("%s = %d, Result.BytesSent %d", spotel.MetricUploadBytes, got, res.BytesSent)
		}
		if got := m.total(spotel.MetricRequests); got != int64(res.Requests) {
			t.Errorf("%s = %d, Result.Requests %d", spotel.MetricRequests, got, res.Requests)
		}
		if got := m.get(spotel.MetricRequests, spotel.AttrRPCMethod.String("UploadPart")); got != 3 {
			t.Errorf("UploadPart requests = %d, want 3", got)
		}
		if got := m.get(spotel.MetricWrites, spotel.AttrOutcome.String(spotel.OutcomeLanded), spotel.AttrVerification.String(string(res.Verified))); got != 1 {
			t.Errorf("landed writes verified by %s = %d, want 1", res.Verified, got)
		}
		if got := m.hists[spotel.MetricWriteDuration]; got != 1 {
			t.Errorf("%s has %d observations, want 1", spotel.MetricWriteDuration, got)
		}
		if got := m.total(spotel.MetricRetries); got != 0 {
			t.Errorf("%d retries counted on a clean write", got)
		}
		if got := m.total(spotel.MetricLeftBehind); got != 0 {
			t.Errorf("%d uploads left behind", got)
		}
	})
}

// A part whose connection is reset mid-body is sent again: the retry is an event on the write's
// span, the part has two UploadPart spans (the first failed, the second a resend), and the
// retry counter matches Result.Failures.
func TestRetriedPart(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		h := newHarness(t)
		proxy, st := wirekit.Proxied(t, env, 37)
		proxy.SetRules(faultproxy.Rule{Op: faultproxy.UploadPart, PartNumber: 2, Nth: 1,
			Fault: faultproxy.Fault{Kind: faultproxy.ResetAfterBytes, Bytes: 4 << 10}})
		up, err := writer.NewUploader(st, func(o *writer.Options) {
			o.Profile = env.Profile()
			o.PartSize = part
			o.Retry = fastPolicy()
			o.Instrumentation = h.inst
		})
		if err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(2*part + 1)
		ctx, root := h.root(context.Background())
		res, err := up.Upload(ctx, env.Bucket, "otel/retried", bytes.NewReader(data))
		root.End()
		if err != nil {
			t.Fatal(err)
		}
		if n := proxy.Stats().Injected[faultproxy.ResetAfterBytes]; n != 1 {
			t.Fatalf("%d resets injected, want 1", n)
		}
		tr := h.tree(t, root.SpanContext())
		var failed, resent int
		for _, s := range tr.byName["S3.UploadPart"] {
			if v, _ := attr(s, spotel.AttrPartNumber); v.AsInt64() != 2 {
				continue
			}
			if s.Status().Code == codes.Error {
				failed++
				wantAttr(t, s, spotel.AttrErrorType, sperrors.Transient.String())
			} else {
				resent++
				wantAttr(t, s, spotel.AttrResendCount, int64(1))
			}
		}
		if failed != 1 || resent != 1 {
			t.Errorf("part 2: %d failed and %d resent UploadPart spans, want 1 and 1", failed, resent)
		}
		var retries int
		for _, e := range tr.write.Events() {
			if e.Name != spotel.EventRetry {
				continue
			}
			retries++
			for _, kv := range e.Attributes {
				switch kv.Key {
				case spotel.AttrErrorType:
					if kv.Value.AsString() != sperrors.Transient.String() {
						t.Errorf("retry event error.type %s", kv.Value.AsString())
					}
				case spotel.AttrPartNumber:
					if kv.Value.AsInt64() != 2 {
						t.Errorf("retry event on part %d", kv.Value.AsInt64())
					}
				}
			}
		}
		if retries != 1 {
			t.Errorf("%d retry events on the write span, want 1", retries)
		}
		if len(tr.requests) != res.Requests {
			t.Errorf("%d request spans, Result.Requests %d", len(tr.requests), res.Requests)
		}
		m := h.metrics(t)
		if got := m.get(spotel.MetricRetries, spotel.AttrErrorType.String(sperrors.Transient.String())); got != int64(res.Failures[sperrors.Transient]) || got != 1 {
			t.Errorf("Transient retries = %d, Result.Failures %v", got, res.Failures)
		}
		if got := m.total(spotel.MetricUploadBytes); got != res.BytesSent {
			t.Errorf("%s = %d, Result.BytesSent %d", spotel.MetricUploadBytes, got, res.BytesSent)
		}
		if got := m.total(spotel.MetricRequests); got != int64(res.Requests) {
			t.Errorf("%s = %d, Result.Requests %d", spotel.MetricRequests, got, res.Requests)
		}
		if got := m.get(spotel.MetricRequests, spotel.AttrRPCMethod.String("UploadPart"), spotel.AttrErrorType.String(sperrors.Transient.String())); got != 1 {
			t.Errorf("failed UploadPart requests = %d, want 1", got)
		}
	})
}

// A part the store refuses (403 AccessDenied) fails the write Permanent: the write span's status
// is Error with error.type Permanent, the refused request's span carries the status code, the
// upload is aborted (an event), and the metrics count a failed write and nothing left behind.
func TestPermanentFailure(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		h := newHarness(t)
		proxy, st := wirekit.Proxied(t, env, 38)
		proxy.SetRules(faultproxy.Rule{Op: faultproxy.UploadPart,
			Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 403, Code: "AccessDenied"}})
		up, err := writer.NewUploader(st, func(o *writer.Options) {
			o.Profile = env.Profile()
			o.PartSize = part
			o.Retry = fastPolicy()
			o.Instrumentation = h.inst
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, root := h.root(context.Background())
		_, err = up.Upload(ctx, env.Bucket, "otel/refused", bytes.NewReader(s3test.RandomBytes(2*part+1)))
		root.End()
		if sperrors.KindOf(err) != sperrors.Permanent {
			t.Fatalf("error %v (kind %v), want Permanent", err, sperrors.KindOf(err))
		}
		tr := h.tree(t, root.SpanContext())
		if tr.write.Status().Code != codes.Error {
			t.Errorf("write span status %v, want Error", tr.write.Status())
		}
		wantAttr(t, tr.write, spotel.AttrErrorType, sperrors.Permanent.String())
		wantAttr(t, tr.write, spotel.AttrOutcome, spotel.OutcomeFailed)
		// Every part the proxy answered is refused; a part still in flight then is cancelled.
		refused := 0
		for _, s := range tr.byName["S3.UploadPart"] {
			if s.Status().Code != codes.Error {
				t.Errorf("an UploadPart span without error status: %v", s.Attributes())
			}
			if v, ok := attr(s, spotel.AttrStatusCode); ok && v.AsInt64() == 403 {
				refused++
				wantAttr(t, s, spotel.AttrErrorType, sperrors.Permanent.String())
			} else {
				wantAttr(t, s, spotel.AttrErrorType, sperrors.Canceled.String())
			}
		}
		if refused == 0 {
			t.Error("no UploadPart span with http.response.status_code 403")
		}
		if len(tr.byName["S3.AbortMultipartUpload"]) == 0 {
			t.Error("no S3.AbortMultipartUpload span")
		}
		aborted := false
		for _, e := range tr.write.Events() {
			aborted = aborted || e.Name == spotel.EventAbort
		}
		if !aborted {
			t.Error("no abort event on the write span")
		}
		m := h.metrics(t)
		if got := m.get(spotel.MetricWrites, spotel.AttrOutcome.String(spotel.OutcomeFailed), spotel.AttrErrorType.String(sperrors.Permanent.String())); got != 1 {
			t.Errorf("failed Permanent writes = %d, want 1", got)
		}
		if got := m.total(spotel.MetricRetries); got != 0 {
			t.Errorf("%d retries of a Permanent failure", got)
		}
		if got := m.total(spotel.MetricLeftBehind); got != 0 {
			t.Errorf("%d uploads left behind after a confirmed abort", got)
		}
	})
}

// At defaults (no profile), an Uploader's first multipart write asks whether the server checks
// part checksums in an upload of its own (the checksum probe): its create, part and abort are
// spans of the write tagged safeput.request = probe, in another upload than the write's, and
// counted apart in the metrics; the untagged spans and requests are the write's Result.Requests.
func TestProbeRequestsMarked(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		h := newHarness(t)
		up, err := writer.NewUploader(env.Store, func(o *writer.Options) { o.PartSize, o.Instrumentation = part, h.inst })
		if err != nil {
			t.Fatal(err)
		}
		data := s3test.RandomBytes(2*part + 1)
		ctx, root := h.root(context.Background())
		res, err := up.Upload(ctx, env.Bucket, "otel/probed", bytes.NewReader(data))
		root.End()
		if err != nil {
			t.Fatal(err)
		}
		tr := h.tree(t, root.SpanContext())
		probes := map[string]int{}
		var writes int
		for _, s := range tr.requests {
			v, ok := attr(s, spotel.AttrRequest)
			if !ok {
				writes++
				continue
			}
			if v.AsString() != spotel.RequestProbe {
				t.Errorf("%s: %s = %q, want %q", s.Name(), spotel.AttrRequest, v.AsString(), spotel.RequestProbe)
			}
			probes[s.Name()]++
			if id, _ := attr(s, spotel.AttrUploadID); id.AsString() == res.UploadID {
				t.Errorf("%s of the probe names the write's upload %s", s.Name(), res.UploadID)
			}
		}
		for name, n := range map[string]int{"S3.CreateMultipartUpload": 1, "S3.UploadPart": 1, "S3.AbortMultipartUpload": 1} {
			if probes[name] != n {
				t.Errorf("%d %s spans tagged %s, want %d (all tagged: %v)", probes[name], name, spotel.RequestProbe, n, probes)
			}
		}
		if writes != res.Requests {
			t.Errorf("%d untagged request spans, Result.Requests %d", writes, res.Requests)
		}
		m := h.metrics(t)
		probe := spotel.AttrRequest.String(spotel.RequestProbe)
		var probeRequests int64
		for _, op := range []string{"CreateMultipartUpload", "UploadPart", "AbortMultipartUpload"} {
			got := m.get(spotel.MetricRequests, spotel.AttrRPCMethod.String(op), probe)
			if op == "UploadPart" && !env.Srv.IgnoresChecksums() {
				// The server refuses the probe's part as a digest mismatch: the answer asked for,
				// counted as a failed request.
				got = m.get(spotel.MetricRequests, spotel.AttrRPCMethod.String(op), probe, spotel.AttrErrorType.String(sperrors.Integrity.String()))
			}
			if got != 1 {
				t.Errorf("%s requests tagged %s = %d, want 1", op, spotel.RequestProbe, got)
			}
			probeRequests += got
		}
		if got := m.total(spotel.MetricRequests) - probeRequests; got != int64(res.Requests) {
			t.Errorf("%s untagged = %d, Result.Requests %d", spotel.MetricRequests, got, res.Requests)
		}
		if got := m.total(spotel.MetricUploadBytes) - m.get(spotel.MetricUploadBytes, probe); got != res.BytesSent {
			t.Errorf("%s untagged = %d, Result.BytesSent %d", spotel.MetricUploadBytes, got, res.BytesSent)
		}
	})
}
