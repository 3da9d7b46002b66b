package writer_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testcerts"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/storetest/wirekit"
	"github.com/safeput/safeput/writer"
)

// checkNeverSent fails unless err is a failure of a write whose requests never left: the wanted
// kind, nothing said to be left behind or lost, and no sweep for an upload that cannot exist.
func checkNeverSent(t *testing.T, err error, want sperrors.Kind, lead string) {
	t.Helper()
	var e *sperrors.Error
	if !errors.As(err, &e) || e.Kind != want {
		t.Fatalf("want a %s error, got %v", want, err)
	}
	if e.AbortFailed || e.ObjectLeft || e.UploadID != "" {
		t.Errorf("a write whose requests never left reports an upload or object left: %v", err)
	}
	for _, bad := range []string{"left behind", "lost", "ListMultipartUploads"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("the error speaks of %q for requests that never left: %v", bad, err)
		}
	}
	if lead != "" {
		msg := err.Error()
		// "safeput: Op bucket/key permanent attempts=1: " and then the lead, before any cause.
		if i := strings.Index(msg, lead); i < 0 || strings.Count(msg[:i], ": ") != 2 {
			t.Errorf("the error does not lead with %q: %s", lead, msg)
		}
	}
}

func bundleStores(t *testing.T, endpoint string, ca []byte) []testkit.Env {
	t.Helper()
	srv := s3test.Server{Name: "httptest", Endpoint: endpoint, Region: "us-east-1", AccessKey: "ak", SecretKey: "sk", CABundle: ca}
	var out []testkit.Env
	for _, a := range testkit.Adapters {
		st, err := a.New(srv)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, testkit.Env{Srv: srv, Store: st, Adapter: a.Name, Bucket: "bucket"})
	}
	return out
}

// Unit: a multipart write to a server whose certificate does not verify, or to a closed port,
// fails without sending anything and without looking for an upload it cannot have created (the
// look would fail the same way and report one as maybe left behind).
func TestNeverSentIsNotALostCreate(t *testing.T) {
	set, err := testcerts.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{set.OtherCA.TLS}, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()
	data := s3test.RandomBytes(2*part + 1)
	opts := []func(*writer.Options){func(wo *writer.Options) {
		wo.PartSize = part
		wo.Retry = fastPolicy(func(o *retry.Options) { o.MaxAttempts = 3 })
	}}
	for _, env := range bundleStores(t, srv.URL, set.CA.PEM) {
		t.Run("untrusted/"+env.Adapter, func(t *testing.T) {
			_, err := writer.Upload(context.Background(), env.Store, "bucket", "k", bytes.NewReader(data), opts...)
			checkNeverSent(t, err, sperrors.Permanent, "TLS certificate of "+strings.TrimPrefix(srv.URL, "https://")+" does not verify: signed by an unknown authority")
		})
	}
	for _, env := range bundleStores(t, closed, nil) {
		t.Run("refused/"+env.Adapter, func(t *testing.T) {
			_, err := writer.Upload(context.Background(), env.Store, "bucket", "k", bytes.NewReader(data), opts...)
			checkNeverSent(t, err, sperrors.Transient, "")
		})
	}
	if n.Load() != 0 {
		t.Errorf("the server saw %d requests through a certificate the client refuses", n.Load())
	}
}

// Over TLS on every server through both adapters, the CA given as CABundle: a multipart write
// lands verified strongly through a TLS fault proxy that resets a part's connection mid-body and
// drops Complete's answer; and certificates that do not verify (another CA's, another host's,
// an expired one) fail the write Permanent, leading with the host and reason, with nothing
// left behind.
func TestTLS(t *testing.T) {
	testkit.ForEachTLS(t, func(t *testing.T, env testkit.Env) {
		t.Run("WireFaults", func(t *testing.T) {
			proxy, st := wirekit.Proxied(t, env, 36)
			proxy.SetRules(
				faultproxy.Rule{Op: faultproxy.UploadPart, PartNumber: 2, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.ResetAfterBytes, Bytes: 1 << 20}},
				faultproxy.Rule{Op: faultproxy.CompleteMultipartUpload, Nth: 1, Fault: faultproxy.Fault{Kind: faultproxy.DropResponse}},
			)
			data := s3test.RandomBytes(3*part + 1)
			key := "tls-wire"
			res, err := writer.Upload(context.Background(), st, env.Bucket, key, bytes.NewReader(data),
				testOpts(env, func(o *writer.Options) { o.Retry = fastPolicy(); o.ReadBackLimit = 0 })...)
			checkOutcome(t, env, key, data, res, err, sperrors.Unknown)
			stats := proxy.Stats()
			if stats.Injected[faultproxy.ResetAfterBytes] != 1 || stats.Injected[faultproxy.DropResponse] != 1 {
				t.Fatalf("faults injected %v, want one reset and one dropped answer (requests %v)", stats.Injected, stats.Requests)
			}
			if !res.Multipart {
				t.Fatalf("not a multipart write: %+v", res)
			}
		})
		set := s3test.Certs(t)
		for _, c := range []struct {
			name, reason string
			leaf         *testcerts.Leaf
		}{
			{"OtherCA", "signed by an unknown authority", set.OtherCA},
			{"WrongHost", "not for this host name", set.WrongHost},
			{"Expired", "expired or not yet valid", set.Expired},
		} {
			t.Run(c.name, func(t *testing.T) {
				bad := s3test.TLSFront(t, env.Srv, c.leaf)
				var st store.Store
				for _, a := range testkit.Adapters {
					if a.Name == env.Adapter {
						var err error
						if st, err = a.New(bad); err != nil {
							t.Fatal(err)
						}
					}
				}
				data := s3test.RandomBytes(part + 1)
				key := "tls-" + c.name
				start := time.Now()
				_, err := writer.Upload(context.Background(), st, env.Bucket, key, bytes.NewReader(data), testOpts(env)...)
				checkNeverSent(t, err, sperrors.Permanent, "TLS certificate of "+strings.TrimPrefix(bad.Endpoint, "https://")+" does not verify: "+c.reason)
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("a certificate failure took %v: it must not be retried", d)
				}
				if ids := s3test.IncompleteUploads(t, env.Srv, env.Bucket, key); len(ids) != 0 || s3test.Exists(t, env.Srv, env.Bucket, key) {
					t.Errorf("uploads %v or an object left by a write that never reached the server", ids)
				}
			})
		}
	})
}
