// Package awss3 implements store.Store with aws-sdk-go-v2.
//
// Every call is one attempt (the SDK retryer is replaced per call, also for clients passed to
// NewFromClient), sends only the checksums the input carries as plain x-amz-checksum-* headers
// (no aws-chunked encoding, no trailers, no x-amz-sdk-checksum-algorithm), and turns every
// failure into either a *store.ResponseError (the store answered) or the transport error
// wrapped with the operation name (it did not). ETags are returned without surrounding quotes.
//
// Two SDK behaviours show through: a 200 answer whose body is <Error> (Complete) is reported
// with StatusCode 500, as the SDK rewrites it; and an error status with an empty body (every
// HEAD) gets Code "" rather than the code the SDK derives from the status text.
package awss3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/internal/catrust"
	"github.com/safeput/safeput/internal/partlist"
	"github.com/safeput/safeput/internal/secrets"
	"github.com/safeput/safeput/internal/warmdial"
	"github.com/safeput/safeput/store"
)

// Config describes how to reach an S3-compatible endpoint.
type Config struct {
	// Endpoint is the base URL, e.g. "https://s3.example.com" or "http://127.0.0.1:9000".
	// Empty uses the AWS endpoint for Region.
	Endpoint string
	// Region signs requests; "us-east-1" when empty.
	Region string
	// AccessKey and SecretKey are both set, or both empty for anonymous requests.
	AccessKey    string
	SecretKey    string
	SessionToken string
	// Credentials, when set, signs requests instead of the keys above (which must then be empty):
	// for keys that expire and are renewed, such as an assumed role's
	// (aws.NewCredentialsCache around an stscreds provider).
	Credentials aws.CredentialsProvider
	// PathStyle addresses buckets as endpoint/bucket instead of bucket.endpoint.
	PathStyle bool
	// HTTPClient is used as is when set; otherwise a client sized for many concurrent uploads.
	HTTPClient *http.Client
	// SignedPayload signs bodies with their SHA-256 even when an x-amz-checksum-* header already
	// covers them. By default such requests are signed with UNSIGNED-PAYLOAD, so the body is
	// hashed once (the CRC) instead of twice.
	SignedPayload bool
	// CABundle is PEM certificates of the CAs that sign the endpoint's certificate (a private
	// CA), trusted in addition to the system roots, for this store only: what the SDK's
	// config.WithCustomCABundle and AWS_CA_BUNDLE do. A bundle with no certificate is an error.
	// It cannot be combined with HTTPClient or InsecureSkipVerify.
	CABundle []byte
	// InsecureSkipVerify disables TLS certificate verification on the client New builds. Only for
	// test endpoints with self-signed certificates; it cannot be combined with HTTPClient.
	InsecureSkipVerify bool
}

// s3Store is the store.Store New and NewFromClient return, over an *s3.Client; it is safe for
// concurrent use. It stays unexported so that its methods are the store.Store contract and the
// store package's optional interfaces (Endpointer, InsecureTLS), nothing more to keep.
type s3Store struct {
	client        *s3.Client
	signedPayload bool
	insecure      bool             // Config.InsecureSkipVerify
	warm          *warmdial.Dialer // the built client's dialer; nil with the caller's client
	// warmURL and warmVirtual are where Warm's connections go, from the options (which the
	// client copies on every look).
	warmURL     *url.URL
	warmVirtual bool
}

// The optional capabilities the writer looks for (store/optional.go).
var (
	_ store.Store       = (*s3Store)(nil)
	_ store.Endpointer  = (*s3Store)(nil)
	_ store.InsecureTLS = (*s3Store)(nil)
	_ store.Warmer      = (*s3Store)(nil)
)

// New builds a store from cfg.
func New(cfg Config) (store.Store, error) {
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("awss3: endpoint %q: %w", cfg.Endpoint, err)
		}
		if pw, ok := u.User.Password(); ok {
			secrets.Register(pw)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("awss3: endpoint %q: want http(s)://host[:port]", cfg.Endpoint)
		}
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, errors.New("awss3: access key and secret key must be set together")
	}
	if cfg.Credentials != nil && (cfg.AccessKey != "" || cfg.SessionToken != "") {
		return nil, errors.New("awss3: set Credentials or the static keys (AccessKey, SecretKey, SessionToken), not both")
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	var creds aws.CredentialsProvider = aws.AnonymousCredentials{}
	if cfg.AccessKey != "" {
		creds = credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
		secrets.Register(cfg.SecretKey, cfg.SessionToken)
	}
	if cfg.Credentials != nil {
		creds = registering{cfg.Credentials}
	}
	if cfg.InsecureSkipVerify && cfg.HTTPClient != nil {
		return nil, errors.New("awss3: InsecureSkipVerify applies to the client New builds; configure your HTTPClient's TLS instead")
	}
	if len(cfg.CABundle) > 0 && cfg.HTTPClient != nil {
		return nil, errors.New("awss3: CABundle applies to the client New builds; set RootCAs in your HTTPClient's TLS config instead")
	}
	tlsConf, err := catrust.Config(cfg.CABundle, cfg.InsecureSkipVerify)
	if err != nil {
		return nil, fmt.Errorf("awss3: %w", err)
	}
	hc := cfg.HTTPClient
	var warm *warmdial.Dialer
	if hc == nil {
		hc, warm = newHTTPClient(tlsConf)
	}
	o := s3.Options{
		Region:                     region,
		UsePathStyle:               cfg.PathStyle,
		Credentials:                creds,
		HTTPClient:                 hc,
		Retryer:                    aws.NopRetryer{},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// WhenRequired skips validation on purpose; the log line would only be noise.
		DisableLogOutputChecksumValidationSkipped: true,
		// No Expect: 100-continue (the SDK's default for bodies of 2 MiB and more): it holds
		// every part's body back a round trip for the server's interim answer and adds no
		// evidence; over a wide-area link that is a round trip per part (the benchmark's WAN
		// section counts them). A body refused early is still cut short: the writer's fences
		// keep its buffer until the transport is done with it, as with minio-go, which never
		// sends the header.
		ContinueHeaderThresholdBytes: -1,
	}
	if cfg.Endpoint != "" {
		o.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	st := &s3Store{client: s3.New(o), signedPayload: cfg.SignedPayload, insecure: cfg.InsecureSkipVerify, warm: warm}
	if warm != nil {
		st.warmURL, st.warmVirtual = warmTarget(st.client.Options())
	}
	return st, nil
}

// registering registers the keys its provider hands out as secrets errors.Redact blanks, as
// they arrive: an assumed role's keys are renewed while the store is in use.
type registering struct{ next aws.CredentialsProvider }

func (p registering) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := p.next.Retrieve(ctx)
	if err == nil {
		secrets.Register(c.SecretAccessKey, c.SessionToken)
	}
	return c, err
}

// IsCredentialsProvider lets the SDK see the provider within (aws.IsCredentialsProvider): it
// signs nothing for aws.AnonymousCredentials, however wrapped.
func (p registering) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(p.next, target)
}

// NewFromClient wraps an already-configured client. Retries and checksum behaviour are forced
// per call, so the client's own settings for those do not matter.
// Payloads are unsigned (Config.SignedPayload false). The client's keys are not known to
// errors.Redact (New registers its keys): only the forms it recognises are redacted.
func NewFromClient(c *s3.Client) (store.Store, error) {
	if c == nil {
		return nil, errors.New("awss3: NewFromClient: nil *s3.Client")
	}
	return &s3Store{client: c}, nil
}

// progressClient reports every request's progress for stall detection (store.ProgressTransport),
// whichever HTTP client does the work.
type progressClient struct{ next s3.HTTPClient }

func (c progressClient) Do(req *http.Request) (*http.Response, error) {
	return store.ProgressTransport(roundTripFunc(c.next.Do)).RoundTrip(req)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// newHTTPClient keeps enough idle connections per host for a flush node's 64 concurrent
// uploads; without it net/http keeps 2 and reopens connections under load. No overall timeout:
// the caller's context bounds each request.
func newHTTPClient(tlsConf *tls.Config) (*http.Client, *warmdial.Dialer) {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	warm := warmdial.New(dialer.DialContext)
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           bufpool.Dialer(warm.DialContext), // a body costs no copy buffer per request
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   128,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf
	}
	return &http.Client{Transport: tr}, warm
}

// Warm opens, ahead of a write's requests to bucket, up to n connections for them, so their
// handshakes overlap what the writer does first (internal/warmdial). Over https one is enough:
// the client speaks HTTP/2 where the server does. It does nothing with the caller's client, or
// when a proxy carries the requests.
func (s *s3Store) Warm(bucket string, n int) {
	if s.warm == nil || s.warmURL == nil {
		return
	}
	if s.warmURL.Scheme == "https" {
		n = min(n, 1)
	}
	warmdial.Warm(s.warm, s.warmURL, bucket, s.warmVirtual, n)
}

// warmTarget is the endpoint the client of o sends to, and whether it names buckets in the host;
// nil for an endpoint that does not parse (the client's requests fail on it anyway).
func warmTarget(o s3.Options) (*url.URL, bool) {
	u, virtual := &url.URL{Scheme: "https", Host: "s3." + o.Region + ".amazonaws.com"}, true
	if ep := aws.ToString(o.BaseEndpoint); ep != "" {
		var err error
		if u, err = url.Parse(ep); err != nil {
			return nil, false
		}
		virtual = false
	}
	return u, virtual || !o.UsePathStyle
}

// payloadMode says how a body-carrying request's payload is signed.
type payloadMode int

const (
	payloadDefault  payloadMode = iota // no body: leave the SDK's choice
	payloadSHA256                      // hash the body into the signature
	payloadUnsigned                    // UNSIGNED-PAYLOAD: a CRC header covers the body
)

// bodyPayload picks the signing for a request whose body is covered by checksum c (or not).
// Without a checksum the SHA-256 is the only end-to-end check of the body, so it is forced even
// over TLS, where the SDK would otherwise send UNSIGNED-PAYLOAD.
func (s *s3Store) bodyPayload(c store.Checksum) payloadMode {
	if c.Algorithm != store.ChecksumNone && !s.signedPayload {
		return payloadUnsigned
	}
	return payloadSHA256
}

// opts returns the per-call options every request uses: one attempt, only requested
// checksums, and the raw-response capture for c.
func (c *call) opts(p payloadMode) func(*s3.Options) {
	return func(o *s3.Options) {
		o.Retryer = aws.NopRetryer{}
		// 0 keeps the SDK from wrapping the NopRetryer with the client's attempt count.
		o.RetryMaxAttempts = 0
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
		if _, ok := o.HTTPClient.(progressClient); !ok && o.HTTPClient != nil {
			o.HTTPClient = progressClient{next: o.HTTPClient}
		}
		o.APIOptions = append(o.APIOptions, c.addCapture, skip200CheckWhenEmpty)
		switch p {
		case payloadUnsigned:
			o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
		case payloadSHA256:
			o.APIOptions = append(o.APIOptions, swapToComputePayloadSHA256)
		}
	}
}

func swapToComputePayloadSHA256(stack *middleware.Stack) error {
	m := &v4.ComputePayloadSHA256{}
	_, err := stack.Finalize.Swap(m.ID(), m)
	return err
}

// PutObject implements store.Store.
func (s *s3Store) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := newCall("PutObject")
	body, err := newWindow(in.Body, in.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", c.op, in.Bucket, in.Key, err)
	}
	req := &s3.PutObjectInput{
		Bucket:        aws.String(in.Bucket),
		Key:           aws.String(in.Key),
		Body:          body,
		ContentLength: aws.Int64(in.ContentLength),
		ContentMD5:    optString(in.ContentMD5),
		ContentType:   optString(in.ContentType),
		Metadata:      in.Metadata,

		CacheControl:       optString(in.Headers.CacheControl),
		ContentDisposition: optString(in.Headers.ContentDisposition),
		ContentEncoding:    optString(in.Headers.ContentEncoding),
		ContentLanguage:    optString(in.Headers.ContentLanguage),
	}
	if in.IfNoneMatch {
		req.IfNoneMatch = aws.String("*")
	}
	setSSE(in.Encryption, &req.ServerSideEncryption, &req.SSEKMSKeyId, &req.SSEKMSEncryptionContext, &req.BucketKeyEnabled)
	setCustomerKey(in.Encryption.CustomerKey, &req.SSECustomerAlgorithm, &req.SSECustomerKey, &req.SSECustomerKeyMD5)
	setChecksum(in.Checksum, &req.ChecksumCRC32, &req.ChecksumCRC32C, &req.ChecksumCRC64NVME, &req.ChecksumSHA1, &req.ChecksumSHA256)
	out, err := s.client.PutObject(ctx, req, c.opts(s.bodyPayload(in.Checksum)))
	if err != nil {
		return nil, c.wrap(err)
	}
	// No ETag is not a failure by itself (Ceph RGW sends <ETag></ETag> on Complete): the
	// writer's HEAD decides what landed.
	return &store.PutObjectOutput{
		ETag:      unquote(aws.ToString(out.ETag)),
		VersionID: aws.ToString(out.VersionId),
		Checksums: checksums(out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256, out.ChecksumType),
		RequestID: requestID(out.ResultMetadata),
	}, nil
}

// CreateMultipartUpload implements store.Store.
func (s *s3Store) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := newCall("CreateMultipartUpload")
	req := &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(in.Bucket),
		Key:               aws.String(in.Key),
		ContentType:       optString(in.ContentType),
		Metadata:          in.Metadata,
		ChecksumAlgorithm: types.ChecksumAlgorithm(in.ChecksumAlgorithm),
		ChecksumType:      types.ChecksumType(in.ChecksumType),

		CacheControl:       optString(in.Headers.CacheControl),
		ContentDisposition: optString(in.Headers.ContentDisposition),
		ContentEncoding:    optString(in.Headers.ContentEncoding),
		ContentLanguage:    optString(in.Headers.ContentLanguage),
	}
	setSSE(in.Encryption, &req.ServerSideEncryption, &req.SSEKMSKeyId, &req.SSEKMSEncryptionContext, &req.BucketKeyEnabled)
	setCustomerKey(in.Encryption.CustomerKey, &req.SSECustomerAlgorithm, &req.SSECustomerKey, &req.SSECustomerKeyMD5)
	out, err := s.client.CreateMultipartUpload(ctx, req, c.opts(payloadDefault))
	if err != nil {
		return nil, c.wrap(err)
	}
	if aws.ToString(out.UploadId) == "" {
		return nil, c.nonCompliant(out.ResultMetadata, "no UploadId")
	}
	return &store.CreateMultipartUploadOutput{UploadID: aws.ToString(out.UploadId), RequestID: requestID(out.ResultMetadata)}, nil
}

// UploadPart implements store.Store.
func (s *s3Store) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := newCall("UploadPart")
	body, err := newWindow(in.Body, in.ContentLength)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s part %d: %w", c.op, in.Bucket, in.Key, in.PartNumber, err)
	}
	req := &s3.UploadPartInput{
		Bucket:        aws.String(in.Bucket),
		Key:           aws.String(in.Key),
		UploadId:      aws.String(in.UploadID),
		PartNumber:    aws.Int32(in.PartNumber),
		Body:          body,
		ContentLength: aws.Int64(in.ContentLength),
		ContentMD5:    optString(in.ContentMD5),
	}
	setCustomerKey(in.SSECustomerKey, &req.SSECustomerAlgorithm, &req.SSECustomerKey, &req.SSECustomerKeyMD5)
	setChecksum(in.Checksum, &req.ChecksumCRC32, &req.ChecksumCRC32C, &req.ChecksumCRC64NVME, &req.ChecksumSHA1, &req.ChecksumSHA256)
	out, err := s.client.UploadPart(ctx, req, c.opts(s.bodyPayload(in.Checksum)))
	if err != nil {
		return nil, c.wrap(err)
	}
	if unquote(aws.ToString(out.ETag)) == "" { // "" (only quotes) is no ETag either
		return nil, c.nonCompliant(out.ResultMetadata, "no ETag for part %d", in.PartNumber)
	}
	return &store.UploadPartOutput{
		ETag:      unquote(aws.ToString(out.ETag)),
		Checksums: checksums(out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256, ""),
		RequestID: requestID(out.ResultMetadata),
	}, nil
}

// maxPages bounds a listing so a store that keeps answering "truncated" cannot loop forever.
const maxPages = partlist.MaxPages

// ListParts implements store.Store, with the listing rules of internal/partlist (the same in
// the minio adapter): every entry kept, duplicates included, sorted stably by part number.
func (s *s3Store) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	res := &store.ListPartsOutput{}
	var marker int64
	for page := 0; ; page++ {
		c := newCall("ListParts")
		req := &s3.ListPartsInput{
			Bucket:   aws.String(in.Bucket),
			Key:      aws.String(in.Key),
			UploadId: aws.String(in.UploadID),
		}
		if in.PageSize > 0 {
			req.MaxParts = aws.Int32(in.PageSize)
		}
		if marker > 0 {
			req.PartNumberMarker = aws.String(strconv.FormatInt(marker, 10))
		}
		out, err := s.client.ListParts(ctx, req, c.opts(payloadDefault))
		if err != nil {
			return nil, c.wrap(err)
		}
		res.RequestID = requestID(out.ResultMetadata)
		for _, p := range out.Parts {
			etag := unquote(aws.ToString(p.ETag))
			if msg := partlist.Entry(int64(aws.ToInt32(p.PartNumber)), p.PartNumber != nil, etag); msg != "" {
				return nil, c.nonCompliant(out.ResultMetadata, "%s", msg)
			}
			res.Parts = append(res.Parts, store.Part{
				PartNumber:   aws.ToInt32(p.PartNumber),
				Size:         aws.ToInt64(p.Size),
				ETag:         etag,
				Checksums:    checksums(p.ChecksumCRC32, p.ChecksumCRC32C, p.ChecksumCRC64NVME, p.ChecksumSHA1, p.ChecksumSHA256, out.ChecksumType),
				LastModified: aws.ToTime(p.LastModified),
			})
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		next, perr := strconv.ParseInt(aws.ToString(out.NextPartNumberMarker), 10, 32)
		if msg := partlist.NextMarker(next, marker, perr == nil, page); msg != "" {
			return nil, c.nonCompliant(out.ResultMetadata, "%s", msg)
		}
		marker = next
	}
	partlist.Sort(res.Parts)
	return res, nil
}

// CompleteMultipartUpload implements store.Store. The SDK turns a 200 answer whose body is an
// <Error> into a 500 error, so that case arrives here as a ResponseError with StatusCode 500
// and the embedded code (as AWS advises: treat it like a 5xx).
func (s *s3Store) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := newCall("CompleteMultipartUpload")
	parts := make([]types.CompletedPart, len(in.Parts))
	for i, p := range in.Parts {
		// Quoted as S3 lists them: every store accepts that form in the request body.
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(p.PartNumber), ETag: aws.String(quote(p.ETag))}
		cp := &parts[i]
		setChecksum(p.Checksum, &cp.ChecksumCRC32, &cp.ChecksumCRC32C, &cp.ChecksumCRC64NVME, &cp.ChecksumSHA1, &cp.ChecksumSHA256)
	}
	req := &s3.CompleteMultipartUploadInput{
		Bucket:          aws.String(in.Bucket),
		Key:             aws.String(in.Key),
		UploadId:        aws.String(in.UploadID),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
		ChecksumType:    types.ChecksumType(in.ChecksumType),
	}
	setChecksum(in.FullObjectChecksum, &req.ChecksumCRC32, &req.ChecksumCRC32C, &req.ChecksumCRC64NVME, &req.ChecksumSHA1, &req.ChecksumSHA256)
	if in.IfNoneMatch {
		req.IfNoneMatch = aws.String("*")
	}
	if in.ObjectSize > 0 {
		req.MpuObjectSize = aws.Int64(in.ObjectSize)
	}
	setCustomerKey(in.SSECustomerKey, &req.SSECustomerAlgorithm, &req.SSECustomerKey, &req.SSECustomerKeyMD5)
	out, err := s.client.CompleteMultipartUpload(ctx, req, c.opts(payloadDefault))
	if err != nil {
		return nil, c.wrap(err)
	}
	// An empty ETag (Ceph RGW) is passed on: the writer's HEAD decides what landed.
	return &store.CompleteMultipartUploadOutput{
		ETag:      unquote(aws.ToString(out.ETag)),
		VersionID: aws.ToString(out.VersionId),
		Checksums: checksums(out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256, out.ChecksumType),
		RequestID: requestID(out.ResultMetadata),
	}, nil
}

// AbortMultipartUpload implements store.Store.
func (s *s3Store) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	if err := store.Validate(in); err != nil {
		return err
	}
	c := newCall("AbortMultipartUpload")
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(in.Bucket),
		Key:      aws.String(in.Key),
		UploadId: aws.String(in.UploadID),
	}, c.opts(payloadDefault))
	if err != nil {
		return c.wrap(err)
	}
	return nil
}

// HeadObject implements store.Store.
func (s *s3Store) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := newCall("HeadObject")
	req := &s3.HeadObjectInput{Bucket: aws.String(in.Bucket), Key: aws.String(in.Key)}
	setCustomerKey(in.SSECustomerKey, &req.SSECustomerAlgorithm, &req.SSECustomerKey, &req.SSECustomerKeyMD5)
	if in.ChecksumMode {
		req.ChecksumMode = types.ChecksumModeEnabled
	}
	out, err := s.client.HeadObject(ctx, req, c.opts(payloadDefault))
	if err != nil {
		return nil, c.wrap(err)
	}
	if out.ContentLength == nil {
		return nil, c.nonCompliant(out.ResultMetadata, "no Content-Length")
	}
	if unquote(aws.ToString(out.ETag)) == "" {
		return nil, c.nonCompliant(out.ResultMetadata, "no ETag")
	}
	return &store.HeadObjectOutput{
		Size:         aws.ToInt64(out.ContentLength),
		ETag:         unquote(aws.ToString(out.ETag)),
		VersionID:    aws.ToString(out.VersionId),
		ContentType:  aws.ToString(out.ContentType),
		Metadata:     out.Metadata,
		LastModified: aws.ToTime(out.LastModified),
		Checksums:    checksums(out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256, out.ChecksumType),
		Encryption:   reportedSSE(out.ServerSideEncryption, out.SSEKMSKeyId, out.BucketKeyEnabled, out.SSECustomerAlgorithm, out.SSECustomerKeyMD5),
		RequestID:    requestID(out.ResultMetadata),
	}, nil
}

// GetObject implements store.Store. A ranged request the store answers with the whole object
// (no matching Content-Range) is non-compliant: handing back the wrong bytes would be worse.
func (s *s3Store) GetObject(ctx context.Context, in *store.GetObjectInput) (*store.GetObjectOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	c := newCall("GetObject")
	req := &s3.GetObjectInput{Bucket: aws.String(in.Bucket), Key: aws.String(in.Key)}
	setCustomerKey(in.SSECustomerKey, &req.SSECustomerAlgorithm, &req.SSECustomerKey, &req.SSECustomerKeyMD5)
	ranged := in.Offset > 0 || in.Length > 0
	if ranged {
		if in.Length > 0 {
			req.Range = aws.String(fmt.Sprintf("bytes=%d-%d", in.Offset, in.Offset+in.Length-1))
		} else {
			req.Range = aws.String(fmt.Sprintf("bytes=%d-", in.Offset))
		}
	}
	out, err := s.client.GetObject(ctx, req, c.opts(payloadDefault))
	if err != nil {
		return nil, c.wrap(err)
	}
	if out.ContentLength == nil {
		_ = out.Body.Close()
		return nil, c.nonCompliant(out.ResultMetadata, "no Content-Length")
	}
	if ranged && !strings.HasPrefix(aws.ToString(out.ContentRange), fmt.Sprintf("bytes %d-", in.Offset)) {
		_ = out.Body.Close()
		return nil, c.nonCompliant(out.ResultMetadata, "range from %d asked, Content-Range %q answered", in.Offset, aws.ToString(out.ContentRange))
	}
	return &store.GetObjectOutput{
		Body:      out.Body,
		Size:      aws.ToInt64(out.ContentLength),
		ETag:      unquote(aws.ToString(out.ETag)),
		RequestID: requestID(out.ResultMetadata),
	}, nil
}

// DeleteObject implements store.Store. A store that answers NoSuchKey (S3 itself answers 204)
// is treated as success, as the contract says.
func (s *s3Store) DeleteObject(ctx context.Context, in *store.DeleteObjectInput) error {
	if err := store.Validate(in); err != nil {
		return err
	}
	c := newCall("DeleteObject")
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(in.Bucket), Key: aws.String(in.Key)}, c.opts(payloadDefault))
	if err != nil {
		err = c.wrap(err)
		var re *store.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.Code == "NoSuchKey" {
			return nil
		}
		return err
	}
	return nil
}

// ListMultipartUploads implements store.Store.
func (s *s3Store) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	res := &store.ListMultipartUploadsOutput{}
	var keyMarker, idMarker string
	for page := 0; ; page++ {
		c := newCall("ListMultipartUploads")
		req := &s3.ListMultipartUploadsInput{
			Bucket:         aws.String(in.Bucket),
			Prefix:         optString(in.Prefix),
			KeyMarker:      optString(keyMarker),
			UploadIdMarker: optString(idMarker),
		}
		if in.PageSize > 0 {
			req.MaxUploads = aws.Int32(in.PageSize)
		}
		out, err := s.client.ListMultipartUploads(ctx, req, c.opts(payloadDefault))
		if err != nil {
			return nil, c.wrap(err)
		}
		res.RequestID = requestID(out.ResultMetadata)
		for _, u := range out.Uploads {
			if aws.ToString(u.Key) == "" || aws.ToString(u.UploadId) == "" {
				return nil, c.nonCompliant(out.ResultMetadata, "upload without key or UploadId")
			}
			res.Uploads = append(res.Uploads, store.Upload{Key: aws.ToString(u.Key), UploadID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
		}
		if !aws.ToBool(out.IsTruncated) {
			return res, nil
		}
		nk, ni := aws.ToString(out.NextKeyMarker), aws.ToString(out.NextUploadIdMarker)
		if nk == "" && ni != "" && len(out.Uploads) > 0 {
			// MinIO leaves NextKeyMarker out of a truncated page; S3 defines it as the page's
			// last key, so continue from there.
			nk = aws.ToString(out.Uploads[len(out.Uploads)-1].Key)
		}
		if nk == "" || (nk == keyMarker && ni == idMarker) || page >= maxPages {
			return nil, c.nonCompliant(out.ResultMetadata, "truncated upload listing with next markers %q/%q", nk, ni)
		}
		keyMarker, idMarker = nk, ni
	}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// setChecksum puts c's value in the input field for its algorithm; the SDK sends each field as
// its own x-amz-checksum-<alg> header (or XML element, for Complete's parts).
func setChecksum(c store.Checksum, crc32, crc32c, crc64nvme, sha1, sha256 **string) {
	if c.Value == "" {
		return
	}
	v := aws.String(c.Value)
	switch c.Algorithm {
	case store.ChecksumCRC32:
		*crc32 = v
	case store.ChecksumCRC32C:
		*crc32c = v
	case store.ChecksumCRC64NVME:
		*crc64nvme = v
	case store.ChecksumSHA1:
		*sha1 = v
	case store.ChecksumSHA256:
		*sha256 = v
	}
}

func checksums(crc32, crc32c, crc64nvme, sha1, sha256 *string, typ types.ChecksumType) store.Checksums {
	return store.Checksums{
		CRC32:     aws.ToString(crc32),
		CRC32C:    aws.ToString(crc32c),
		CRC64NVME: aws.ToString(crc64nvme),
		SHA1:      aws.ToString(sha1),
		SHA256:    aws.ToString(sha256),
		Type:      store.ChecksumType(typ),
	}
}

// setSSE sets a request's x-amz-server-side-encryption fields for SSE-S3 and SSE-KMS.
func setSSE(e store.Encryption, sse *types.ServerSideEncryption, kmsKey, kmsContext **string, bucketKey **bool) {
	switch e.Type {
	case store.SSES3, store.SSEKMS:
		*sse = types.ServerSideEncryption(e.Type)
	default:
		return
	}
	*kmsKey = optString(e.KMSKeyID)
	*kmsContext = optString(e.KMSContextHeader())
	if e.BucketKey {
		*bucketKey = aws.Bool(true)
	}
}

// setCustomerKey sets a request's SSE-C fields. aws-sdk-go-v2 sends them as given, so the key
// is base64-encoded and its MD5 computed here.
func setCustomerKey(k store.CustomerKey, alg, key, keyMD5 **string) {
	if len(k) == 0 {
		return
	}
	b64 := k.Base64()
	secrets.Register(b64, string(k)) // a store may echo the header back in an error
	*alg, *key, *keyMD5 = aws.String("AES256"), aws.String(b64), aws.String(k.MD5())
}

// reportedSSE is the encryption a HEAD reports.
func reportedSSE(sse types.ServerSideEncryption, kmsKey *string, bucketKey *bool, customerAlg, customerKeyMD5 *string) store.Encryption {
	e := store.Encryption{Type: store.SSEType(sse), KMSKeyID: aws.ToString(kmsKey), BucketKey: aws.ToBool(bucketKey)}
	if aws.ToString(customerAlg) != "" || aws.ToString(customerKeyMD5) != "" {
		e.Type, e.CustomerKeyMD5 = store.SSEC, aws.ToString(customerKeyMD5)
	}
	return e
}

// unquote strips surrounding spaces and one pair of double quotes: store ETags are returned
// bare, as the minio adapter returns them (internal/partlist.ETag serves both).
func unquote(etag string) string { return partlist.ETag(etag) }

func quote(etag string) string {
	return `"` + unquote(etag) + `"`
}

// InsecureSkipVerify reports whether the store was built with certificate verification off. A
// writer.Uploader made on it logs a warning, once, so the choice shows in the logs.
func (s *s3Store) InsecureSkipVerify() bool { return s.insecure }

// Endpoint names the endpoint this store talks to ("" for AWS's regional default), e.g. for a
// journal's endpoint identity.
func (s *s3Store) Endpoint() string { return aws.ToString(s.client.Options().BaseEndpoint) }
