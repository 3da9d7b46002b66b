package testkit

import (
	"testing"

	"github.com/safeput/safeput/internal/s3test"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/storetest"
)

// Conformance runs the public conformance suite (store/storetest) through the adapter named
// under on every test server, with the other adapter as the reference client, so an adapter is
// never checked only by itself.
func Conformance(t *testing.T, under string) {
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		storetest.Run(t, serverHarness{srv: srv, under: under})
	})
}

type serverHarness struct {
	srv   s3test.Server
	under string
}

func (h serverHarness) MakeStores(t *testing.T) (under, reference store.Store, bucket string) {
	t.Helper()
	for _, a := range Adapters {
		st, err := a.New(h.srv)
		if err != nil {
			t.Fatalf("%s adapter: %v", a.Name, err)
		}
		if a.Name == h.under {
			under = st
		} else {
			reference = st
		}
	}
	if under == nil || reference == nil {
		t.Fatalf("no adapter %q, or no other adapter to check it with", h.under)
	}
	return under, reference, s3test.NewBucket(t, h.srv)
}

// Capabilities of the test servers, as measured (multipart/profiles.go has the same facts as
// writer profiles). An external endpoint is assumed to behave like AWS.
func (h serverHarness) Capabilities() storetest.Capabilities {
	switch h.srv.Name {
	case "ceph":
		// Ceph RGW 16.2 ignores x-amz-checksum-* headers and reports none on HEAD.
		return storetest.Capabilities{ConditionalPut: true}
	default:
		return storetest.Capabilities{ConditionalPut: true, Checksums: true}
	}
}
