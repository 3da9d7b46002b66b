// Package testhook holds the hook through which the C ABI honours the test_faults config field.
// It is empty until a test build fills it: the library built with the safeput_faults tag
// (faults_tag.go) or a test of this module (testfaults.Allow). Being internal to the cabi module,
// nothing else can fill it: no production configuration reaches fault injection, and the
// production build links no fault injector (TestReleaseBuildHasNoTestSupport).
package testhook

import (
	"sync/atomic"

	"github.com/safeput/safeput/store"
)

// Faults reads a test_faults specification and returns what wraps a store with its faults (nil
// when it names none).
type Faults func(spec string) (func(store.Store) store.Store, error)

var faults atomic.Pointer[Faults]

// SetFaults makes this process honour test_faults through f.
func SetFaults(f Faults) { faults.Store(&f) }

// FaultsHook returns the hook SetFaults set, nil when test_faults is not honoured.
func FaultsHook() Faults {
	if f := faults.Load(); f != nil {
		return *f
	}
	return nil
}
