package bench

import (
	"context"
	stderrors "errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/safeput/safeput/bench/internal/link"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// At a 200 ms round trip a multipart write lands without a false Stalled or an early give-up:
// the link moves bytes every round trip and answers within one, so a stall window far below the
// 20 s default never sees an attempt without progress, and the retry policy's defaults
// (attempts, timeouts) otherwise apply. Needs a test server (scripts/with-s3.sh); skipped
// without one.
//
// Progress is the body bytes a connection takes, and a socket's send buffer (up to
// net.ipv4.tcp_wmem's maximum) takes them before the link carries them: after a part's last
// byte is taken, the client sees nothing until the link has drained every connection's buffer
// and the answer is back. The window is sized above that drain and below one part's time on the
// link, so a write that reported no progress at all would still be cut.
func TestWriteOver200msLinkDoesNotStall(t *testing.T) {
	const (
		rtt  = 200 * time.Millisecond
		rate = 12_500_000 // 100 Mbit/s, shared by all connections
		part = 16 << 20
		size = 3 * part // Create, three parts in flight at once, Complete, HEAD
		// Three full send buffers drain in about a second at the rate; a part alone takes
		// about four seconds, sharing the link with the other two.
		sendBuffers = 3 * (4 << 20)
		stall       = 5*rtt + time.Duration(sendBuffers)*time.Second/rate + time.Second/2
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// 1 MiB per connection per round trip and 100 Mbit/s shared: parts take several round trips
	// each, so every attempt waits on the link many times.
	far := overRelay(ctx, t, link.Config{RTT: rtt, Window: 1 << 20, Rate: rate}, "safeput-wan-stall", size)
	relay, raw, bucket, data, stores := far.relay, far.raw, far.bucket, far.data, far.stores
	for _, name := range []string{"aws", "minio"} {
		t.Run(name, func(t *testing.T) {
			st, err := stores[name]()
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var retries []writer.Event
			up, err := writer.NewUploader(st, func(wo *writer.Options) {
				wo.PartSize = part
				wo.Retry = retry.New(func(o *retry.Options) { o.StallTimeout = stall })
				wo.Observer = func(e writer.Event) {
					if e.Type == writer.EventRetry {
						mu.Lock()
						retries = append(retries, e)
						mu.Unlock()
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			src, closer, err := Open(data.Path, data.Size, SourceReaderAt)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			key := "stall-200ms/" + name
			before := relay.Stats()
			start := time.Now()
			res, err := up.Upload(ctx, bucket, key, src.Reader)
			took := time.Since(start)
			d := relay.Stats().Sub(before)
			t.Logf("%s: %v, %d round trips, %d connections", name, took, d.RoundTrips, d.Connections)
			mu.Lock()
			for _, e := range retries {
				// A cut attempt reaches the observer as the context error the watchdog caused
				// (Code CodeStalled is the policy's final answer): with the test's context alive,
				// only the stall window or an attempt timeout cuts one.
				cut := ctx.Err() == nil && (stderrors.Is(e.Err, context.Canceled) || stderrors.Is(e.Err, context.DeadlineExceeded))
				if sperrors.Classify(e.Err).Code == sperrors.CodeStalled || cut {
					t.Errorf("attempt cut at a %v round trip (stall window %v): part %d, before attempt %d: %v", rtt, stall, e.PartNumber, e.Attempt, e.Err)
				} else {
					t.Logf("retry (not a stall): part %d attempt %d: %v", e.PartNumber, e.Attempt, e.Err)
				}
			}
			mu.Unlock()
			if err != nil {
				if c := sperrors.Classify(err); c != nil && c.Code == sperrors.CodeStalled {
					t.Fatalf("false Stalled: the write over a %v link gave up after %v: %v", rtt, took, err)
				}
				t.Fatalf("write over a %v link failed after %v: %v", rtt, took, err)
			}
			if res.Size != size || res.Parts < 2 || !res.VerifiedStrong {
				t.Errorf("result %+v: want %d bytes in several parts, strongly verified", res, size)
			}
			// At least the handshake and Create, a part and the commit's requests, one round
			// trip each: the link was really in the way.
			if min := 4 * rtt; took < min {
				t.Errorf("write took %v over a %v link, want ≥ %v: was the relay bypassed?", took, rtt, min)
			}
			if err := CheckObject(ctx, raw, bucket, key, data); err != nil {
				t.Error(err)
			}
		})
	}
}

// farLink is a test server behind the relay: the relay (its counts), the raw client to check objects with (direct), a
// bucket, a source file of the size asked for, and each adapter's store through the relay.
type farLink struct {
	relay  *link.Relay
	raw    *s3.Client
	bucket string
	data   DataFile
	stores map[string]func() (store.Store, error)
}

// overRelay starts a relay with cfg in front of the test server (closed with the test) and
// readies a bucket and a source file. It skips without a server, under -short, and on a TLS
// endpoint (the relay carries plain HTTP).
func overRelay(ctx context.Context, t *testing.T, cfg link.Config, bucket string, size int64) farLink {
	t.Helper()
	srv := s3test.Require(t)
	if testing.Short() {
		t.Skip("several seconds of emulated round trips")
	}
	u, err := url.Parse(srv.Endpoint)
	if err != nil || u.Scheme != "http" {
		t.Skipf("the relay carries plain HTTP; endpoint %q", srv.Endpoint)
	}
	cfg.Upstream = u.Host
	relay, err := link.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	via := srv
	via.Endpoint = "http://" + relay.Addr()
	raw := srv.RawClient()
	if err := ensureBucket(ctx, raw, bucket); err != nil {
		t.Fatal(err)
	}
	data, err := Generate(t.TempDir(), size)
	if err != nil {
		t.Fatal(err)
	}
	return farLink{relay: relay, raw: raw, bucket: bucket, data: data, stores: map[string]func() (store.Store, error){
		"aws": func() (store.Store, error) {
			return awss3.New(awss3.Config{Endpoint: via.Endpoint, Region: via.Region, AccessKey: via.AccessKey, SecretKey: via.SecretKey, PathStyle: true})
		},
		"minio": func() (store.Store, error) {
			return miniogo.New(miniogo.Config{Endpoint: via.Endpoint, Region: via.Region, AccessKey: via.AccessKey, SecretKey: via.SecretKey, PathStyle: true})
		},
	}}
}
