// Package storetest is the contract suite every store.Store adapter must pass against the real
// S3 server: one suite, run through each adapter.
package storetest

import (
	"testing"

	"github.com/safeput/safeput/internal/s3test"
	"github.com/safeput/safeput/store"
)

// NewStore builds the adapter under test for srv. wrongSecret asks for a store whose secret key
// is wrong (for the credential-error contract).
type NewStore func(t *testing.T, srv s3test.Server, wrongSecret bool) store.Store

// Run runs the whole contract suite through the adapter newStore builds.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	_ = newStore
}
