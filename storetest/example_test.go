package storetest_test

import (
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
)

// harness tests a wrapper: the fault injector with no rules around the in-memory store. The
// store under test is the wrapper, the reference is the store it wraps, and each call makes a
// new store, so every contract starts from an empty bucket. An adapter's harness returns the
// adapter and an independent client for the same server, and a fresh bucket there.
type harness struct{}

func (harness) MakeStores(*testing.T) (under, reference store.Store, bucket string) {
	mem := memstore.New(memstore.WithBuckets("bucket"))
	return faulty.New(mem), mem, "bucket"
}

func (harness) Capabilities() storetest.Capabilities {
	return storetest.Capabilities{ConditionalPut: true, ConditionalComplete: true, Checksums: true, MD5ETags: true, PagedUploadListing: true}
}

// In the store's _test.go file the body below is TestConformance. An example has no
// *testing.T, so this one is compiled, not run; TestFaultyConforms runs the same harness.
func ExampleRun() {
	testConformance := func(t *testing.T) { storetest.Run(t, harness{}) }
	_ = testConformance
}
