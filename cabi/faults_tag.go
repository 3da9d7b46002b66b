//go:build safeput_faults

package cabi

import "github.com/safeput/safeput/cabi/internal/testhook"

// The tests' shared library is built with -tags safeput_faults; no other build honours
// test_faults.
func init() { testhook.AllowFaults() }
