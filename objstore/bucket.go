// Package safeobjstore is a github.com/thanos-io/objstore Bucket for S3 whose uploads go through
// safeput: the drop-in for Thanos, Loki, Mimir and Cortex, which write through objstore.Bucket.
//
// NewBucket takes the same arguments as objstore's providers/s3.NewBucket (the same YAML, the
// same round-tripper wrapper). Reads, Iter, Delete, Attributes, Exists and the error predicates are
// objstore's own S3 bucket's, built from the same configuration over the same HTTP transport (one
// connection pool); Upload is a safeput writer.Uploader's, one per Bucket, so every upload of the
// Bucket shares one memory budget and one retry budget, is verified after commit (strongly: a
// checksum or MD5 compared, never length alone) and fails with a classified
// *github.com/safeput/safeput/errors.Error.
//
// A setting of the configuration that safeput cannot honour for writes is an error of NewBucket,
// never silently dropped: see refuse for the list.
package safeobjstore

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/encrypt"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/exthttp"
	"github.com/thanos-io/objstore/providers/s3"
	"gopkg.in/yaml.v2"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/writer"
)

// Adapter names the SDK safeput's writes go through.
type Adapter string

const (
	// MinioGo writes through minio-go (store/miniogo), the SDK objstore's S3 provider uses, so the
	// credential chain, signature version and addressing behave as objstore's. The default.
	MinioGo Adapter = "minio-go"
	// AWSSDK writes through aws-sdk-go-v2 (store/awss3). It cannot sign with signature version 2
	// nor trace requests, so those settings are refused with it.
	AWSSDK Adapter = "aws-sdk-go-v2"
)

// concurrency is the number of parts in flight per upload: objstore's S3 provider pins minio-go's
// NumThreads to 4, so a swap keeps the same load on the store.
const concurrency = 4

// Option adjusts NewBucket.
type Option func(*options)

type options struct {
	adapter  Adapter
	uploader []func(*writer.Options)
}

// WithAdapter chooses the SDK of the writes (MinioGo by default).
func WithAdapter(a Adapter) Option { return func(o *options) { o.adapter = a } }

// WithUploaderOptions adds options to the Bucket's writer.Uploader (a profile such as
// o.Profile = "minio", a memory budget, a retry policy, an observer), after those derived
// from the configuration, so they override them. Upload always overwrites, as objstore's does:
// an Options.CreateOnly given here is overridden per upload.
func WithUploaderOptions(opts ...func(*writer.Options)) Option {
	return func(o *options) { o.uploader = append(o.uploader, opts...) }
}

// Bucket is an objstore.Bucket over S3 whose Upload goes through safeput. Every method but Upload,
// IsObjNotFoundErr and IsAccessDeniedErr is the embedded objstore S3 bucket's.
type Bucket struct {
	*s3.Bucket
	logger log.Logger
	name   string
	up     *writer.Uploader
	meta   map[string]string
	st     store.Store
}

var _ objstore.Bucket = (*Bucket)(nil)

// NewBucket parses conf as objstore's S3 provider does (its YAML, its defaults) and returns a
// Bucket; the arguments are those of providers/s3.NewBucket.
func NewBucket(logger log.Logger, conf []byte, component string, wrapRoundtripper func(http.RoundTripper) http.RoundTripper, opts ...Option) (*Bucket, error) {
	config := s3.DefaultConfig
	// DefaultConfig's map is shared by every parse; a fresh one keeps this one's keys its own.
	config.PutUserMetadata = map[string]string{}
	if err := yaml.UnmarshalStrict(conf, &config); err != nil {
		return nil, err
	}
	return NewBucketWithConfig(logger, config, component, wrapRoundtripper, opts...)
}

// NewBucketWithConfig is NewBucket from a parsed configuration (as providers/s3's).
func NewBucketWithConfig(logger log.Logger, config s3.Config, component string, wrapRoundtripper func(http.RoundTripper) http.RoundTripper, opts ...Option) (*Bucket, error) {
	o := options{adapter: MinioGo}
	for _, opt := range opts {
		opt(&o)
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	meta, err := refuse(config, o.adapter)
	if err != nil {
		return nil, err
	}
	enc, err := encryptionOf(config.SSEConfig) // before objstore's reads, whose errors name less
	if err != nil {
		return nil, fmt.Errorf("safeobjstore: %w", err)
	}

	// One transport for reads and writes, wrapped once: Thanos' wrapper (HTTP metrics, traces)
	// sees every request, and the two clients share one connection pool.
	tpt := config.HTTPConfig.Transport
	if tpt == nil {
		t, err := exthttp.DefaultTransport(config.HTTPConfig)
		if err != nil {
			return nil, err
		}
		tpt = t
	}
	if wrapRoundtripper != nil {
		tpt = wrapRoundtripper(tpt)
	}
	readCfg := config
	readCfg.HTTPConfig.Transport = tpt
	readCfg.PutUserMetadata = map[string]string{} // objstore's Upload, the only reader of it, is not used
	reads, err := s3.NewBucketWithConfig(logger, readCfg, component, nil)
	if err != nil {
		return nil, err
	}

	st, err := newStore(config, o.adapter, tpt, logger)
	if err != nil {
		return nil, err
	}

	wopts := []func(*writer.Options){
		func(o *writer.Options) { o.Concurrency = concurrency; o.ContentMD5 = config.SendContentMd5 },
	}
	partSize := int64(writer.DefaultPartSize)
	if config.PartSize > 0 {
		partSize = int64(min(config.PartSize, 5<<30))
		wopts = append(wopts, func(o *writer.Options) { o.PartSize = partSize })
	}
	// One memory budget for every upload of the Bucket: as much as one upload's parts in flight,
	// so concurrent uploads wait for buffers instead of multiplying the heap.
	budget, err := writer.NewBudget(concurrency * partSize)
	if err != nil {
		return nil, fmt.Errorf("safeobjstore: memory budget: %w", err)
	}
	wopts = append(wopts, func(o *writer.Options) { o.MemoryBudget = budget })
	if config.MaxRetries > 0 {
		// minio-go's MaxRetries counts attempts, as retry.Options.MaxAttempts does.
		wopts = append(wopts, func(wo *writer.Options) {
			wo.Retry = retry.New(func(o *retry.Options) { o.MaxAttempts = config.MaxRetries })
		})
	}
	if enc.Type != store.SSENone {
		// Every write asks for it, and the HEAD after commit must show it (writer.Options.Encryption).
		wopts = append(wopts, func(o *writer.Options) { o.Encryption = enc })
	}
	wopts = append(wopts, o.uploader...)
	up, err := writer.NewUploader(st, wopts...)
	if err != nil {
		return nil, fmt.Errorf("safeobjstore: %w", err)
	}
	return &Bucket{Bucket: reads, logger: logger, name: config.Bucket, up: up, meta: meta, st: st}, nil
}

// encryptionOf maps objstore's sse_config to the encryption every write asks for: SSE-S3;
// SSE-KMS with kms_key_id and kms_encryption_context; SSE-C with the 32-byte key read from the
// encryption_key file, as objstore reads it.
func encryptionOf(c s3.SSEConfig) (store.Encryption, error) {
	var e store.Encryption
	switch c.Type {
	case "":
		return e, nil
	case s3.SSES3:
		e.Type = store.SSES3
	case s3.SSEKMS:
		e = store.Encryption{Type: store.SSEKMS, KMSKeyID: c.KMSKeyID, KMSContext: c.KMSEncryptionContext}
	case s3.SSEC:
		key, err := os.ReadFile(c.EncryptionKey)
		if err != nil {
			return e, fmt.Errorf("sse_config encryption_key: %w", err)
		}
		if len(key) != store.CustomerKeySize {
			return e, fmt.Errorf("sse_config encryption_key %s: the file has %d bytes, want the %d-byte key", c.EncryptionKey, len(key), store.CustomerKeySize)
		}
		e = store.Encryption{Type: store.SSEC, CustomerKey: key}
	default:
		return e, fmt.Errorf("sse_config type %q: want %s, %s or %s", c.Type, s3.SSES3, s3.SSEKMS, s3.SSEC)
	}
	return e, e.Validate()
}

// refuse returns the error of every setting safeput cannot honour for writes with adapter a, or
// the user metadata to send (put_user_metadata without the keys minio-go would send as headers).
func refuse(c s3.Config, a Adapter) (map[string]string, error) {
	var why []string
	switch a {
	case MinioGo, AWSSDK:
	default:
		why = append(why, fmt.Sprintf("unknown adapter %q", a))
	}
	if c.DisableMultipart {
		why = append(why, "disable_multipart: safeput sends objects above one part as multipart uploads")
	}
	if c.SignatureV2 && a == AWSSDK {
		why = append(why, "signature_version2: aws-sdk-go-v2 signs with version 4 only (use the minio-go adapter)")
	}
	if c.TraceConfig.Enable && a == AWSSDK {
		why = append(why, "trace.enable: only the minio-go adapter traces requests")
	}
	if c.BucketLookupType == s3.VirtualHostLookup && a == MinioGo {
		why = append(why, "bucket_lookup_type virtual-hosted: the minio-go adapter chooses (auto) or uses path style (use the aws-sdk-go-v2 adapter)")
	}
	meta := make(map[string]string, len(c.PutUserMetadata))
	for k, v := range c.PutUserMetadata {
		lk := strings.ToLower(k)
		switch {
		case lk == "x-amz-storage-class":
			why = append(why, "put_user_metadata X-Amz-Storage-Class: safeput sends no storage class yet")
		case strings.HasPrefix(lk, "x-amz-meta-"):
			meta[k[len("x-amz-meta-"):]] = v
		case isHeader(lk):
			// minio-go sends these as request headers, not metadata; safeput sends only x-amz-meta-*.
			why = append(why, fmt.Sprintf("put_user_metadata %s: minio-go sends it as a request header, safeput only as x-amz-meta-*", k))
		default:
			meta[k] = v
		}
	}
	if len(why) > 0 {
		return nil, fmt.Errorf("safeobjstore: settings safeput cannot honour for writes: %s", strings.Join(why, "; "))
	}
	return meta, nil
}

// isHeader tells the keys minio-go's UserMetadata sends as headers rather than x-amz-meta-*
// (its isAmzHeader, isStandardHeader, isSSEHeader and isStorageClassHeader).
func isHeader(lk string) bool {
	if strings.HasPrefix(lk, "x-amz-") {
		return true
	}
	switch lk {
	case "content-type", "cache-control", "content-encoding", "content-disposition",
		"content-language", "expires", "range":
		return true
	}
	return false
}

// newStore builds the adapter's store on tpt with objstore's credential chain.
func newStore(c s3.Config, a Adapter, tpt http.RoundTripper, logger log.Logger) (store.Store, error) {
	scheme := "https"
	if c.Insecure {
		scheme = "http"
	}
	endpoint := scheme + "://" + c.Endpoint
	if _, err := url.Parse(endpoint); err != nil {
		return nil, fmt.Errorf("safeobjstore: endpoint %q: %w", c.Endpoint, err)
	}
	creds := credentials.NewChainCredentials(chain(c))
	if a == AWSSDK {
		pathStyle := c.BucketLookupType == s3.PathLookup ||
			(c.BucketLookupType == s3.AutoLookup && !virtualByDefault(c.Endpoint))
		st, err := awss3.New(awss3.Config{
			Endpoint:    endpoint,
			Region:      c.Region,
			Credentials: awsCredentials{creds},
			PathStyle:   pathStyle,
			HTTPClient:  &http.Client{Transport: tpt},
		})
		if err != nil {
			return nil, fmt.Errorf("safeobjstore: %w", err)
		}
		return st, nil
	}
	st, err := miniogo.New(miniogo.Config{
		Endpoint:    endpoint,
		Region:      c.Region,
		Credentials: creds,
		PathStyle:   c.BucketLookupType == s3.PathLookup,
		Transport:   tpt,
		Customize: func(core *minio.Core) {
			if c.DisableDualstack {
				core.SetS3EnableDualstack(false)
			}
			if c.TraceConfig.Enable {
				core.TraceOn(log.NewStdlibAdapter(level.Debug(logger), log.MessageKey("s3TraceMsg")))
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("safeobjstore: %w", err)
	}
	return st, nil
}

// virtualByDefault tells the endpoints minio-go's auto lookup addresses virtual-hosted style.
func virtualByDefault(endpoint string) bool {
	host := strings.ToLower(endpoint)
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	return strings.HasSuffix(host, ".amazonaws.com") || strings.HasSuffix(host, ".amazonaws.com.cn") ||
		host == "storage.googleapis.com"
}

// chain is objstore's credential chain (providers/s3.NewBucketWithConfig), which it does not
// export: the AWS SDK's chain, else the static keys, else (empty keys) the environment, the AWS
// credentials file and IAM with the STS endpoint; each forced to signature v2 when asked.
func chain(c s3.Config) []credentials.Provider {
	wrap := func(p credentials.Provider) credentials.Provider { return p }
	if c.SignatureV2 {
		wrap = func(p credentials.Provider) credentials.Provider {
			return &signerOverride{Provider: p, signerType: credentials.SignatureV2}
		}
	}
	switch {
	case c.AWSSDKAuth:
		return []credentials.Provider{wrap(&s3.AWSSDKAuth{Region: c.Region})}
	case c.AccessKey != "":
		return []credentials.Provider{wrap(&credentials.Static{Value: credentials.Value{
			AccessKeyID: c.AccessKey, SecretAccessKey: c.SecretKey, SessionToken: c.SessionToken,
			SignerType: credentials.SignatureV4,
		}})}
	default:
		return []credentials.Provider{
			wrap(&credentials.EnvAWS{}),
			wrap(&credentials.FileAWSCredentials{}),
			wrap(&credentials.IAM{Client: &http.Client{Transport: http.DefaultTransport}, Endpoint: c.STSEndpoint}),
		}
	}
}

// signerOverride is objstore's overrideSignerType: the provider's keys, signed with signerType.
type signerOverride struct {
	credentials.Provider
	signerType credentials.SignatureType
}

func (s *signerOverride) RetrieveWithCredContext(cc *credentials.CredContext) (credentials.Value, error) {
	v, err := s.Provider.RetrieveWithCredContext(cc)
	if err != nil {
		return v, err
	}
	if !v.SignerType.IsAnonymous() {
		v.SignerType = s.signerType
	}
	return v, nil
}

func (s *signerOverride) Retrieve() (credentials.Value, error) { return s.RetrieveWithCredContext(nil) }

// awsCredentials hands minio-go credentials (objstore's chain, cached and renewed by minio-go) to
// aws-sdk-go-v2.
type awsCredentials struct{ c *credentials.Credentials }

func (a awsCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	v, err := a.c.GetWithContext(&credentials.CredContext{})
	if err != nil {
		return aws.Credentials{}, err
	}
	if v.SignerType.IsAnonymous() || v.AccessKeyID == "" {
		// minio-go would send unsigned requests; the AWS SDK would sign with empty keys.
		return aws.Credentials{}, stderrors.New("safeobjstore: no credentials in the chain (environment, AWS credentials file, IAM)")
	}
	return aws.Credentials{
		AccessKeyID: v.AccessKeyID, SecretAccessKey: v.SecretAccessKey, SessionToken: v.SessionToken,
		Source: "objstore", CanExpire: !v.Expiration.IsZero(), Expires: v.Expiration,
	}, ctx.Err()
}

// Upload writes r to name through safeput and returns nil only when the object is at name,
// verified. It overwrites, as objstore's S3 Upload does.
func (b *Bucket) Upload(ctx context.Context, name string, r io.Reader, opts ...objstore.ObjectUploadOption) error {
	if sseKey == nil || ctx.Value(sseKey) != nil {
		// objstore's reads would use the context's SSE; a write without it would not be readable
		// as asked, so it is refused rather than written unencrypted.
		return &sperrors.Error{Kind: sperrors.Permanent, Op: "Upload", Bucket: b.name, Key: name,
			Message: "per-request server-side encryption (s3.ContextWithSSEConfig) cannot be honoured: set sse_config in the bucket config instead"}
	}
	params := objstore.ApplyObjectUploadOptions(opts...)
	wopts := []func(*writer.Options){func(o *writer.Options) { o.CreateOnly = false; o.Metadata = b.meta }}
	if params.ContentType != "" {
		wopts = append(wopts, func(o *writer.Options) { o.ContentType = params.ContentType })
	}
	// objstore's sizes (*os.File, bytes readers, ObjectSizer, *io.LimitedReader) as the declared
	// size: a stream that ends shorter or runs longer fails instead of landing cut or padded.
	if size, err := objstore.TryToGetSize(r); err == nil && size >= 0 {
		wopts = append(wopts, func(o *writer.Options) { o.Size = size })
	}
	res, err := b.up.Upload(ctx, b.name, name, r, wopts...)
	b.logResult(name, res, err)
	return err
}

// sseKey is objstore's unexported context key of s3.ContextWithSSEConfig (Cortex's per-request
// SSE), found by reflection and proven by a lookup; nil when objstore's layout changed, and then
// every Upload fails rather than risk dropping a caller's encryption silently.
var sseKey = func() any {
	probe := s3.ContextWithSSEConfig(context.Background(), encrypt.NewSSE())
	v := reflect.ValueOf(probe)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("key")
	if !f.IsValid() || f.Kind() != reflect.Interface || f.IsNil() {
		return nil
	}
	key := reflect.Zero(f.Elem().Type()).Interface() // objstore's key is its type's zero value
	if _, ok := probe.Value(key).(encrypt.ServerSide); !ok {
		return nil
	}
	return key
}()

// logResult logs what a caller of an error-only Upload would otherwise never see.
func (b *Bucket) logResult(name string, res *writer.Result, err error) {
	if res != nil {
		for _, id := range res.LeftBehind {
			_ = level.Warn(b.logger).Log("msg", "incomplete multipart upload left behind; a sweep must abort it", "bucket", b.name, "name", name, "upload_id", id)
		}
		if res.MaybeLeftBehind {
			_ = level.Warn(b.logger).Log("msg", "an incomplete multipart upload may be left behind", "bucket", b.name, "name", name)
		}
		for _, n := range res.Notes {
			_ = level.Info(b.logger).Log("msg", "safeput note", "bucket", b.name, "name", name, "note", n)
		}
		for _, u := range res.Unproven {
			_ = level.Warn(b.logger).Log("msg", "upload accepted without proof", "bucket", b.name, "name", name, "missing", u)
		}
	}
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		if e.AbortFailed {
			_ = level.Warn(b.logger).Log("msg", "failed upload could not be aborted; a sweep must abort it", "bucket", b.name, "name", name, "upload_id", e.UploadID, "err", err)
		}
		if e.ObjectLeft {
			_ = level.Warn(b.logger).Log("msg", "failed upload left an unproven object at the key", "bucket", b.name, "name", name, "err", err)
		}
	}
}

// IsObjNotFoundErr is objstore's S3 answer, also for safeput's errors.
func (b *Bucket) IsObjNotFoundErr(err error) bool {
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		return e.Code == "NoSuchKey" || (e.Code == "" && e.StatusCode == http.StatusNotFound)
	}
	return b.Bucket.IsObjNotFoundErr(err)
}

// IsAccessDeniedErr is objstore's S3 answer, also for safeput's errors (a HEAD's 403 has no code).
func (b *Bucket) IsAccessDeniedErr(err error) bool {
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		return e.Code == "AccessDenied" || (e.Code == "" && e.StatusCode == http.StatusForbidden)
	}
	return b.Bucket.IsAccessDeniedErr(err)
}

// Name returns the bucket's name.
func (b *Bucket) Name() string { return b.name }

// Uploader returns the Bucket's safeput Uploader, for Recover or writes with a Result.
func (b *Bucket) Uploader() *writer.Uploader { return b.up }

// Store returns the store safeput writes through.
func (b *Bucket) Store() store.Store { return b.st }

// Close releases nothing safeput holds: the Uploader keeps no connections of its own.
func (b *Bucket) Close() error { return b.Bucket.Close() }
