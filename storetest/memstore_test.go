package storetest_test

import (
	"testing"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest"
	"github.com/safeput/safeput/storetest/faulty"
	"github.com/safeput/safeput/storetest/memstore"
)

// The in-memory store and the fault injector (with no rules) pass the same suite as the SDK
// adapters, so unit tests built on them exercise the real contracts.
func TestMemstoreConforms(t *testing.T) { storetest.Run(t, memHarness{}) }

func TestFaultyConforms(t *testing.T) { storetest.Run(t, memHarness{wrap: true}) }

// A store listing every attempt of a re-sent part keeps the ListParts contract too.
func TestMemstoreListingEveryAttemptConforms(t *testing.T) {
	storetest.Run(t, memHarness{everyAttempt: true})
}

type memHarness struct{ wrap, everyAttempt bool }

func (h memHarness) MakeStores(t *testing.T) (under, reference store.Store, bucket string) {
	mem := memstore.New(memstore.WithBuckets("bucket"), memstore.WithRules(memstore.Rules{ListEveryAttempt: h.everyAttempt}))
	if h.wrap {
		return faulty.New(mem), mem, "bucket"
	}
	return mem, mem, "bucket"
}

func (memHarness) Capabilities() storetest.Capabilities {
	return storetest.Capabilities{ConditionalPut: true, ConditionalComplete: true, Checksums: true, MD5ETags: true, PagedUploadListing: true}
}
