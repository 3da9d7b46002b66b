package metrics

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// TestCountsWhatHappened drives two writes with known faults and checks every counter exactly.
func TestCountsWhatHappened(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		col := New("")
		if err := prometheus.NewRegistry().Register(col); err != nil {
			t.Fatal(err)
		}
		st := col.WrapStore(faulty.New(env.Store,
			faulty.First(faulty.OpPutObject, 2, faulty.SlowDown()),
			faulty.Rule{Op: faulty.OpUploadPart, KeyPrefix: "denied/", Part: 2, Fault: faulty.Forbidden()},
		))
		policy := retry.New(func(o *retry.Options) { o.ThrottleInterval = 10 * time.Millisecond }, func(o *retry.Options) { o.InitialInterval = 5 * time.Millisecond })
		up, err := writer.NewUploader(st, col.Option(), func(o *writer.Options) { o.Retry = policy; o.Profile = env.Profile(); o.PartSize = 5 << 20 })
		if err != nil {
			t.Fatal(err)
		}

		small := s3test.RandomBytes(100 << 10)
		if _, err := up.Upload(ctx, env.Bucket, "ok/small", bytes.NewReader(small)); err != nil {
			t.Fatalf("upload through two SlowDowns: %v", err)
		}
		if _, err := up.Upload(ctx, env.Bucket, "denied/big", bytes.NewReader(s3test.RandomBytes(12<<20))); err == nil {
			t.Fatal("upload through a Forbidden part succeeded")
		}

		expect := map[string]struct {
			c    prometheus.Collector
			want float64
		}{
			"retries throttled":          {col.retries.WithLabelValues("throttled"), 2},
			"request failures throttled": {col.requestFails.WithLabelValues("PutObject", "throttled"), 2},
			"request failures forbidden": {col.requestFails.WithLabelValues("UploadPart", "permanent"), 1},
			"bytes":                      {col.bytes, float64(len(small))},
			"failures permanent":         {col.failures.WithLabelValues("permanent"), 1},
			"aborts ok":                  {col.aborts.WithLabelValues("ok"), 1},
			"aborts failed":              {col.aborts.WithLabelValues("failed"), 0},
		}
		for name, e := range expect {
			if got := testutil.ToFloat64(e.c); got != e.want {
				t.Errorf("%s = %v, want %v", name, got, e.want)
			}
		}
		if n := testutil.CollectAndCount(col.verifications); n != 1 {
			t.Errorf("%d verification series, want 1 (the one landed write)", n)
		}
		if n := testutil.CollectAndCount(col.duration); n != 2 {
			t.Errorf("%d duration series, want done and failed", n)
		}
		// Parts 1 and 3 of the failed upload may or may not have been acknowledged before the
		// abort; the single PUT has none.
		if got := testutil.ToFloat64(col.parts); got > 2 {
			t.Errorf("parts = %v, want at most 2", got)
		}
	})
}
