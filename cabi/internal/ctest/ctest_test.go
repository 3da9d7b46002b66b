package ctest

import (
	"testing"

	"github.com/safeput/safeput/cabi/internal/abitest"
	"github.com/safeput/safeput/cabi/internal/testfaults"
)

// The reference C caller, linked into this Go test binary with the ABI, against the real server.
func TestInProcess(t *testing.T) {
	testfaults.Allow() // this test binary is the tests' build
	abitest.Suite(t, abitest.Full, func(_ *testing.T, args []string) int { return Run(args) })
}
