package awss3_test

import (
	"context"
	"os"
	"strings"

	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/writer"
)

// New makes a store for an S3-compatible endpoint; a writer.Uploader made of it is what the
// program keeps. Compiled, not run: it needs a server.
func ExampleNew() {
	st, err := awss3.New(awss3.Config{
		Endpoint:  "https://s3.example.com", // empty: AWS's endpoint for Region
		Region:    "us-east-1",
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		PathStyle: true, // most non-AWS servers want path-style addressing
	})
	if err != nil {
		return // a malformed endpoint
	}
	up, err := writer.NewUploader(st, func(o *writer.Options) { o.Profile = "aws" })
	if err != nil {
		return
	}
	_, _ = up.Upload(context.Background(), "bucket", "key", strings.NewReader("data"))
}

// A store whose certificate comes from a private CA: the CA's PEM is trusted for this store
// only, besides the system roots, with verification on. Compiled, not run.
func ExampleNew_privateCA() {
	ca, err := os.ReadFile("/etc/ssl/private-ca.pem")
	if err != nil {
		return
	}
	st, err := awss3.New(awss3.Config{
		Endpoint: "https://minio.internal:9000", CABundle: ca,
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		PathStyle: true,
	})
	if err != nil {
		return // a bundle with no certificate, a malformed endpoint
	}
	_ = st
}
