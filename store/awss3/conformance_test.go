package awss3_test

import (
	"testing"

	"github.com/safeput/safeput/internal/testkit"
)

// TestConformance runs the public conformance suite (store/storetest) through this adapter on
// every test server, checked with the minio-go adapter.
func TestConformance(t *testing.T) { testkit.Conformance(t, "aws") }
