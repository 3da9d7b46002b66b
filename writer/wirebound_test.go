package writer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/writer"
)

// Writes that can never succeed, at the wire and at the default retry policy. A store that
// throttles every request of a write's one step ends the write in Throttled within the throttle
// allowance (retry.DefaultThrottleMaxElapsed) plus the clean-up, for a multipart write as for a
// single PUT: its parts are retried side by side, each within the allowance, and nothing beside
// them (the checksum probe, in its own upload) spends an allowance of its own. The shape is the field report's:
// 23 MiB in 5 MiB parts, 4 in flight, and a 3 MiB single PUT.
func TestWireThrottledForever(t *testing.T) {
	t.Parallel() // beside the package's other tests that only wait: this one waits out the allowance
	// The allowance, one last attempt and the abort, with slack for a loaded machine: the field
	// report's relay killed the write at 60 s.
	bound := retry.DefaultThrottleMaxElapsed + 15*time.Second
	cases := []struct {
		name string
		op   faultproxy.Op
		size int
	}{
		{"multipart-every-part", faultproxy.UploadPart, 23 << 20},
		{"single-put", faultproxy.PutObject, 3 << 20},
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				proxy, st := wirekit.Proxied(t, env, 58)
				proxy.SetRules(faultproxy.Rule{Op: c.op, Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 503, Code: "SlowDown"}})
				policy := retry.New() // the defaults, as the CLI has them; no profile either
				key := "wire-throttled-forever/" + c.name
				data := s3test.RandomBytes(c.size)
				start := time.Now()
				res, err := writer.Upload(context.Background(), st, env.Bucket, key, replayable.reader(data),
					func(o *writer.Options) { o.PartSize = 5 << 20; o.Concurrency = 4; o.Retry = policy })
				took := time.Since(start)
				stats := proxy.Stats()
				proxy.SetRules()
				t.Logf("%s: %s ended after %v (bound %v), %d %s requests, %d budget tokens left: %v",
					env.Adapter, c.name, took, bound, stats.Requests[c.op], c.op, policy.Budget(), err)
				if took > bound {
					t.Errorf("ended after %v, bound %v", took, bound)
				}
				var se *sperrors.Error
				if !errors.As(err, &se) || se.Kind != sperrors.Throttled {
					t.Fatalf("got %v (result %+v), want Throttled", err, res)
				}
				checkOutcome(t, env, key, data, res, err, sperrors.Throttled)
				if s3test.Exists(t, env.Srv, env.Bucket, key) {
					t.Errorf("an object is at the key after a write that never sent a byte that was taken")
				}
				// The allowance ended the write, not the shared budget: an outage of one store
				// leaves the Uploader's other writes their retries.
				if policy.Budget() <= 0 {
					t.Errorf("the retry budget ran out (%d left): the write was not ended by its own allowance", policy.Budget())
				}
			})
		}
	})
}

// A 403 is Permanent, and means the same whichever request of a write it answers, the checksum
// probe's in its own upload of the key included: the write fails at once, as Permanent, leaves no
// incomplete upload and no unproven object, through both adapters, at the default settings.
// Before, a 403 to the probe's part was taken as "not known" and the write landed, while the same
// answer to a PutObject failed it.
func TestWireAccessDeniedAtEveryStep(t *testing.T) {
	type tc struct {
		op    faultproxy.Op
		part  int32 // 0: the op's first request
		multi bool
		code  string
	}
	cases := []tc{
		{op: faultproxy.PutObject, code: "AccessDenied"},
		{op: faultproxy.HeadObject, code: "AccessDenied"},
		{op: faultproxy.CreateMultipartUpload, multi: true, code: "AccessDenied"},
		{op: faultproxy.UploadPart, multi: true, code: "AccessDenied"}, // the first on the wire: the probe's (the endpoint not yet known) or the write's
		{op: faultproxy.UploadPart, part: 3, multi: true, code: "AccessDenied"},
		{op: faultproxy.UploadPart, part: 2, multi: true, code: "InvalidAccessKeyId"},
		{op: faultproxy.UploadPart, part: 2, multi: true, code: "SignatureDoesNotMatch"},
		{op: faultproxy.ListParts, multi: true, code: "AccessDenied"},
		{op: faultproxy.CompleteMultipartUpload, multi: true, code: "AccessDenied"},
		{op: faultproxy.HeadObject, multi: true, code: "AccessDenied"},
	}
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		proxy, st := wirekit.Proxied(t, env, 403)
		for _, c := range cases {
			name := fmt.Sprintf("%s-%s", c.op, c.code)
			if c.part != 0 {
				name = fmt.Sprintf("%s%d-%s", c.op, c.part, c.code)
			}
			if c.multi {
				name = "multipart-" + name
			}
			t.Run(name, func(t *testing.T) {
				size := 100 << 10
				if c.multi {
					size = 2*part + 1
				}
				data := s3test.RandomBytes(size)
				proxy.SetRules(faultproxy.Rule{Op: c.op, PartNumber: c.part, Nth: 1,
					Fault: faultproxy.Fault{Kind: faultproxy.Status, Status: 403, Code: c.code}})
				defer proxy.SetRules()
				key := "wire-403/" + name
				// No profile: the defaults, where an endpoint not yet known is probed.
				injected := proxy.Stats().Injected[faultproxy.Status]
				res, err := writer.Upload(context.Background(), st, env.Bucket, key, replayable.reader(data),
					func(o *writer.Options) {
						// Ceph RGW on a busy machine can take longer than the short stall window to begin an
						// answer; this test is about 403s, not stalls.
						o.PartSize, o.Retry, o.Concurrency = part, wirePolicy(func(ro *retry.Options) { ro.StallTimeout = campaignWindow(env) }), 4
						if c.op == faultproxy.ListParts || c.op == faultproxy.HeadObject {
							// A store that checks part checksums proves each part by its receipt,
							// and the object by Complete's answer: the write sends no listing and
							// no HEAD unless asked to.
							o.Savings &^= writer.SaveRereads
						}
					})
				if proxy.Stats().Injected[faultproxy.Status] == injected {
					t.Fatalf("the 403 was never injected (err %v)", err)
				}
				var se *sperrors.Error
				if !errors.As(err, &se) || se.Kind != sperrors.Permanent || se.StatusCode != 403 {
					t.Fatalf("got %v (result %+v), want Permanent with status 403", err, res)
				}
				if se.Attempts > 1 {
					t.Errorf("the 403 was retried: %d attempts", se.Attempts)
				}
				proxy.SetRules()
				checkOutcome(t, env, key, data, res, err, sperrors.Permanent)
			})
		}
	})
}
