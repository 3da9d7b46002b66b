// Package metrics is a Prometheus collector fed by safeput's writer events (writer.Options.Observer).
//
// It lives in the examples module so that Prometheus stays out of the library's go.mod: the
// library only emits writer.Event values, and any metrics system can be fed from them.
//
//	col := metrics.New("safeput")
//	reg.MustRegister(col)
//	st = col.WrapStore(st) // optional: per-request failure counts, and retry kinds (see below)
//	up, err := writer.NewUploader(st, col.Option()) // every write of up feeds col
package metrics

import (
	"context"
	stderrors "errors"

	"github.com/prometheus/client_golang/prometheus"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// Collector turns writer events into Prometheus metrics. It is safe for concurrent use by any
// number of writers. Register it with a prometheus.Registerer; it implements prometheus.Collector.
type Collector struct {
	bytes         prometheus.Counter
	parts         prometheus.Counter
	retries       *prometheus.CounterVec
	verifications *prometheus.CounterVec
	aborts        *prometheus.CounterVec
	failures      *prometheus.CounterVec
	requestFails  *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	all           []prometheus.Collector
}

// New returns a Collector whose metric names start with namespace ("safeput" when empty).
func New(namespace string) *Collector {
	if namespace == "" {
		namespace = "safeput"
	}
	c := &Collector{
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "bytes_total",
			Help: "Bytes of objects that landed and verified."}),
		parts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "parts_total",
			Help: "Multipart parts the store acknowledged."}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "retries_total",
			Help: "Requests re-sent by safeput's retry policy, by the kind of the failure that caused the retry."}, []string{"kind"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "verifications_total",
			Help: "Post-commit verifications, by method and outcome (ok or mismatch)."}, []string{"method", "outcome"}),
		aborts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "aborts_total",
			Help: "Multipart uploads aborted, by outcome (ok, or failed: an incomplete upload was left behind)."}, []string{"outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "failures_total",
			Help: "Writes that failed, by error kind."}, []string{"kind"}),
		requestFails: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "request_failures_total",
			Help: "Store requests that failed, by operation and kind (only through WrapStore)."}, []string{"op", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "upload_duration_seconds",
			Help:    "Time from writer creation to the end of Close, by outcome (done or failed).",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10)}, []string{"outcome"}),
	}
	c.all = []prometheus.Collector{c.bytes, c.parts, c.retries, c.verifications, c.aborts, c.failures, c.requestFails, c.duration}
	// Pre-create the label values a dashboard always wants, so they read 0 instead of absent.
	for _, k := range sperrors.Kinds() {
		c.retries.WithLabelValues(k.String())
		c.failures.WithLabelValues(k.String())
	}
	for _, o := range []string{"ok", "failed"} {
		c.aborts.WithLabelValues(o)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.all {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.all {
		m.Collect(ch)
	}
}

// Option returns the writer option that feeds this collector.
func (c *Collector) Option() func(*writer.Options) {
	return func(o *writer.Options) { o.Observer = c.Observe }
}

// Observe records one event. It never panics on odd input (the writer recovers observer
// panics anyway, but a metrics bug should not even cost an event).
func (c *Collector) Observe(ev writer.Event) {
	switch ev.Type {
	case writer.EventPartDone:
		c.parts.Inc()
	case writer.EventRetry:
		c.retries.WithLabelValues(ev.Kind.String()).Inc()
	case writer.EventVerify:
		outcome := "ok"
		if ev.Err != nil {
			outcome = "mismatch"
		}
		method := string(ev.Method)
		if method == "" {
			method = "none"
		}
		c.verifications.WithLabelValues(method, outcome).Inc()
	case writer.EventAbort:
		outcome := "ok"
		if ev.Err != nil {
			outcome = "failed"
		}
		c.aborts.WithLabelValues(outcome).Inc()
	case writer.EventDone:
		c.bytes.Add(float64(max(ev.Size, 0)))
		c.duration.WithLabelValues("done").Observe(ev.Elapsed.Seconds())
	case writer.EventFailed:
		kind := ev.Kind
		if kind == sperrors.Unknown && ev.Err != nil {
			kind = sperrors.KindOf(ev.Err)
		}
		c.failures.WithLabelValues(kind.String()).Inc()
		c.duration.WithLabelValues("failed").Observe(ev.Elapsed.Seconds())
	}
}

func (c *Collector) failed(ctx context.Context, op string, err error) {
	if err == nil {
		return
	}
	// ClassifyContext: a per-attempt timeout is Transient, only the caller's own end is Canceled.
	k := sperrors.ClassifyContext(ctx, err).Kind
	c.requestFails.WithLabelValues(op, k.String()).Inc()
}

// WrapStore returns st with every failed request counted in request_failures_total{op,kind}.
// Put it outermost (around any fault injector) so it sees what the writer sees.
func (c *Collector) WrapStore(st store.Store) store.Store { return &observedStore{Store: st, c: c} }

type observedStore struct {
	store.Store
	c *Collector
}

// Unwrap keeps the wrapped store's optional capabilities (store.Find), which embedding alone
// would hide behind the embedded interface.
func (s *observedStore) Unwrap() store.Store { return s.Store }

func (s *observedStore) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	out, err := s.Store.PutObject(ctx, in)
	s.c.failed(ctx, "PutObject", err)
	return out, err
}

func (s *observedStore) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	out, err := s.Store.CreateMultipartUpload(ctx, in)
	s.c.failed(ctx, "CreateMultipartUpload", err)
	return out, err
}

func (s *observedStore) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	out, err := s.Store.UploadPart(ctx, in)
	s.c.failed(ctx, "UploadPart", err)
	return out, err
}

func (s *observedStore) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	out, err := s.Store.ListParts(ctx, in)
	s.c.failed(ctx, "ListParts", err)
	return out, err
}

func (s *observedStore) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	out, err := s.Store.CompleteMultipartUpload(ctx, in)
	s.c.failed(ctx, "CompleteMultipartUpload", err)
	return out, err
}

func (s *observedStore) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	err := s.Store.AbortMultipartUpload(ctx, in)
	s.c.failed(ctx, "AbortMultipartUpload", err)
	return err
}

func (s *observedStore) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	out, err := s.Store.HeadObject(ctx, in)
	var re *store.ResponseError
	notFound := stderrors.As(err, &re) && re.StatusCode == 404 // an expected "not there yet"
	if in != nil && !notFound {
		s.c.failed(ctx, "HeadObject", err)
	}
	return out, err
}
