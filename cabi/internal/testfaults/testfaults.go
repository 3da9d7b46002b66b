// Package testfaults makes the C ABI honour test_faults with the fault injector of the tests
// (storetest/faulty). Only test builds import it: the library built with the safeput_faults
// tag and this module's tests.
package testfaults

import (
	"github.com/safeput/safeput/cabi/internal/testhook"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/faulty"
)

// Allow makes this process honour test_faults: comma-separated OP:FAULT[:N] items (faulty.Parse).
func Allow() {
	testhook.SetFaults(func(spec string) (func(store.Store) store.Store, error) {
		rules, err := faulty.Parse(spec)
		if err != nil || len(rules) == 0 {
			return nil, err
		}
		return func(st store.Store) store.Store { return faulty.New(st, rules...) }, nil
	})
}
