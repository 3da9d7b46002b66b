// Package safeblob is a gocloud.dev/blob driver for S3 whose writes go through safeput: a
// program that writes through blob.Bucket switches by changing one URL, "s3://bucket?..." to
// "safes3://bucket?..." (the same query parameters), or one call, s3blob.OpenBucket to
// safeblob.OpenBucket (the same arguments).
//
// Reads, listing, attributes, copy, delete and signed URLs are gocloud's own s3blob driver's, over
// the same *s3.Client (one transport, one connection pool). Writes go through one safeput
// writer.Uploader per bucket (one retry budget; WithUploaderOptions(func(o *writer.Options) { o.MemoryBudget = b })
// bounds their part buffers together): streamed in parts, verified after commit (a checksum or
// MD5 compared, never length alone), and failed with a classified
// *github.com/safeput/safeput/errors.Error that blob.Bucket.ErrorAs reaches and gcerrors.Code
// maps; a failed or canceled write leaves no object and no incomplete multipart upload.
//
// Every driver.WriterOptions field is honoured: Content-Type, metadata, the cache headers,
// ContentMD5 (checked before commit), IfNotExist, BufferSize, MaxConcurrency and BeforeWrite.
//
// # As
//
// safeblob exposes s3blob's types for every As but the writer's:
//   - Bucket: *s3.Client, *writer.Uploader
//   - Error: *github.com/safeput/safeput/errors.Error for writes; s3blob's for the rest
//   - WriterOptions.BeforeWrite: *[]func(*writer.Options), the options of this write (append to them)
//   - the rest (ListObject, ListOptions.BeforeList, Reader, ReaderOptions.BeforeRead, Attributes,
//     CopyOptions.BeforeCopy, DeleteOptions.BeforeDelete, SignedURLOptions.BeforeSign): s3blob's
package safeblob

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // ContentMD5 is the caller's MD5; not for security.
	stderrors "errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"go.uber.org/zap"
	"gocloud.dev/blob"
	"gocloud.dev/blob/driver"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/writer"
)

// Scheme is the URL scheme safeblob registers its URLOpener under on blob.DefaultURLMux.
const Scheme = "safes3"

func init() {
	blob.DefaultURLMux().RegisterBucket(Scheme, new(URLOpener))
}

// Adapter names the SDK safeput's writes go through.
type Adapter string

const (
	// AWSSDK writes through aws-sdk-go-v2 (store/awss3) with the caller's *s3.Client itself. The
	// default.
	AWSSDK Adapter = "aws-sdk-go-v2"
	// MinioGo writes through minio-go (store/miniogo), built from the client's endpoint, region,
	// credentials, addressing style and HTTP client. The client must have a BaseEndpoint.
	MinioGo Adapter = "minio-go"
)

// Option adjusts OpenBucket, NewBucket and URLOpener.
type Option func(*options)

type options struct {
	adapter  Adapter
	uploader []func(*writer.Options)
	logger   *zap.Logger
}

// WithAdapter chooses the SDK of the writes (AWSSDK by default).
func WithAdapter(a Adapter) Option { return func(o *options) { o.adapter = a } }

// WithUploaderOptions adds options to the bucket's writer.Uploader (a profile such as
// o.Profile = "minio", a memory budget, a retry policy, an observer), after those derived
// from s3blob.Options, so they override them. Each write's own WriterOptions override them in
// turn (IfNotExist, BufferSize, MaxConcurrency, ContentType, Metadata, BeforeWrite).
func WithUploaderOptions(opts ...func(*writer.Options)) Option {
	return func(o *options) { o.uploader = append(o.uploader, opts...) }
}

// WithLogger logs what a blob.Writer's caller cannot see (an incomplete upload a write knows it
// left behind, a write accepted without proof), and is the Uploader's logger. No-op by default.
func WithLogger(l *zap.Logger) Option { return func(o *options) { o.logger = l } }

// URLOpener opens "safes3://bucket?..." URLs: the query parameters are s3blob.URLOpener's, parsed
// by it, so a URL switches from s3:// by its scheme alone.
type URLOpener struct {
	// Options are s3blob's, as in s3blob.URLOpener; the URL's parameters set theirs.
	Options s3blob.Options
	// Safeput adjusts the safeput side (adapter, Uploader options, logger).
	Safeput []Option
}

// OpenBucketURL opens a blob.Bucket based on u.
func (o *URLOpener) OpenBucketURL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	s3u := *u
	s3u.Scheme = s3blob.Scheme
	// s3blob's opener parses the parameters, builds the client and sets its Options from them
	// (ssetype, kmskeyid, request_checksum_calculation): safeput writes with the same.
	inner := &s3blob.URLOpener{Options: o.Options}
	reads, err := inner.OpenBucketURL(ctx, &s3u)
	if err != nil {
		return nil, fmt.Errorf("safeblob: %w", err)
	}
	var client *s3.Client
	if !reads.As(&client) {
		_ = reads.Close()
		return nil, stderrors.New("safeblob: s3blob's bucket exposes no *s3.Client")
	}
	drv, err := newBucket(client, u.Host, &inner.Options, reads, o.Safeput)
	if err != nil {
		_ = reads.Close()
		return nil, err
	}
	return blob.NewBucket(drv), nil
}

// OpenBucket returns a *blob.Bucket backed by S3 whose writes go through safeput; the arguments
// are s3blob.OpenBucket's.
func OpenBucket(ctx context.Context, client *s3.Client, bucketName string, opts *s3blob.Options, safeput ...Option) (*blob.Bucket, error) {
	drv, err := NewBucket(ctx, client, bucketName, opts, safeput...)
	if err != nil {
		return nil, err
	}
	return blob.NewBucket(drv), nil
}

// NewBucket is OpenBucket's driver.Bucket, for a caller that wraps drivers.
func NewBucket(ctx context.Context, client *s3.Client, bucketName string, opts *s3blob.Options, safeput ...Option) (driver.Bucket, error) {
	reads, err := s3blob.OpenBucket(ctx, client, bucketName, opts)
	if err != nil {
		return nil, fmt.Errorf("safeblob: %w", err)
	}
	drv, err := newBucket(client, bucketName, opts, reads, safeput)
	if err != nil {
		_ = reads.Close()
		return nil, err
	}
	return drv, nil
}

// bucket is the driver: reads delegated to s3blob's bucket, writes through up.
type bucket struct {
	name   string
	client *s3.Client
	reads  *blob.Bucket
	up     *writer.Uploader
	logger *zap.Logger
}

var (
	_ driver.Bucket   = (*bucket)(nil)
	_ driver.Uploader = (*blobWriter)(nil)
)

func newBucket(client *s3.Client, name string, s3opts *s3blob.Options, reads *blob.Bucket, opts []Option) (*bucket, error) {
	o := options{adapter: AWSSDK, logger: zap.NewNop()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.logger == nil {
		o.logger = zap.NewNop()
	}
	if s3opts == nil {
		s3opts = &s3blob.Options{}
	}
	enc, err := encryptionOf(s3opts)
	if err != nil {
		return nil, err
	}
	st, err := newStore(client, o.adapter)
	if err != nil {
		return nil, err
	}
	wopts := []func(*writer.Options){func(wo *writer.Options) { wo.Logger = o.logger }}
	if enc.Type != store.SSENone {
		// Every write asks for it, and the HEAD after commit must show it.
		wopts = append(wopts, func(o *writer.Options) { o.Encryption = enc })
	}
	wopts = append(wopts, o.uploader...)
	up, err := writer.NewUploader(st, wopts...)
	if err != nil {
		return nil, fmt.Errorf("safeblob: %w", err)
	}
	return &bucket{name: name, client: client, reads: reads, up: up, logger: o.logger}, nil
}

// encryptionOf maps s3blob's encryption options to the encryption every write asks for.
func encryptionOf(o *s3blob.Options) (store.Encryption, error) {
	switch o.EncryptionType {
	case "":
		if o.KMSEncryptionID != "" {
			return store.Encryption{}, stderrors.New("safeblob: KMSEncryptionID (kmskeyid) without EncryptionType (ssetype) aws:kms: say which encryption to ask for")
		}
		return store.Encryption{}, nil
	case types.ServerSideEncryptionAes256:
		if o.KMSEncryptionID != "" {
			return store.Encryption{}, stderrors.New("safeblob: KMSEncryptionID (kmskeyid) with EncryptionType AES256: a KMS key needs aws:kms")
		}
		return store.Encryption{Type: store.SSES3}, nil
	case types.ServerSideEncryptionAwsKms:
		e := store.Encryption{Type: store.SSEKMS, KMSKeyID: o.KMSEncryptionID}
		return e, e.Validate()
	default:
		return store.Encryption{}, fmt.Errorf("safeblob: EncryptionType (ssetype) %q: safeput writes AES256 or aws:kms only", o.EncryptionType)
	}
}

// newStore builds the adapter's store over the client's own settings and HTTP client.
func newStore(client *s3.Client, a Adapter) (store.Store, error) {
	if client == nil {
		return nil, stderrors.New("safeblob: client is required")
	}
	switch a {
	case AWSSDK:
		st, err := awss3.NewFromClient(client)
		if err != nil {
			return nil, fmt.Errorf("safeblob: %w", err)
		}
		return st, nil
	case MinioGo:
	default:
		return nil, fmt.Errorf("safeblob: unknown adapter %q", a)
	}
	o := client.Options()
	endpoint := aws.ToString(o.BaseEndpoint)
	if endpoint == "" {
		return nil, stderrors.New("safeblob: the minio-go adapter needs the client's BaseEndpoint (the endpoint URL parameter); use the aws-sdk-go-v2 adapter for AWS's own endpoints")
	}
	if o.Credentials == nil {
		return nil, stderrors.New("safeblob: the minio-go adapter needs the client's credentials (anonymous writes are not supported)")
	}
	if o.UseAccelerate || o.UseDualstack || o.UseARNRegion { //nolint:staticcheck // UseDualstack is deprecated but still honoured by the SDK
		return nil, stderrors.New("safeblob: the minio-go adapter cannot honour accelerate, dualstack or ARN-region addressing; use the aws-sdk-go-v2 adapter")
	}
	var rt http.RoundTripper
	switch hc := o.HTTPClient.(type) {
	case nil:
	case *http.Client:
		rt = hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
	default:
		// The client's own HTTP client (the SDK's BuildableClient, a caller's wrapper) sends
		// safeput's requests too, so its transport, proxy and instrumentation see them.
		rt = roundTripFunc(hc.Do)
	}
	st, err := miniogo.New(miniogo.Config{
		Endpoint:    endpoint,
		Region:      o.Region,
		Credentials: credentials.New(awsProvider{p: o.Credentials}),
		PathStyle:   o.UsePathStyle,
		Transport:   rt,
	})
	if err != nil {
		return nil, fmt.Errorf("safeblob: %w", err)
	}
	return st, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// awsProvider hands the client's credentials to minio-go. It reports them expired on every call
// so minio-go asks again each time: the SDK's provider (usually an aws.CredentialsCache) caches and
// renews them.
type awsProvider struct{ p aws.CredentialsProvider }

func (a awsProvider) RetrieveWithCredContext(*credentials.CredContext) (credentials.Value, error) {
	return a.Retrieve()
}

func (a awsProvider) Retrieve() (credentials.Value, error) {
	c, err := a.p.Retrieve(context.Background())
	if err != nil {
		return credentials.Value{}, err
	}
	return credentials.Value{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey,
		SessionToken: c.SessionToken, SignerType: credentials.SignatureV4}, nil
}

func (awsProvider) IsExpired() bool { return true }

// --- the driver.Bucket ------------------------------------------------------------------------

func (b *bucket) Close() error { return b.reads.Close() }

// ErrorCode maps safeput's kinds for writes; the errors of delegated calls carry s3blob's code.
func (b *bucket) ErrorCode(err error) gcerrors.ErrorCode {
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		return codeOf(e)
	}
	if c := gcerrors.Code(err); c != gcerrors.Unknown {
		return c
	}
	var r *refusal
	if stderrors.As(err, &r) {
		return r.code
	}
	switch {
	case stderrors.Is(err, context.Canceled):
		return gcerrors.Canceled
	case stderrors.Is(err, context.DeadlineExceeded):
		return gcerrors.DeadlineExceeded
	}
	return gcerrors.Unknown
}

func codeOf(e *sperrors.Error) gcerrors.ErrorCode {
	switch e.Kind {
	case sperrors.Canceled:
		if stderrors.Is(e, context.DeadlineExceeded) {
			return gcerrors.DeadlineExceeded
		}
		return gcerrors.Canceled
	case sperrors.Precondition:
		return gcerrors.FailedPrecondition
	case sperrors.Throttled:
		return gcerrors.ResourceExhausted
	case sperrors.Permanent:
		switch {
		case e.StatusCode == http.StatusForbidden || e.StatusCode == http.StatusUnauthorized:
			return gcerrors.PermissionDenied
		case e.StatusCode == http.StatusNotFound || e.Code == "NoSuchBucket":
			return gcerrors.NotFound
		case e.StatusCode == 0 || e.StatusCode == http.StatusBadRequest:
			// Refused before sending (a bad key, a bad option) or by the store as a bad request.
			return gcerrors.InvalidArgument
		}
		return gcerrors.Unknown
	case sperrors.Compatibility:
		// The store refuses this layout or header: the caller must change the profile.
		return gcerrors.Unimplemented
	case sperrors.Integrity, sperrors.Transient, sperrors.Internal:
		// The bytes did not land as sent, or the store kept failing past the retry budget: a
		// failure of the service (or of safeput), not of the caller's request.
		return gcerrors.Internal
	}
	return gcerrors.Unknown
}

// ErrorAs reaches *errors.Error for writes and s3blob's error types for the rest.
func (b *bucket) ErrorAs(err error, i any) bool { return stderrors.As(err, i) }

// As exposes the *s3.Client and the *writer.Uploader.
func (b *bucket) As(i any) bool {
	switch p := i.(type) {
	case **s3.Client:
		*p = b.client
		return true
	case **writer.Uploader:
		*p = b.up
		return true
	}
	return false
}

func (b *bucket) Attributes(ctx context.Context, key string) (*driver.Attributes, error) {
	a, err := b.reads.Attributes(ctx, key)
	if err != nil {
		return nil, err
	}
	return &driver.Attributes{
		CacheControl: a.CacheControl, ContentDisposition: a.ContentDisposition,
		ContentEncoding: a.ContentEncoding, ContentLanguage: a.ContentLanguage,
		ContentType: a.ContentType, Metadata: a.Metadata, CreateTime: a.CreateTime,
		ModTime: a.ModTime, Size: a.Size, MD5: a.MD5, ETag: a.ETag, AsFunc: a.As,
	}, nil
}

func (b *bucket) ListPaged(ctx context.Context, opts *driver.ListOptions) (*driver.ListPage, error) {
	if opts == nil {
		opts = &driver.ListOptions{}
	}
	token := opts.PageToken
	if len(token) == 0 {
		token = blob.FirstPageToken
	}
	size := opts.PageSize
	if size <= 0 {
		size = 1000 // s3blob's default page
	}
	objs, next, err := b.reads.ListPage(ctx, token, size, &blob.ListOptions{
		Prefix: opts.Prefix, Delimiter: opts.Delimiter, BeforeList: opts.BeforeList})
	if err != nil {
		return nil, err
	}
	if len(opts.PageToken) > 0 && bytes.Equal(next, opts.PageToken) {
		// MinIO does this for a delimiter other than "/": a caller paging on would never end.
		return nil, fmt.Errorf("safeblob: the store answered page token %q with the same token: it cannot page this listing (prefix %q, delimiter %q)", next, opts.Prefix, opts.Delimiter)
	}
	page := &driver.ListPage{NextPageToken: next, Objects: make([]*driver.ListObject, len(objs))}
	for i, o := range objs {
		page.Objects[i] = &driver.ListObject{Key: o.Key, ModTime: o.ModTime, Size: o.Size, MD5: o.MD5, IsDir: o.IsDir, AsFunc: o.As}
	}
	return page, nil
}

func (b *bucket) NewRangeReader(ctx context.Context, key string, offset, length int64, opts *driver.ReaderOptions) (driver.Reader, error) {
	if opts == nil {
		opts = &driver.ReaderOptions{}
	}
	r, err := b.reads.NewRangeReader(ctx, key, offset, length, &blob.ReaderOptions{BeforeRead: opts.BeforeRead})
	if err != nil {
		return nil, err
	}
	return reader{r}, nil
}

type reader struct{ *blob.Reader }

func (r reader) Attributes() *driver.ReaderAttributes {
	return &driver.ReaderAttributes{ContentType: r.ContentType(), ModTime: r.ModTime(), Size: r.Size()}
}

func (b *bucket) Copy(ctx context.Context, dstKey, srcKey string, opts *driver.CopyOptions) error {
	if opts == nil {
		opts = &driver.CopyOptions{}
	}
	return b.reads.Copy(ctx, dstKey, srcKey, &blob.CopyOptions{BeforeCopy: opts.BeforeCopy})
}

func (b *bucket) Delete(ctx context.Context, key string, opts *driver.DeleteOptions) error {
	if opts == nil {
		opts = &driver.DeleteOptions{}
	}
	return b.reads.DeleteWithOptions(ctx, key, &blob.DeleteOptions{BeforeDelete: opts.BeforeDelete})
}

func (b *bucket) SignedURL(ctx context.Context, key string, opts *driver.SignedURLOptions) (string, error) {
	if opts == nil {
		opts = &driver.SignedURLOptions{}
	}
	return b.reads.SignedURL(ctx, key, &blob.SignedURLOptions{Expiry: opts.Expiry, Method: opts.Method,
		ContentType: opts.ContentType, EnforceAbsentContentType: opts.EnforceAbsentContentType, BeforeSign: opts.BeforeSign})
}

// --- writes -----------------------------------------------------------------------------------

// refusal is a write refused before anything was committed, with its gcerrors code.
type refusal struct {
	code gcerrors.ErrorCode
	msg  string
}

func (r *refusal) Error() string { return "safeblob: " + r.msg }

// NewTypedWriter returns a writer that sends nothing committed until Close; a write that fails
// or whose context ends leaves no object and no incomplete upload.
func (b *bucket) NewTypedWriter(ctx context.Context, key, contentType string, opts *driver.WriterOptions) (driver.Writer, error) {
	if key == "" {
		return nil, &refusal{code: gcerrors.InvalidArgument, msg: "an empty key"}
	}
	if opts == nil {
		// blob.Bucket always passes options; a caller of the driver itself may not.
		opts = &driver.WriterOptions{}
	}
	// Each write states its own overwrite rule, content type and metadata, overriding whatever
	// the Uploader's options say, as s3blob's writes do.
	wopts := []func(*writer.Options){
		func(o *writer.Options) {
			o.CreateOnly = opts.IfNotExist
			o.ContentType = contentType
			o.Metadata = escapeMetadata(opts.Metadata)
			o.Headers = store.Headers{CacheControl: opts.CacheControl, ContentDisposition: opts.ContentDisposition,
				ContentEncoding: opts.ContentEncoding, ContentLanguage: opts.ContentLanguage}
		},
	}
	if opts.BufferSize > 0 {
		wopts = append(wopts, func(o *writer.Options) { o.PartSize = int64(opts.BufferSize) })
	}
	if opts.MaxConcurrency > 0 {
		wopts = append(wopts, func(o *writer.Options) { o.Concurrency = opts.MaxConcurrency })
	}
	if opts.BeforeWrite != nil {
		// As s3blob's hooks get *[]func(*s3.Options): the hook may append to the write's options,
		// and what it appends comes last, so it wins.
		if err := opts.BeforeWrite(func(i any) bool {
			p, ok := i.(**[]func(*writer.Options))
			if ok {
				*p = &wopts
			}
			return ok
		}); err != nil {
			return nil, err
		}
	}
	w := &blobWriter{ctx: ctx, b: b, key: escapeKey(key), opts: wopts, createOnly: opts.IfNotExist}
	if len(opts.ContentMD5) > 0 {
		w.wantMD5, w.md5 = opts.ContentMD5, md5.New() //nolint:gosec // the caller's MD5
	}
	return w, nil
}

// blobWriter is one write: a safeput Writer fed by Write, or the Uploader's Upload of the reader
// blob.Bucket.Upload hands over (which can re-send a replayable source after a failed check).
type blobWriter struct {
	ctx  context.Context
	b    *bucket
	key  string
	opts []func(*writer.Options)

	w          *writer.Writer // created on the first Write
	uploaded   bool
	createOnly bool
	err        error // Upload's, returned again by Close

	wantMD5 []byte
	md5     hash.Hash
}

func (w *blobWriter) Write(p []byte) (int, error) {
	if w.w == nil {
		ww, err := w.b.up.New(w.ctx, w.b.name, w.key, w.opts...)
		if err != nil {
			return 0, err
		}
		w.w = ww
	}
	if w.md5 != nil {
		w.md5.Write(p)
	}
	return w.w.Write(p)
}

// Upload writes everything r yields; blob.Bucket calls it instead of Write, never with both.
func (w *blobWriter) Upload(r io.Reader) error {
	w.uploaded = true
	if w.md5 != nil {
		// The MD5 must be checked before commit: stream through Write and Close.
		if _, err := io.Copy(writerOnly{w}, r); err != nil {
			w.err = err
			return err
		}
		return nil
	}
	res, err := w.b.up.Upload(w.ctx, w.b.name, w.key, r, w.opts...)
	w.b.logResult(w.key, res, err)
	w.err = w.settle(res, err)
	return w.err
}

type writerOnly struct{ io.Writer }

// Close commits and verifies the object, or, when the ContentMD5 given does not match what was
// written, aborts it: nothing is committed.
func (w *blobWriter) Close() error {
	if w.uploaded && w.w == nil {
		return w.err
	}
	if w.w == nil {
		// Nothing written: an empty object, as s3blob writes.
		ww, err := w.b.up.New(w.ctx, w.b.name, w.key, w.opts...)
		if err != nil {
			return err
		}
		w.w = ww
	}
	if w.err != nil {
		_ = w.w.Abort(context.WithoutCancel(w.ctx))
		return w.err
	}
	if w.md5 != nil {
		if got := w.md5.Sum(nil); !bytes.Equal(got, w.wantMD5) {
			if err := w.w.Abort(context.WithoutCancel(w.ctx)); err != nil {
				return err
			}
			return &refusal{code: gcerrors.FailedPrecondition,
				msg: fmt.Sprintf("WriterOptions.ContentMD5 %X does not match the %X written; nothing was committed", w.wantMD5, got)}
		}
	}
	err := w.w.Close()
	w.b.logResult(w.key, w.w.Result(), err)
	return w.settle(w.w.Result(), err)
}

// settle turns a create-only write that found this exact object already at the key into the
// FailedPrecondition IfNotExist promises, unless an attempt of its own commit may have put it
// there (Result.CommitAnswerLost: a lost answer, then the 412 of a re-send): then safeput's
// idempotent success stands. A failure the store answered (a 503, say) committed nothing.
func (w *blobWriter) settle(res *writer.Result, err error) error {
	if err != nil || !w.createOnly || res == nil || !res.AlreadyExisted || res.CommitAnswerLost {
		return err
	}
	return &sperrors.Error{Kind: sperrors.Precondition, Op: "Verify", Bucket: w.b.name, Key: w.key,
		StatusCode: http.StatusPreconditionFailed, Code: "PreconditionFailed",
		Message: "IfNotExist: an object with these very bytes was already at the key; nothing was written"}
}

// logResult logs what a blob.Writer's caller would otherwise never see.
func (b *bucket) logResult(key string, res *writer.Result, err error) {
	l := b.logger.With(zap.String("bucket", b.name), zap.String("key", key))
	if res != nil {
		for _, id := range res.LeftBehind {
			l.Warn("incomplete multipart upload left behind; a sweep must abort it", zap.String("upload_id", id))
		}
		if res.MaybeLeftBehind {
			l.Warn("an incomplete multipart upload may be left behind")
		}
		for _, u := range res.Unproven {
			l.Warn("write accepted without proof", zap.String("missing", u))
		}
	}
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		if e.AbortFailed {
			l.Warn("failed write could not be aborted; a sweep must abort it", zap.String("upload_id", e.UploadID), zap.Error(err))
		}
		if e.ObjectLeft {
			l.Warn("failed write left an unproven object at the key", zap.Error(err))
		}
	}
}
