package miniogo_test

import (
	"testing"

	"github.com/safeput/safeput/internal/testkit"
)

// TestConformance runs the public conformance suite (store/storetest) through this adapter on
// every test server, checked with the aws-sdk-go-v2 adapter.
func TestConformance(t *testing.T) { testkit.Conformance(t, "minio") }
