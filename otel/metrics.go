package otel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/writer"
)

// The metric names. Units are UCUM ("By", "s", "{request}"), names carry no unit or _total, and
// every failure is tagged error.type = the safeput errors.Kind (Transient, Throttled, ...), as
// OpenTelemetry's semantic conventions ask.
const (
	// MetricUploadBytes counts request-body bytes sent by PutObject and UploadPart attempts,
	// retries included (for a successful write, the sum of Result.BytesSent); the checksum
	// probe's are tagged safeput.request = probe (AttrRequest).
	MetricUploadBytes = "safeput.upload.bytes"
	// MetricWriteDuration is the duration of each write (histogram, s), by safeput.outcome
	// (landed, failed) and error.type.
	MetricWriteDuration = "safeput.write.duration"
	// MetricWrites counts finished writes by safeput.outcome, safeput.verification.method (what
	// proved a landed object: Result.Verified) and error.type.
	MetricWrites = "safeput.writes"
	// MetricRequests counts store requests (each attempt) by rpc.method (PutObject,
	// UploadPart, ...), for a failed one error.type, and for the checksum probe's
	// safeput.request = probe (AttrRequest): a write's Result.Requests counts the others.
	MetricRequests = "safeput.requests"
	// MetricRetries counts retried attempts by error.type: the Kind of the failure retried.
	MetricRetries = "safeput.retries"
	// MetricLeftBehind counts incomplete multipart uploads a write knows it left and could not
	// abort (Result.LeftBehind, or an error with AbortFailed): the number that must stay 0.
	MetricLeftBehind = "safeput.uploads.left_behind"
	// MetricBudgetUsage and MetricBudgetLimit are the memory budget's bytes in use and its size
	// (WithBudget), as observed at each collection.
	MetricBudgetUsage = "safeput.memory.budget.usage"
	MetricBudgetLimit = "safeput.memory.budget.limit"
	// MetricBudgetWait is how long a part buffer waited for room in the memory budget
	// (histogram, s); only waits are recorded.
	MetricBudgetWait = "safeput.memory.budget.wait.duration"
	// MetricRecoverUploads counts the journal records a Recover settled, by
	// safeput.recover.outcome (landed, aborted, gone, failed, ...).
	MetricRecoverUploads = "safeput.recover.uploads"
	// MetricRecoverFailures counts Recover runs that failed as a whole (the journal could not be
	// listed), by error.type.
	MetricRecoverFailures = "safeput.recover.failures"
)

// Attribute keys of safeput's own (the others are OpenTelemetry's semantic conventions).
const (
	AttrOutcome        = attribute.Key("safeput.outcome")
	AttrVerification   = attribute.Key("safeput.verification.method")
	AttrRecoverOutcome = attribute.Key("safeput.recover.outcome")
	AttrErrorType      = attribute.Key("error.type")
	AttrRPCMethod      = attribute.Key("rpc.method")
)

// Write outcomes.
const (
	OutcomeLanded = "landed"
	OutcomeFailed = "failed"
)

type instruments struct {
	bytes         metric.Int64Counter
	writeDuration metric.Float64Histogram
	writes        metric.Int64Counter
	requests      metric.Int64Counter
	retries       metric.Int64Counter
	leftBehind    metric.Int64Counter
	budgetWait    metric.Float64Histogram
	recovered     metric.Int64Counter
	recoverFailed metric.Int64Counter
}

func newInstruments(m metric.Meter) (instruments, error) {
	var (
		in  instruments
		err error
	)
	c := func(name, unit, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var ctr metric.Int64Counter
		ctr, err = m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return ctr
	}
	h := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		if err != nil {
			return nil
		}
		var hist metric.Float64Histogram
		hist, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		return hist
	}
	in.bytes = c(MetricUploadBytes, "By", "Request-body bytes sent by PutObject and UploadPart attempts, retries included.")
	in.writeDuration = h(MetricWriteDuration, "Duration of a write, from its start to its verified commit or its failure.",
		0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
	in.writes = c(MetricWrites, "{write}", "Finished writes by outcome and verification method.")
	in.requests = c(MetricRequests, "{request}", "Store requests sent (each attempt), by operation and outcome.")
	in.retries = c(MetricRetries, "{retry}", "Retried attempts by the kind of the failure retried.")
	in.leftBehind = c(MetricLeftBehind, "{upload}", "Incomplete multipart uploads left behind that a sweep must remove.")
	in.budgetWait = h(MetricBudgetWait, "Time a part buffer waited for room in the memory budget.",
		0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30)
	in.recovered = c(MetricRecoverUploads, "{upload}", "Journal records settled by Recover, by outcome.")
	in.recoverFailed = c(MetricRecoverFailures, "{run}", "Recover runs that failed as a whole.")
	return in, err
}

func registerBudgets(m metric.Meter, budgets []*writer.Budget) (metric.Registration, error) {
	usage, err := m.Int64ObservableUpDownCounter(MetricBudgetUsage, metric.WithUnit("By"),
		metric.WithDescription("Bytes of the memory budget held by part buffers."))
	if err != nil {
		return nil, err
	}
	limit, err := m.Int64ObservableUpDownCounter(MetricBudgetLimit, metric.WithUnit("By"),
		metric.WithDescription("Size of the memory budget."))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, b := range budgets {
			o.ObserveInt64(usage, b.InUse())
			o.ObserveInt64(limit, b.Limit())
		}
		return nil
	}, usage, limit)
}

// Attribute sets are built once where the values are few and fixed, so a request or a write
// records its metrics without allocating.
var (
	okByMethod      = map[string]attribute.Set{}
	probeOKByMethod = map[string]attribute.Set{}
	kindSets        = map[sperrors.Kind]attribute.Set{}
	landedNoVer     = attribute.NewSet(AttrOutcome.String(OutcomeLanded))
	probeSet        = attribute.NewSet(AttrRequest.String(RequestProbe))
)

func init() {
	for _, op := range operations {
		okByMethod[op] = attribute.NewSet(AttrRPCMethod.String(op))
		probeOKByMethod[op] = attribute.NewSet(AttrRPCMethod.String(op), AttrRequest.String(RequestProbe))
	}
	for _, k := range append([]sperrors.Kind{sperrors.Unknown}, sperrors.Kinds()...) {
		kindSets[k] = attribute.NewSet(AttrErrorType.String(k.String()))
	}
}

func kindAttrs(err error) attribute.Set {
	if s, ok := kindSets[sperrors.KindOf(err)]; ok {
		return s
	}
	return attribute.NewSet(AttrErrorType.String(sperrors.KindOf(err).String()))
}

func requestAttrs(op string, kind sperrors.Kind, failed, probe bool) attribute.Set {
	if !failed {
		sets := okByMethod
		if probe {
			sets = probeOKByMethod
		}
		if s, ok := sets[op]; ok {
			return s
		}
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, AttrRPCMethod.String(op))
	if failed {
		attrs = append(attrs, AttrErrorType.String(kind.String()))
	}
	if probe {
		attrs = append(attrs, AttrRequest.String(RequestProbe))
	}
	return attribute.NewSet(attrs...)
}

func recoverAttrs(o writer.RecoverOutcome) attribute.Set {
	return attribute.NewSet(AttrRecoverOutcome.String(string(o)))
}

func writeAttrs(res *writer.Result, err error) attribute.Set {
	if err != nil {
		return attribute.NewSet(AttrOutcome.String(OutcomeFailed), AttrErrorType.String(sperrors.KindOf(err).String()))
	}
	if res == nil || res.Verified == "" {
		return landedNoVer
	}
	return attribute.NewSet(AttrOutcome.String(OutcomeLanded), AttrVerification.String(string(res.Verified)))
}

func seconds(d time.Duration) float64 { return d.Seconds() }
