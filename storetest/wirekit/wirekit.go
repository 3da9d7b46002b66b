// Package wirekit runs integration tests through a fault proxy (storetest/faultproxy) in front of
// the real test server. It is apart from testkit because faultproxy's own tests use testkit.
//
// Test support, outside safeput's compatibility promise (see package storetest).
package wirekit

import (
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faultproxy"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
)

// Proxied starts a fault proxy in front of env's server and returns it with a store of env's
// adapter that talks through it (over TLS when env's server is reached over TLS). Checks of what landed go to env.Srv directly, never through
// the proxy. The proxy closes when the test ends.
func Proxied(t testing.TB, env testkit.Env, seed int64) (*faultproxy.Proxy, store.Store) {
	t.Helper()
	cfg := faultproxy.Config{
		Upstream: env.Srv.Endpoint, AccessKey: env.Srv.AccessKey, SecretKey: env.Srv.SecretKey,
		Region: env.Srv.Region, Seed: seed,
	}
	if len(env.Srv.CABundle) > 0 {
		// A TLS env (testkit.ForEachTLS): the client reaches the proxy over TLS too, with a
		// certificate of the same CA.
		cfg.UpstreamCA, cfg.TLSCert = env.Srv.CABundle, &s3test.Certs(t).Good.TLS
	}
	p, err := faultproxy.Start(cfg)
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	via := env.Srv
	via.Endpoint = p.URL()
	for _, a := range testkit.Adapters {
		if a.Name == env.Adapter {
			st, err := a.New(via)
			if err != nil {
				t.Fatalf("%s adapter through the proxy: %v", a.Name, err)
			}
			return p, st
		}
	}
	t.Fatalf("no adapter named %q", env.Adapter)
	return nil, nil
}
