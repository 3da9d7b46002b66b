package awss3_test

import (
	"testing"

	"github.com/safeput/safeput/internal/s3test"
	"github.com/safeput/safeput/internal/storetest"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
)

// TestContract runs the shared store contract suite against the real S3 server.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, srv s3test.Server, wrongSecret bool) store.Store {
		secret := srv.SecretKey
		if wrongSecret {
			secret += "-wrong"
		}
		st, err := awss3.New(awss3.Config{
			Endpoint:  srv.Endpoint,
			Region:    srv.Region,
			AccessKey: srv.AccessKey,
			SecretKey: secret,
			PathStyle: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}
