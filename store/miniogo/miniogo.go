// Package miniogo implements store.Store over minio-go v7's low-level Core client.
//
// Each method sends exactly one HTTP request (ListParts and ListMultipartUploads one per page):
// minio-go's retryer is limited to a single attempt, and its automatic checksums, trailers and
// aws-chunked streaming signatures are never used. What is sent per upload:
//
//   - the x-amz-checksum-<alg> header the input asks for, as a plain header with the caller's
//     precomputed value, and Content-MD5 when set;
//   - X-Amz-Content-Sha256: UNSIGNED-PAYLOAD when a checksum or Content-MD5 already protects the
//     body (hashing it again for the signature would only cost CPU);
//   - otherwise the body's real SHA-256, computed by reading the body once before sending (then
//     seeking back to where it started), so an unprotected body is still covered by the signature.
//
// Errors follow the store contract: answers become *store.ResponseError built from the raw
// response (status, S3 code, message, request id, Retry-After), failures without an answer are
// the transport error wrapped with the operation name.
package miniogo

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/internal/catrust"
	"github.com/safeput/safeput/internal/partlist"
	"github.com/safeput/safeput/internal/secrets"
	"github.com/safeput/safeput/internal/warmdial"
	"github.com/safeput/safeput/store"
)

// Config says how to reach an S3-compatible endpoint.
type Config struct {
	// Endpoint is the base URL, "http://host:port" or "https://host"; no path.
	Endpoint string
	// Region signs requests; "" means us-east-1. A region is always set so minio-go never sends
	// an extra GetBucketLocation request before an operation.
	Region string
	// AccessKey and SecretKey are the static credentials (both empty: anonymous requests).
	AccessKey string
	SecretKey string
	// SessionToken is sent as X-Amz-Security-Token when set (temporary credentials).
	SessionToken string
	// Credentials, when set, signs requests instead of the keys above (which must then be empty):
	// for keys that expire and are renewed (credentials.New around a Provider, such as
	// credentials.STSAssumeRole).
	Credentials *credentials.Credentials
	// PathStyle forces path-style bucket addressing (http://host/bucket/key). When false,
	// minio-go chooses: virtual-hosted style for AWS and GCS endpoints, path style elsewhere.
	PathStyle bool
	// Transport replaces the HTTP transport New builds. It is used as is (wrapped to record the
	// raw response for error reporting), so the caller sizes its connection pool.
	Transport http.RoundTripper
	// CABundle is PEM certificates of the CAs that sign the endpoint's certificate (a private
	// CA), trusted in addition to the system roots, for this store only (as AWS_CA_BUNDLE is for
	// the AWS SDKs). A bundle with no certificate is an error. It cannot be combined with
	// Transport or InsecureSkipVerify.
	CABundle []byte
	// InsecureSkipVerify disables TLS certificate verification on the transport New builds. Only
	// for test endpoints with self-signed certificates; it cannot be combined with Transport.
	InsecureSkipVerify bool
	// Customize, when set, is called once on the client New builds, before its first request:
	// for minio-go settings this Config does not name (request tracing, dual-stack endpoints).
	// It must not turn minio-go's retries or trailing checksums back on.
	Customize func(*minio.Core)
}

// coreStore is the store.Store New and NewFromCore return, over a minio-go Core client; it is
// safe for concurrent use. It stays unexported so that its methods are the store.Store contract
// and the store package's optional interfaces (Endpointer, InsecureTLS, Warmer), nothing more to keep.
type coreStore struct {
	core *minio.Core
	warm *warmdial.Dialer // the built transport's dialer; nil with the caller's transport or Core
	// warmURL is the endpoint Warm's connections go to (the client copies it on every look).
	warmURL *url.URL
	lookup  minio.BucketLookupType
	// recording is true when requests go through our recordingTransport (New), so raw
	// response headers and error bodies are available; NewFromCore cannot install it.
	recording bool
	insecure  bool // Config.InsecureSkipVerify
}

// The optional capabilities the writer looks for (store/optional.go).
var (
	_ store.Store       = (*coreStore)(nil)
	_ store.Endpointer  = (*coreStore)(nil)
	_ store.InsecureTLS = (*coreStore)(nil)
	_ store.Warmer      = (*coreStore)(nil)
)

// Connection pool sizing: a flush node may run 64 uploads at once, each with several parts in
// flight, all to one host.
const (
	maxIdleConns        = 256
	maxIdleConnsPerHost = 128
)

// New builds a store from cfg, with minio-go's retries off and a transport sized for many
// concurrent uploads to one host.
func New(cfg Config) (store.Store, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("miniogo: endpoint %q: %w", cfg.Endpoint, err)
	}
	var secure bool
	switch u.Scheme {
	case "http":
	case "https":
		secure = true
	default:
		return nil, fmt.Errorf("miniogo: endpoint %q: scheme must be http or https", cfg.Endpoint)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("miniogo: endpoint %q: no host", cfg.Endpoint)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		// minio-go addresses buckets from the host root; a path prefix would be silently dropped.
		return nil, fmt.Errorf("miniogo: endpoint %q: must not have a path, query or user info", cfg.Endpoint)
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, errors.New("miniogo: access key and secret key must be set together")
	}
	if cfg.Credentials != nil && (cfg.AccessKey != "" || cfg.SessionToken != "") {
		return nil, errors.New("miniogo: set Credentials or the static keys (AccessKey, SecretKey, SessionToken), not both")
	}
	creds := cfg.Credentials
	if creds == nil {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, cfg.SessionToken)
		secrets.Register(cfg.SecretKey, cfg.SessionToken)
	}
	if cfg.InsecureSkipVerify && cfg.Transport != nil {
		return nil, errors.New("miniogo: InsecureSkipVerify applies to the built-in transport and cannot be combined with Transport")
	}
	if len(cfg.CABundle) > 0 && cfg.Transport != nil {
		return nil, errors.New("miniogo: CABundle applies to the built-in transport; set RootCAs in your Transport's TLS config instead")
	}
	tlsConf, err := catrust.Config(cfg.CABundle, cfg.InsecureSkipVerify)
	if err != nil {
		return nil, fmt.Errorf("miniogo: %w", err)
	}
	base := cfg.Transport
	var warm *warmdial.Dialer
	if base == nil {
		base, warm = newTransport(secure, tlsConf)
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	core, err := minio.NewCore(u.Host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Transport:    &recordingTransport{base: store.ProgressTransport(base), creds: creds, region: region, renewed: cfg.Credentials != nil},
		Region:       region,
		BucketLookup: lookup,
		// "Set to 1 to disable retries" (minio-go Options doc): one call is one attempt. minio-go
		// still waits its first backoff step (0-200 ms, minio.DefaultRetryUnit with jitter) after
		// a retryable failure before returning it; that global is left alone.
		MaxRetries: 1,
		// Without trailing-header support minio-go never adds its automatic CRC32C trailer.
		TrailingHeaders: false,
	})
	if err != nil {
		return nil, fmt.Errorf("miniogo: %w", err)
	}
	if cfg.Customize != nil {
		cfg.Customize(core)
	}
	return &coreStore{core: core, recording: true, insecure: cfg.InsecureSkipVerify, warm: warm, warmURL: core.EndpointURL(), lookup: lookup}, nil
}

// NewFromCore wraps an existing Core. The caller must have built it with MaxRetries: 1, a
// Region and TrailingHeaders false, or the store contract (one attempt, one request, only the
// asked-for checksums) does not hold. Error reports are thinner than with New: minio-go's
// ErrorResponse supplies code and message, and RetryAfter is always 0, because the raw response
// is not reachable through a Core built elsewhere; the Core's keys are not known to
// errors.Redact (New registers its keys), so only the forms it recognises are redacted.
func NewFromCore(c *minio.Core) (store.Store, error) {
	if c == nil || c.Client == nil {
		return nil, errors.New("miniogo: NewFromCore: nil minio.Core")
	}
	return &coreStore{core: c}, nil
}

func newTransport(secure bool, tlsConf *tls.Config) (*http.Transport, *warmdial.Dialer) {
	warm := warmdial.New((&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		// A request body costs no copy buffer per request.
		DialContext:           bufpool.Dialer(warm.DialContext),
		MaxIdleConns:          maxIdleConns,
		MaxIdleConnsPerHost:   maxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// No ResponseHeaderTimeout: a large CompleteMultipartUpload can legitimately take
		// minutes; per-attempt deadlines come from the caller's context.
		//
		// Objects stored with Content-Encoding: gzip must come back byte-identical.
		DisableCompression: true,
	}
	if secure {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if tlsConf != nil {
			tr.TLSClientConfig = tlsConf
		}
	}
	return tr, warm
}

// Warm opens, ahead of a write's requests to bucket, up to n connections for them, so their
// handshakes overlap what the writer does first (internal/warmdial). It does nothing with the
// caller's transport or Core, or when a proxy carries the requests.
func (s *coreStore) Warm(bucket string, n int) {
	if s.warm == nil {
		return
	}
	u := s.warmURL
	virtual := s.lookup == minio.BucketLookupDNS ||
		(s.lookup == minio.BucketLookupAuto && s3utils.IsVirtualHostSupported(*u, bucket))
	warmdial.Warm(s.warm, u, bucket, virtual, n)
}

// checksumHeader is the x-amz-checksum-<alg> header name for a.
func checksumHeader(a store.ChecksumAlgorithm) string {
	return "x-amz-checksum-" + strings.ToLower(string(a))
}

var allAlgorithms = []store.ChecksumAlgorithm{
	store.ChecksumCRC32, store.ChecksumCRC32C, store.ChecksumCRC64NVME, store.ChecksumSHA1, store.ChecksumSHA256,
}

// checksumsFromHeader reads every x-amz-checksum-* value and x-amz-checksum-type from h.
func checksumsFromHeader(h http.Header) store.Checksums {
	var c store.Checksums
	for _, a := range allAlgorithms {
		c.Set(a, h.Get(checksumHeader(a)))
	}
	c.Type = store.ChecksumType(h.Get("x-amz-checksum-type"))
	return c
}

// metadataFromHeader returns the x-amz-meta-* headers with lower-case names (S3 metadata names
// are case-insensitive; minio-go's UserMetadata would hand them back canonicalized, "Origin").
func metadataFromHeader(h http.Header) map[string]string {
	m := map[string]string{}
	for k, v := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-meta-") && len(v) > 0 {
			m[strings.TrimPrefix(lk, "x-amz-meta-")] = v[0]
		}
	}
	return m
}

// checksumsFromUpload maps minio-go's UploadInfo checksum fields.
func checksumsFromUpload(i minio.UploadInfo) store.Checksums {
	return store.Checksums{
		CRC32:     i.ChecksumCRC32,
		CRC32C:    i.ChecksumCRC32C,
		CRC64NVME: i.ChecksumCRC64NVME,
		SHA1:      i.ChecksumSHA1,
		SHA256:    i.ChecksumSHA256,
		Type:      store.ChecksumType(i.ChecksumMode),
	}
}

func checksumsFromPart(p minio.ObjectPart) store.Checksums {
	return store.Checksums{
		CRC32:     p.ChecksumCRC32,
		CRC32C:    p.ChecksumCRC32C,
		CRC64NVME: p.ChecksumCRC64NVME,
		SHA1:      p.ChecksumSHA1,
		SHA256:    p.ChecksumSHA256,
	}
}

// trimETag strips the quotes S3 puts around ETags (and minio-go does not always remove), and
// surrounding spaces, as the aws adapter does (internal/partlist.ETag serves both).
func trimETag(s string) string { return partlist.ETag(s) }

// userMetadata turns the caller's metadata into x-amz-meta-* headers. minio-go sends keys that
// already start with x-amz- unchanged, which is also how the checksum headers get through.
func userMetadata(meta map[string]string, extra map[string]string) map[string]string {
	m := make(map[string]string, len(meta)+len(extra))
	for k, v := range meta {
		m["x-amz-meta-"+k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// body hides the caller's ReadSeeker from minio-go: as a Seeker it would be rewound to offset 0
// (not to the caller's position), and as a Closer it would be closed after the request.
func body(r io.Reader, n int64) io.Reader { return &limitedBody{io.LimitedReader{R: r, N: n}} }

// limitedBody is an io.LimitedReader with a WriteTo (bufpool.WriteN), so that net/http sends a
// part buffer's bytes without copying them (bufpool.Dialer); minio-go passes the body's WriteTo
// through. Like io.LimitedReader it is no io.Seeker: minio-go retries only seekable bodies, and
// safeput does its own retrying.
type limitedBody struct{ io.LimitedReader }

func (b *limitedBody) WriteTo(dst io.Writer) (int64, error) {
	k, err := bufpool.WriteN(dst, b.R, b.N)
	b.N -= k
	return k, err
}

// payloadSHA256 hashes the next n bytes of r and seeks back to where they started.
func payloadSHA256(r io.ReadSeeker, n int64) (string, error) {
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return "", fmt.Errorf("body position: %w", err)
	}
	h := sha256.New()
	// A pooled buffer: io.CopyN would allocate 32 KiB for every part.
	got, err := bufpool.Copy32K.Copy(h, io.LimitReader(r, n))
	if err == nil && got < n {
		err = io.EOF
	}
	if _, serr := r.Seek(start, io.SeekStart); serr != nil && err == nil {
		err = fmt.Errorf("seek body back: %w", serr)
	}
	if errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%w: body has %d bytes, content length is %d", store.ErrInvalidInput, got, n)
	}
	if err != nil {
		return "", fmt.Errorf("read body: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// PutObject uploads in.Body in one PUT.
func (s *coreStore) PutObject(ctx context.Context, in *store.PutObjectInput) (*store.PutObjectOutput, error) {
	const op = "PutObject"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	extra := map[string]string{}
	if !in.Checksum.IsZero() {
		extra[checksumHeader(in.Checksum.Algorithm)] = in.Checksum.Value
	}
	opts := minio.PutObjectOptions{
		ContentType:  in.ContentType,
		UserMetadata: userMetadata(in.Metadata, extra),
		// Never the streaming (aws-chunked) signature; see the package doc for the payload hash.
		DisableContentSha256: true,
		ServerSideEncryption: newSSE(in.Encryption),

		CacheControl:       in.Headers.CacheControl,
		ContentDisposition: in.Headers.ContentDisposition,
		ContentEncoding:    in.Headers.ContentEncoding,
		ContentLanguage:    in.Headers.ContentLanguage,
	}
	if in.IfNoneMatch {
		opts.SetMatchETagExcept("*")
	}
	var sha string
	if in.Checksum.IsZero() && in.ContentMD5 == "" {
		var err error
		if sha, err = payloadSHA256(in.Body, in.ContentLength); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", op, in.Bucket, in.Key, err)
		}
	}
	ctx, ex := s.track(ctx)
	info, err := s.core.PutObject(ctx, in.Bucket, in.Key, body(in.Body, in.ContentLength), in.ContentLength, in.ContentMD5, sha, opts)
	if err != nil {
		return nil, s.fail(op, ex, err)
	}
	if err := ex.embedded(op); err != nil {
		return nil, err
	}
	rid := ex.requestID()
	// No ETag is not a failure by itself: the writer's HEAD decides what landed.
	return &store.PutObjectOutput{
		ETag:      trimETag(info.ETag),
		VersionID: info.VersionID,
		Checksums: checksumsFromUpload(info),
		RequestID: rid,
	}, nil
}

// CreateMultipartUpload starts a multipart upload.
func (s *coreStore) CreateMultipartUpload(ctx context.Context, in *store.CreateMultipartUploadInput) (*store.CreateMultipartUploadOutput, error) {
	const op = "CreateMultipartUpload"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	extra := map[string]string{}
	if in.ChecksumAlgorithm != store.ChecksumNone {
		extra["x-amz-checksum-algorithm"] = string(in.ChecksumAlgorithm)
	}
	if in.ChecksumType != store.ChecksumTypeNone {
		extra["x-amz-checksum-type"] = string(in.ChecksumType)
	}
	opts := minio.PutObjectOptions{ContentType: in.ContentType, UserMetadata: userMetadata(in.Metadata, extra), ServerSideEncryption: newSSE(in.Encryption),
		CacheControl: in.Headers.CacheControl, ContentDisposition: in.Headers.ContentDisposition,
		ContentEncoding: in.Headers.ContentEncoding, ContentLanguage: in.Headers.ContentLanguage}
	ctx, ex := s.track(ctx)
	id, err := s.core.NewMultipartUpload(ctx, in.Bucket, in.Key, opts)
	if err != nil {
		return nil, s.fail(op, ex, err)
	}
	if err := ex.embedded(op); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, ex.nonCompliant(op, errors.New("no UploadId in the answer"))
	}
	return &store.CreateMultipartUploadOutput{UploadID: id, RequestID: ex.requestID()}, nil
}

// UploadPart uploads one part.
func (s *coreStore) UploadPart(ctx context.Context, in *store.UploadPartInput) (*store.UploadPartOutput, error) {
	const op = "UploadPart"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	opts := minio.PutObjectPartOptions{Md5Base64: in.ContentMD5, DisableContentSha256: true, SSE: customerKey(in.SSECustomerKey)}
	if !in.Checksum.IsZero() {
		opts.CustomHeader = http.Header{}
		opts.CustomHeader.Set(checksumHeader(in.Checksum.Algorithm), in.Checksum.Value)
	} else if in.ContentMD5 == "" {
		sha, err := payloadSHA256(in.Body, in.ContentLength)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s part %d: %w", op, in.Bucket, in.Key, in.PartNumber, err)
		}
		opts.Sha256Hex = sha
	}
	ctx, ex := s.track(ctx)
	part, err := s.core.PutObjectPart(ctx, in.Bucket, in.Key, in.UploadID, int(in.PartNumber), body(in.Body, in.ContentLength), in.ContentLength, opts)
	if err != nil {
		return nil, s.fail(op, ex, err)
	}
	if err := ex.embedded(op); err != nil {
		return nil, err
	}
	etag := trimETag(part.ETag)
	if etag == "" {
		return nil, ex.nonCompliant(op, fmt.Errorf("no ETag in the answer for part %d", in.PartNumber))
	}
	return &store.UploadPartOutput{ETag: etag, Checksums: checksumsFromPart(part), RequestID: ex.requestID()}, nil
}

// ListParts lists every part of an upload, one request per page, with the listing rules of
// internal/partlist (the same in the aws adapter): every entry kept, duplicates included,
// sorted stably by part number.
func (s *coreStore) ListParts(ctx context.Context, in *store.ListPartsInput) (*store.ListPartsOutput, error) {
	const op = "ListParts"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	out := &store.ListPartsOutput{}
	marker := 0
	for page := 0; ; page++ {
		pctx, ex := s.track(ctx)
		res, err := s.core.ListObjectParts(pctx, in.Bucket, in.Key, in.UploadID, marker, int(in.PageSize))
		if err != nil {
			return nil, s.fail(op, ex, err)
		}
		if err := ex.embedded(op); err != nil {
			return nil, err
		}
		out.RequestID = ex.requestID()
		for _, p := range res.ObjectParts {
			etag := trimETag(p.ETag)
			// minio-go reads a missing <PartNumber> as 0, which Entry refuses as out of range.
			if msg := partlist.Entry(int64(p.PartNumber), true, etag); msg != "" {
				return nil, ex.nonCompliant(op, errors.New(msg))
			}
			cs := checksumsFromPart(p)
			cs.Type = store.ChecksumType(res.ChecksumType)
			out.Parts = append(out.Parts, store.Part{
				PartNumber:   int32(p.PartNumber), //nolint:gosec // checked against 1..MaxPartNumber by Entry
				Size:         p.Size,
				ETag:         etag,
				Checksums:    cs,
				LastModified: p.LastModified,
			})
		}
		if !res.IsTruncated {
			break
		}
		// A truncated page must move the marker forward, or we would loop forever.
		if msg := partlist.NextMarker(int64(res.NextPartNumberMarker), int64(marker), true, page); msg != "" {
			return nil, ex.nonCompliant(op, errors.New(msg))
		}
		marker = res.NextPartNumberMarker
	}
	partlist.Sort(out.Parts)
	return out, nil
}

// CompleteMultipartUpload commits an upload. A 200 answer carrying an <Error> is an error.
func (s *coreStore) CompleteMultipartUpload(ctx context.Context, in *store.CompleteMultipartUploadInput) (*store.CompleteMultipartUploadOutput, error) {
	const op = "CompleteMultipartUpload"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	parts := make([]minio.CompletePart, len(in.Parts))
	for i, p := range in.Parts {
		// Quoted, as S3 lists them; the caller may pass either form (store.CompletedPart).
		cp := minio.CompletePart{PartNumber: int(p.PartNumber), ETag: `"` + trimETag(p.ETag) + `"`}
		switch p.Checksum.Algorithm {
		case store.ChecksumCRC32:
			cp.ChecksumCRC32 = p.Checksum.Value
		case store.ChecksumCRC32C:
			cp.ChecksumCRC32C = p.Checksum.Value
		case store.ChecksumCRC64NVME:
			cp.ChecksumCRC64NVME = p.Checksum.Value
		case store.ChecksumSHA1:
			cp.ChecksumSHA1 = p.Checksum.Value
		case store.ChecksumSHA256:
			cp.ChecksumSHA256 = p.Checksum.Value
		}
		parts[i] = cp
	}
	// These travel as headers through UserMetadata: Core.CompleteMultipartUpload sends
	// opts.Header() as is, and every key here starts with x-amz-.
	extra := map[string]string{}
	if !in.FullObjectChecksum.IsZero() {
		extra[checksumHeader(in.FullObjectChecksum.Algorithm)] = in.FullObjectChecksum.Value
	}
	if in.ChecksumType != store.ChecksumTypeNone {
		extra["x-amz-checksum-type"] = string(in.ChecksumType)
	}
	opts := minio.PutObjectOptions{ContentType: "application/xml", UserMetadata: extra, ServerSideEncryption: customerKey(in.SSECustomerKey)}
	if in.IfNoneMatch {
		opts.SetMatchETagExcept("*")
	}
	ctx, ex := s.track(ctx)
	if in.ObjectSize > 0 && s.recording {
		// minio-go would send this as x-amz-meta-x-amz-mp-object-size (object metadata), so the
		// recording transport adds it. A NewFromCore store cannot, and skips this optional check.
		ex.extra = http.Header{"X-Amz-Mp-Object-Size": {strconv.FormatInt(in.ObjectSize, 10)}}
	}
	info, err := s.core.CompleteMultipartUpload(ctx, in.Bucket, in.Key, in.UploadID, parts, opts)
	if err != nil && ex.emptySuccess() {
		// A 200 with no document at all: an answer without an ETag, as the aws adapter reads
		// it; the writer's HEAD decides what landed.
		return &store.CompleteMultipartUploadOutput{VersionID: ex.snapshot().header.Get("x-amz-version-id"), RequestID: ex.requestID()}, nil
	}
	if err != nil {
		return nil, s.fail(op, ex, err)
	}
	// An empty ETag (Ceph RGW) is passed on: the writer's HEAD decides what landed.
	return &store.CompleteMultipartUploadOutput{
		ETag:      trimETag(info.ETag),
		VersionID: info.VersionID,
		Checksums: checksumsFromUpload(info),
		RequestID: ex.requestID(),
	}, nil
}

// AbortMultipartUpload discards an upload.
func (s *coreStore) AbortMultipartUpload(ctx context.Context, in *store.AbortMultipartUploadInput) error {
	const op = "AbortMultipartUpload"
	if err := store.Validate(in); err != nil {
		return err
	}
	ctx, ex := s.track(ctx)
	err := s.core.AbortMultipartUpload(ctx, in.Bucket, in.Key, in.UploadID)
	if err != nil && !ex.answered2xx() {
		return s.fail(op, ex, err)
	}
	if err := ex.embedded(op); err != nil {
		return err
	}
	// minio-go only accepts 204; any 2xx means the store did it.
	return nil
}

// HeadObject returns the object's metadata (and stored checksums with ChecksumMode).
func (s *coreStore) HeadObject(ctx context.Context, in *store.HeadObjectInput) (*store.HeadObjectOutput, error) {
	const op = "HeadObject"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	opts := minio.StatObjectOptions{Checksum: in.ChecksumMode}
	opts.ServerSideEncryption = customerKey(in.SSECustomerKey)
	ctx, ex := s.track(ctx)
	info, err := s.core.StatObject(ctx, in.Bucket, in.Key, opts)
	if err != nil {
		return nil, s.fail(op, ex, err)
	}
	if info.Size < 0 {
		return nil, ex.nonCompliant(op, errors.New("no Content-Length in the answer"))
	}
	return &store.HeadObjectOutput{
		Size:      info.Size,
		ETag:      trimETag(info.ETag),
		VersionID: info.VersionID,
		// The raw header: minio-go fills in application/octet-stream when there is none.
		ContentType:  info.Headers.Get("Content-Type"),
		Metadata:     metadataFromHeader(info.Headers),
		LastModified: info.LastModified,
		Checksums:    checksumsFromHeader(info.Headers),
		Encryption:   encryptionFromHeader(info.Headers),
		RequestID:    info.Headers.Get("x-amz-request-id"),
	}, nil
}

// GetObject opens the object or a range of it.
func (s *coreStore) GetObject(ctx context.Context, in *store.GetObjectInput) (*store.GetObjectOutput, error) {
	const op = "GetObject"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	opts := minio.GetObjectOptions{ServerSideEncryption: customerKey(in.SSECustomerKey)}
	ranged := in.Offset > 0 || in.Length > 0
	if ranged {
		end := int64(0) // "bytes=offset-": to the end
		if in.Length > 0 {
			end = in.Offset + in.Length - 1
		}
		if err := opts.SetRange(in.Offset, end); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", op, store.ErrInvalidInput, err)
		}
	}
	ctx, ex := s.track(ctx)
	ex.noSniff = true // the body is the object, read by the caller
	rc, info, h, err := s.core.GetObject(ctx, in.Bucket, in.Key, opts)
	if err != nil {
		return nil, s.fail(op, ex, err)
	}
	if info.Size < 0 {
		_ = rc.Close()
		return nil, ex.nonCompliant(op, errors.New("no Content-Length in the answer"))
	}
	if ranged && ex.snapshot().status == http.StatusOK {
		// The store ignored Range and sent the whole object: Body would not be what was asked.
		_ = rc.Close()
		return nil, ex.nonCompliant(op, fmt.Errorf("asked for bytes from %d (length %d), got the whole object (200, not 206)", in.Offset, in.Length))
	}
	return &store.GetObjectOutput{Body: rc, Size: info.Size, ETag: trimETag(info.ETag), RequestID: h.Get("x-amz-request-id")}, nil
}

// DeleteObject removes the object; a missing key is not an error.
func (s *coreStore) DeleteObject(ctx context.Context, in *store.DeleteObjectInput) error {
	const op = "DeleteObject"
	if err := store.Validate(in); err != nil {
		return err
	}
	ctx, ex := s.track(ctx)
	err := s.core.RemoveObject(ctx, in.Bucket, in.Key, minio.RemoveObjectOptions{})
	if err == nil || ex.answered2xx() {
		// minio-go only accepts 204; any 2xx means the store did it, unless it carried an error.
		return ex.embedded(op)
	}
	err = s.fail(op, ex, err)
	var re *store.ResponseError
	if errors.As(err, &re) && re.Code == "NoSuchKey" {
		// S3 answers 204 for a missing key; a store that says NoSuchKey means the same.
		return nil
	}
	return err
}

// ListMultipartUploads lists every incomplete upload under in.Prefix, one request per page.
func (s *coreStore) ListMultipartUploads(ctx context.Context, in *store.ListMultipartUploadsInput) (*store.ListMultipartUploadsOutput, error) {
	const op = "ListMultipartUploads"
	if err := store.Validate(in); err != nil {
		return nil, err
	}
	out := &store.ListMultipartUploadsOutput{}
	var keyMarker, idMarker string
	for {
		pctx, ex := s.track(ctx)
		res, err := s.core.ListMultipartUploads(pctx, in.Bucket, in.Prefix, keyMarker, idMarker, "", int(in.PageSize))
		if err != nil {
			return nil, s.fail(op, ex, err)
		}
		if err := ex.embedded(op); err != nil {
			return nil, err
		}
		if out.RequestID == "" {
			out.RequestID = ex.requestID()
		}
		for _, u := range res.Uploads {
			if u.UploadID == "" {
				return nil, ex.nonCompliant(op, fmt.Errorf("upload of %q listed without an UploadId", u.Key))
			}
			out.Uploads = append(out.Uploads, store.Upload{Key: u.Key, UploadID: u.UploadID, Initiated: u.Initiated})
		}
		if !res.IsTruncated {
			return out, nil
		}
		if res.NextKeyMarker == keyMarker && res.NextUploadIDMarker == idMarker {
			return nil, ex.nonCompliant(op, fmt.Errorf("truncated page without new markers (key %q, upload id %q)", keyMarker, idMarker))
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

// InsecureSkipVerify reports whether the store was built with certificate verification off. A
// writer.Uploader made on it logs a warning, once, so the choice shows in the logs.
func (s *coreStore) InsecureSkipVerify() bool { return s.insecure }

// Endpoint names the endpoint this store talks to (its base URL), e.g. for a journal's endpoint
// identity.
func (s *coreStore) Endpoint() string { return s.core.EndpointURL().String() }
