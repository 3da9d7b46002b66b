// Package testkit runs a test through both SDK adapters against every real test server, so every
// behaviour is checked through aws-sdk-go-v2 and minio-go alike, on each server.
//
// Test support, outside safeput's compatibility promise (see package storetest).
package testkit

import (
	"testing"

	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/s3test"
)

// Adapter builds one store.Store for a test server.
type Adapter struct {
	Name string
	New  func(srv s3test.Server) (store.Store, error)
}

// Adapters are the two production adapters.
var Adapters = []Adapter{
	{Name: "aws", New: func(srv s3test.Server) (store.Store, error) {
		return awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
	}},
	{Name: "minio", New: func(srv s3test.Server) (store.Store, error) {
		return miniogo.New(miniogo.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
	}},
}

// Env is what a test body gets: the server, an adapter's store and a fresh bucket.
type Env struct {
	Srv     s3test.Server
	Server  string // Srv.Name: s3test.VersityGW, s3test.MinIO, ...
	Store   store.Store
	Bucket  string
	Adapter string
}

// ForEach runs fn as a subtest per server × adapter ("versitygw/aws", "minio/minio", ...), each
// with its own bucket, so a failure names both. Every server × adapter runs in parallel with the
// others (s3test.ForEach says why): each has its own bucket and its own store, and writes share
// nothing they learn about an endpoint unless they share a writer.Uploader.
func ForEach(t *testing.T, fn func(t *testing.T, env Env)) {
	t.Helper()
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) { eachAdapter(t, srv, true, fn) })
}

// ForEachTLS is ForEach with every server reached over TLS (s3test.TLSServer: its own TLS
// endpoint, or a relay with the run's good certificate) and the adapters given the run's CA as their CABundle. Env.Srv is the TLS
// endpoint, its RawClient trusting the same CA.
func ForEachTLS(t *testing.T, fn func(t *testing.T, env Env)) {
	t.Helper()
	s3test.ForEach(t, func(t *testing.T, srv s3test.Server) {
		eachAdapter(t, s3test.TLSServer(t, srv), true, fn)
	})
}

// ForEachSerial is ForEach one server and adapter after another, for tests that measure the
// process.
func ForEachSerial(t *testing.T, fn func(t *testing.T, env Env)) {
	t.Helper()
	s3test.ForEachSerial(t, func(t *testing.T, srv s3test.Server) { eachAdapter(t, srv, false, fn) })
}

// ForEachSerialTLS is ForEachSerial over TLS, as ForEachTLS.
func ForEachSerialTLS(t *testing.T, fn func(t *testing.T, env Env)) {
	t.Helper()
	s3test.ForEachSerial(t, func(t *testing.T, srv s3test.Server) { eachAdapter(t, s3test.TLSServer(t, srv), false, fn) })
}

func eachAdapter(t *testing.T, srv s3test.Server, parallel bool, fn func(t *testing.T, env Env)) {
	t.Helper()
	for _, a := range Adapters {
		t.Run(a.Name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			st, err := a.New(srv)
			if err != nil {
				t.Fatalf("%s adapter on %s: %v", a.Name, srv.Name, err)
			}
			fn(t, Env{Srv: srv, Server: srv.Name, Store: st, Bucket: s3test.NewBucket(t, srv), Adapter: a.Name})
		})
	}
}

// Profile is the writer profile for the test server: the one named after it (versitygw, minio),
// or the gateway's for an external endpoint, which is what the tests used before they knew more
// than one server.
func (e Env) Profile() string {
	if _, err := multipart.Profile(e.Server); err == nil && e.Server != "" {
		return e.Server
	}
	return s3test.VersityGW
}
