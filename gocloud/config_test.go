package safeblob_test

import (
	"context"
	stderrors "errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	sperrors "github.com/safeput/safeput/errors"

	safeblob "github.com/safeput/safeput/gocloud"
)

func offlineClient(endpoint string) *s3.Client {
	o := s3.Options{Region: "us-east-1", UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "a", SecretAccessKey: "s"}, nil
		})}
	if endpoint != "" {
		o.BaseEndpoint = aws.String(endpoint)
	}
	return s3.New(o)
}

// TestErrorCode: each safeput kind maps to the gcerrors code a gocloud caller acts on, through a
// wrapping too.
func TestErrorCode(t *testing.T) {
	drv, err := safeblob.NewBucket(context.Background(), offlineClient("http://127.0.0.1:1"), "b", nil)
	if err != nil {
		t.Fatalf("NewBucket: %v", err)
	}
	for _, c := range []struct {
		err  *sperrors.Error
		want gcerrors.ErrorCode
	}{
		{&sperrors.Error{Kind: sperrors.Canceled, Err: context.Canceled}, gcerrors.Canceled},
		{&sperrors.Error{Kind: sperrors.Canceled, Err: context.DeadlineExceeded}, gcerrors.DeadlineExceeded},
		{&sperrors.Error{Kind: sperrors.Precondition, StatusCode: 412}, gcerrors.FailedPrecondition},
		{&sperrors.Error{Kind: sperrors.Throttled, StatusCode: 503, Code: "SlowDown"}, gcerrors.ResourceExhausted},
		{&sperrors.Error{Kind: sperrors.Permanent, StatusCode: 403, Code: "AccessDenied"}, gcerrors.PermissionDenied},
		{&sperrors.Error{Kind: sperrors.Permanent, StatusCode: 404, Code: "NoSuchBucket"}, gcerrors.NotFound},
		{&sperrors.Error{Kind: sperrors.Permanent, StatusCode: 400, Code: "InvalidArgument"}, gcerrors.InvalidArgument},
		{&sperrors.Error{Kind: sperrors.Permanent}, gcerrors.InvalidArgument},
		{&sperrors.Error{Kind: sperrors.Compatibility, StatusCode: 501, Code: "NotImplemented"}, gcerrors.Unimplemented},
		{&sperrors.Error{Kind: sperrors.Integrity, Op: "Verify"}, gcerrors.Internal},
		{&sperrors.Error{Kind: sperrors.Transient, StatusCode: 500}, gcerrors.Internal},
		{&sperrors.Error{Kind: sperrors.Internal}, gcerrors.Internal},
	} {
		wrapped := fmt.Errorf("close: %w", c.err)
		if got := drv.ErrorCode(wrapped); got != c.want {
			t.Errorf("ErrorCode(%v) = %v, want %v", c.err, got, c.want)
		}
		var e *sperrors.Error
		if !drv.ErrorAs(wrapped, &e) || e != c.err {
			t.Errorf("ErrorAs(%v) does not reach the *errors.Error", wrapped)
		}
	}
	if got := drv.ErrorCode(stderrors.New("other")); got != gcerrors.Unknown {
		t.Errorf("ErrorCode of an unclassified error = %v, want Unknown", got)
	}
}

// TestOpenRefusals: options safeput cannot honour for writes are errors of the constructors,
// never dropped.
func TestOpenRefusals(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		client *s3.Client
		opts   *s3blob.Options
		extra  []safeblob.Option
		want   string
	}{
		{"nil client", nil, nil, nil, "client is required"},
		{"dsse", offlineClient(""), &s3blob.Options{EncryptionType: types.ServerSideEncryptionAwsKmsDsse}, nil, "aws:kms:dsse"},
		{"kms key without kms", offlineClient(""), &s3blob.Options{KMSEncryptionID: "k"}, nil, "kmskeyid"},
		{"kms key with AES256", offlineClient(""), &s3blob.Options{EncryptionType: types.ServerSideEncryptionAes256, KMSEncryptionID: "k"}, nil, "kmskeyid"},
		{"minio adapter without endpoint", offlineClient(""), nil, []safeblob.Option{safeblob.WithAdapter(safeblob.MinioGo)}, "BaseEndpoint"},
		{"unknown adapter", offlineClient(""), nil, []safeblob.Option{safeblob.WithAdapter("x")}, "unknown adapter"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := safeblob.OpenBucket(ctx, c.client, "b", c.opts, c.extra...)
			if err == nil {
				_ = b.Close()
				t.Fatalf("OpenBucket succeeded, want an error naming %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("OpenBucket: %v, want it to name %q", err, c.want)
			}
		})
	}
	for _, o := range []*s3blob.Options{
		{EncryptionType: types.ServerSideEncryptionAes256},
		{EncryptionType: types.ServerSideEncryptionAwsKms, KMSEncryptionID: "key"},
		{UseLegacyList: true},
	} {
		b, err := safeblob.OpenBucket(ctx, offlineClient(""), "b", o)
		if err != nil {
			t.Errorf("OpenBucket with %+v: %v", o, err)
			continue
		}
		_ = b.Close()
	}
}
