package awss3_test

import (
	"testing"

	"github.com/safeput/safeput/storetest/testkit"
)

// TestConformance runs the public conformance suite (storetest) through this adapter on
// every test server, checked with the minio-go adapter.
func TestConformance(t *testing.T) { testkit.Conformance(t, "aws") }

// TestConformanceTLS runs it again with every server reached over TLS, the adapter trusting the
// test run's private CA through Config.CABundle.
func TestConformanceTLS(t *testing.T) { testkit.ConformanceTLS(t, "aws") }
