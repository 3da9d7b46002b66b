package writer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/storetest/testkit"
	"github.com/safeput/safeput/writer"
)

// TestHeadersLand: Options.Headers' four headers are stored with the object, by PutObject and by a
// multipart upload, through both adapters; a HEAD of the raw client shows them.
func TestHeadersLand(t *testing.T) {
	testkit.ForEach(t, func(t *testing.T, env testkit.Env) {
		h := store.Headers{CacheControl: "max-age=60", ContentDisposition: `attachment; filename="a.bin"`,
			ContentEncoding: "identity", ContentLanguage: "nl"}
		for _, c := range []struct {
			key  string
			size int
		}{{"headers/put", 1000}, {"headers/multipart", 5<<20 + 1}} {
			data := s3test.RandomBytes(c.size)
			res, err := writer.Upload(context.Background(), env.Store, env.Bucket, c.key, bytes.NewReader(data),
				func(o *writer.Options) { o.Profile = env.Profile(); o.PartSize = 5 << 20; o.Headers = h })
			if err != nil {
				t.Fatalf("%s: Upload: %v", c.key, err)
			}
			if res.Multipart != (c.size > 5<<20) {
				t.Errorf("%s: multipart %v for %d bytes", c.key, res.Multipart, c.size)
			}
			out, err := env.Srv.RawClient().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(env.Bucket), Key: aws.String(c.key)})
			if err != nil {
				t.Fatalf("%s: raw HEAD: %v", c.key, err)
			}
			got := store.Headers{CacheControl: aws.ToString(out.CacheControl), ContentDisposition: aws.ToString(out.ContentDisposition),
				ContentEncoding: aws.ToString(out.ContentEncoding), ContentLanguage: aws.ToString(out.ContentLanguage)}
			if got != h {
				t.Errorf("%s: HEAD shows %+v, want %+v", c.key, got, h)
			}
		}
	})
}
