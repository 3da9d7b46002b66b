// Package testhook holds the switch that lets the C ABI honour the test_faults config field.
// Being internal to the cabi module, only the module's own tests (and a library built with the
// safeput_faults tag) can turn it on: no production configuration can reach fault injection.
package testhook

import "sync/atomic"

var faults atomic.Bool

// AllowFaults turns fault injection on for this process.
func AllowFaults() { faults.Store(true) }

// FaultsAllowed reports whether test_faults is honoured.
func FaultsAllowed() bool { return faults.Load() }
