package s3test

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The server the test command starts must accept a bucket and an object and give it back.
func TestServerRoundTrip(t *testing.T) {
	s := Require(t)
	bucket := NewBucket(t, s)
	data := RandomBytes(1000)
	_, err := s.RawClient().PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("k"), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ReadAll(t, s, bucket, "k"); !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, want %d identical", len(got), len(data))
	}
	if !Exists(t, s, bucket, "k") || Exists(t, s, bucket, "missing") {
		t.Fatal("Exists disagrees with the store")
	}
}
