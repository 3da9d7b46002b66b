package miniogo_test

import (
	"context"
	"os"
	"strings"

	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/writer"
)

// New makes a store on minio-go for an S3-compatible endpoint; a writer.Uploader made of it is
// what the program keeps. Compiled, not run: it needs a server.
func ExampleNew() {
	st, err := miniogo.New(miniogo.Config{
		Endpoint:  "http://127.0.0.1:9000", // scheme, host and port; no path
		AccessKey: os.Getenv("MINIO_ACCESS_KEY"),
		SecretKey: os.Getenv("MINIO_SECRET_KEY"),
		PathStyle: true,
	})
	if err != nil {
		return // a malformed endpoint
	}
	up, err := writer.NewUploader(st, func(o *writer.Options) { o.Profile = "minio" })
	if err != nil {
		return
	}
	_, _ = up.Upload(context.Background(), "bucket", "key", strings.NewReader("data"))
}
