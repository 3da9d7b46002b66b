package writer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/writer"
)

// outageAfterFirstPart is an Observer that, once the store acknowledged part 1, sets the proxy's
// rules to outage: the store stops taking requests in the middle of the write.
func outageAfterFirstPart(proxy *faultproxy.Proxy, outage ...faultproxy.Rule) func(writer.Event) {
	var once sync.Once
	return func(e writer.Event) {
		if e.Type == writer.EventPartDone && e.PartNumber == 1 {
			once.Do(func() { proxy.SetRules(outage...) })
		}
	}
}

// outages are the ways a store stops taking requests for d: a restart (connections refused), a
// server that resets every connection, a balancer answering 503 or 502 with no backend.
func outages(d time.Duration) []struct {
	name string
	rule faultproxy.Rule
	kind faultproxy.Kind
} {
	return []struct {
		name string
		rule faultproxy.Rule
		kind faultproxy.Kind
	}{
		{"refused", faultproxy.Rule{Op: faultproxy.OpAny, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.Refuse, Hold: d}}, faultproxy.Refuse},
		{"reset", faultproxy.Rule{Op: faultproxy.OpAny, Window: d, Fault: faultproxy.Fault{Kind: faultproxy.ResetAfterBytes}}, faultproxy.ResetAfterBytes},
		{"503", faultproxy.Rule{Op: faultproxy.OpAny, Window: d, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503}}, faultproxy.Status},
		{"502", faultproxy.Rule{Op: faultproxy.OpAny, Window: d, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 502}}, faultproxy.Status},
	}
}

// TestWireOutageRiddenOut: the store stops taking requests for 3 s right after part 1 landed
// (connections refused, reset, 503 or 502 for every request), on every server through both
// adapters, a stream and a file: the write goes on with its upload and lands verified, the
// object read back equal, no upload left. The outage allowance is the default; only the sleeps
// between attempts are shortened (ThrottleInterval), to keep the test short.
// TestWireRestartAtDefaults rides out the default-scale outage with nothing shortened.
func TestWireOutageRiddenOut(t *testing.T) {
	t.Parallel() // mostly waiting out the outage: beside the other waiting tests
	const outage = 3 * time.Second
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 5)
		data := s3test.RandomBytes(3*part + 1)
		for _, o := range outages(outage) {
			for _, src := range []source{stream, file} {
				t.Run(o.name+"/"+src.String(), func(t *testing.T) {
					proxy.SetRules()
					before := proxy.Stats().Injected[o.kind]
					key := "outage/" + o.name + "/" + src.String()
					policy := retry.New(func(o *retry.Options) { o.ThrottleInterval, o.MaxInterval = 100*time.Millisecond, time.Second })
					opts := testOpts(env, func(wo *writer.Options) {
						wo.Retry, wo.Concurrency = policy, 2
						wo.Observer = outageAfterFirstPart(proxy, o.rule)
					})
					start := time.Now()
					var res *writer.Result
					var err error
					if src == stream {
						res, err = streamTo(t, st, env.Bucket, key, data, opts...)
					} else {
						res, err = writer.Upload(context.Background(), st, env.Bucket, key, src.readerFor(t, data), opts...)
					}
					took := time.Since(start)
					proxy.SetRules()
					t.Logf("%s %s: %v (took %v, failures %v)", o.name, src, err, took, failures(res))
					checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
					if proxy.Stats().Injected[o.kind] == before || res.Failures[sperrors.Transient] == 0 {
						t.Fatalf("the write met no outage (injected %d, failures %v)", proxy.Stats().Injected[o.kind]-before, res.Failures)
					}
					if res.UploadAttempts != 1 {
						t.Fatalf("upload attempts %d: the write did not go on with its upload", res.UploadAttempts)
					}
				})
			}
		}
	})
}

func failures(res *writer.Result) map[sperrors.Kind]int {
	if res == nil {
		return nil
	}
	return res.Failures
}

// TestWireRestartAtDefaults: the store goes away for 30 s right after part 1 landed, as a server
// restart does (connections refused, then served again), at the defaults of everything (retry
// policy, clean-up bound), on every server through both adapters: the write lands verified
// within the documented bound, the outage plus the longest retry sleep (20 s) and the requests.
func TestWireRestartAtDefaults(t *testing.T) {
	t.Parallel() // mostly waiting out the outage: beside the other waiting tests
	const outage = 30 * time.Second
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 6)
		data := s3test.RandomBytes(3*part + 1)
		key := "restart-at-defaults"
		opts := testOpts(env, func(wo *writer.Options) {
			wo.Observer = outageAfterFirstPart(proxy, faultproxy.Rule{Op: faultproxy.OpAny, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.Refuse, Hold: outage}})
		})
		start := time.Now()
		res, err := writer.Upload(context.Background(), st, env.Bucket, key, fileOf(t, data), opts...)
		took := time.Since(start)
		t.Logf("%s: %v after %v (failures %v)", env.Adapter, err, took, failures(res))
		checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
		if proxy.Stats().Injected[faultproxy.Refuse] != 1 || took < outage {
			t.Fatalf("injected %d refusals, took %v: the write did not meet the outage", proxy.Stats().Injected[faultproxy.Refuse], took)
		}
		if bound := outage + 20*time.Second + 10*time.Second; took > bound {
			t.Fatalf("took %v, bound %v", took, bound)
		}
	})
}

// TestWireAbortRidesOutOutage: a write fails (a part refused 403) and the store goes away for 5 s
// as its abort is sent: the abort rides that out at the default clean-up bound, so the write
// fails with its own error and leaves no upload behind.
func TestWireAbortRidesOutOutage(t *testing.T) {
	t.Parallel() // mostly waiting out the outage: beside the other waiting tests
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 7)
		proxy.SetRules(
			faultproxy.Rule{Op: faultproxy.UploadPart, PartNumber: 3, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 403, Code: "AccessDenied"}},
			faultproxy.Rule{Op: faultproxy.AbortMultipartUpload, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.Refuse, Hold: 5 * time.Second}},
		)
		defer proxy.SetRules()
		data := s3test.RandomBytes(3*part + 1)
		key := "abort-outage"
		start := time.Now()
		_, err := writer.Upload(context.Background(), st, env.Bucket, key, fileOf(t, data), testOpts(env)...)
		took := time.Since(start)
		t.Logf("%s: %v after %v", env.Adapter, err, took)
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Permanent || e.AbortFailed {
			t.Fatalf("err %v: want the part's Permanent failure, the abort done", err)
		}
		if proxy.Stats().Injected[faultproxy.Refuse] != 1 {
			t.Fatal("the abort met no outage")
		}
		checkOutcome(t, env, key, data, nil, err, sperrors.Permanent)
	})
}

// TestWireOutageBounded: nothing waits forever. A store that goes away for good mid-write fails
// the write within the outage allowance plus the clean-up bound (both shortened here to 3 s:
// the defaults are 60 s each), Transient, saying the allowance ran out, and naming the upload its
// abort could not reach.
func TestWireOutageBounded(t *testing.T) {
	const allowance, abortBound = 3 * time.Second, 3 * time.Second
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 8)
		data := s3test.RandomBytes(3*part + 1)
		key := "outage-forever"
		policy := retry.New(func(o *retry.Options) { o.OutageMaxElapsed = allowance; o.ThrottleInterval = 100 * time.Millisecond })
		start := time.Now()
		_, err := writer.Upload(context.Background(), st, env.Bucket, key, fileOf(t, data), testOpts(env, func(wo *writer.Options) {
			wo.Retry, wo.AbortTimeout = policy, abortBound
			wo.Observer = outageAfterFirstPart(proxy, faultproxy.Rule{Op: faultproxy.OpAny, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.Refuse}})
		})...)
		took := time.Since(start)
		t.Logf("%s: %v after %v", env.Adapter, err, took)
		var e *sperrors.Error
		if !errors.As(err, &e) || e.Kind != sperrors.Transient || !strings.Contains(err.Error(), "outage allowance") || !e.AbortFailed || e.UploadID == "" {
			t.Fatalf("err %v: want Transient, the outage allowance spent, the upload its abort could not reach named", err)
		}
		// The allowance and the clean-up bound, each with its last attempt, and slack.
		if bound := allowance + abortBound + 10*time.Second; took > bound {
			t.Fatalf("took %v, bound %v", took, bound)
		}
		// The store is still there behind the proxy: remove what the write could not.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := env.Srv.RawClient().AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(env.Bucket), Key: aws.String(key), UploadId: aws.String(e.UploadID)}); err != nil {
			t.Fatalf("the upload the error names is not there to abort: %v", err)
		}
	})
}
