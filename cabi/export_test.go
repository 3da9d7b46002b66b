package cabi

import "testing"

// HungServer is hungServer for the tests of package cabi_test.
func HungServer(t *testing.T) string {
	endpoint, _ := hungServer(t)
	return endpoint
}
