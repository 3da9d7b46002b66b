//go:build safeput_faults

package cabi

import "github.com/safeput/safeput/cabi/internal/testfaults"

// The tests' shared library is built with -tags safeput_faults; no other build honours
// test_faults.
func init() { testfaults.Allow() }
