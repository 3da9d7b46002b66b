package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// Role says how an implementation's figures are used in the comparison.
type Role string

// Roles.
const (
	RoleSafeput Role = "safeput" // the subject
	RolePeer    Role = "peer"    // what a user would otherwise pick
	RoleCeiling Role = "ceiling" // one PUT of the whole body: the most this machine gives one object
)

// Signing says how peers sign request bodies.
//
// Unsigned (the default) sends UNSIGNED-PAYLOAD, as the SDKs do by default over TLS and as
// safeput does whenever a checksum header covers the body. The test server speaks plain HTTP,
// where both SDKs otherwise hash every body with SHA-256 for the signature: that cost would
// exist only because of the benchmark's endpoint, so by default peers do not pay it.
// SDKDefault keeps the SDKs' plain-HTTP behaviour, for anyone who wants that comparison.
type Signing string

// Signing modes.
const (
	SigningUnsigned   Signing = "unsigned"
	SigningSDKDefault Signing = "sdk-default"
)

// Params are the settings every implementation gets alike.
type Params struct {
	PartSize    int64
	Concurrency int
	Signing     Signing
	// CLI is the safeput binary the safeput-cli implementation runs ("" leaves it out).
	CLI string `json:",omitempty"`
	// CLICacheDir is the CLI's cache directory (XDG_CACHE_HOME) for one benchmark run, fresh for
	// each: its first CLI upload to a server learns the endpoint (whether it checks part
	// checksums) and the later ones start from what it kept there, as a user's later runs do.
	CLICacheDir string `json:",omitempty"`
	// CABundleFile is the PEM file of the private CA of a TLS run (-tls), which the CLI is given
	// with --ca-bundle as a user would; the library rows and the peers get the same CA in memory
	// (s3test.Server.CABundle).
	CABundleFile string `json:",omitempty"`
}

// Source is one upload's body. Kind is SourceStream (a struct{io.Reader}: no size, no Seek, no
// ReadAt) or SourceReaderAt (an *io.SectionReader: Read, ReadAt, Seek and Size).
type Source struct {
	Kind   string
	Reader io.Reader
	Size   int64
	Path   string // the file Reader reads (the CLI is given the path of a readerat source)
}

// Source kinds.
const (
	SourceStream   = "stream"
	SourceReaderAt = "readerat"
)

// Uploader uploads one object and returns a short note on what it did (parts, verification).
type Uploader func(ctx context.Context, key string, src Source) (string, error)

// Impl is one way of uploading, with the integrity settings it runs with, for the table.
type Impl struct {
	Name string
	Role Role
	// Defaults: safeput as a user runs it who names no profile and sets no flag (the library's
	// defaults, or the CLI's whole process); reported in a defaults table of its own.
	Defaults bool
	// NoChecksum: a peer that sends no checksum with its parts, so its rows are not at safeput's
	// integrity (equalIntegrityBullet leaves it out).
	NoChecksum bool
	Integrity  func(Params) string
	New        func(srv s3test.Server, bucket string, p Params) (Uploader, error)
}

// Impls returns every implementation in the order the report lists them.
func Impls() []Impl {
	return []Impl{
		{Name: "safeput/aws", Role: RoleSafeput, Integrity: safeputIntegrity, New: newSafeputAWS},
		{Name: "safeput/minio", Role: RoleSafeput, Integrity: safeputIntegrity, New: newSafeputMinio},
		{Name: "safeput-defaults/aws", Role: RoleSafeput, Defaults: true, Integrity: defaultsIntegrity, New: newSafeputDefaultsAWS},
		{Name: "safeput-defaults/minio", Role: RoleSafeput, Defaults: true, Integrity: defaultsIntegrity, New: newSafeputDefaultsMinio},
		{Name: "safeput-cli", Role: RoleSafeput, Defaults: true, Integrity: cliIntegrity, New: newSafeputCLI},
		{Name: "transfermanager", Role: RolePeer, Integrity: tmIntegrity, New: newTransferManager},
		{Name: "transfermanager+full-crc32", Role: RolePeer, Integrity: tmFullIntegrity, New: newTransferManagerFull},
		{Name: "manager", Role: RolePeer, Integrity: managerIntegrity, New: newManager},
		{Name: "minio-go", Role: RolePeer, NoChecksum: true, Integrity: minioIntegrity, New: newMinioGo},
		{Name: "minio-go+crc32c", Role: RolePeer, Integrity: minioCRC32CIntegrity, New: newMinioGoCRC32C},
		{Name: "raw-put", Role: RoleCeiling, Integrity: rawIntegrity, New: newRawPut},
	}
}

// ImplByName finds an implementation.
func ImplByName(name string) (Impl, error) {
	for _, im := range Impls() {
		if im.Name == name {
			return im, nil
		}
	}
	return Impl{}, fmt.Errorf("unknown implementation %q", name)
}

// safeputProfile is the provider profile the benchmark runs safeput with: the server's own
// (versitygw, minio), whose preferred CRC headers the server checks. The library's default profile
// ("strict", the intersection of all providers) is measured by the defaults rows; the integrity
// row names what was measured. A server without a profile of its name gets the default.
func safeputProfile(server string) string {
	if _, err := multipart.Profile(server); err == nil && server != "" {
		return server
	}
	return multipart.DefaultProfile
}

func safeputIntegrity(Params) string {
	// One CRC when every server's profile prefers the same, else each server's.
	var prefs []string
	crc := string(rulesOf(safeputProfile(DefaultServers[0])).Checksum())
	for _, srv := range DefaultServers {
		alg := string(rulesOf(safeputProfile(srv)).Checksum())
		prefs = append(prefs, alg+" on "+srv)
		if alg != crc {
			crc = ""
		}
	}
	if crc == "" {
		crc = "the profile's CRC (" + strings.Join(prefs, ", ") + ")"
	}
	return "the server's own profile (" + strings.Join(DefaultServers, ", ") + "; the default " + multipart.DefaultProfile + " is the safeput-defaults and safeput-cli rows): " +
		crc + " per part and full-object (UNSIGNED-PAYLOAD, the CRC header covers the body), ListParts check, HEAD verification of length + checksum"
}

// rulesOf is a profile known to exist (safeputProfile's answer).
func rulesOf(name string) multipart.Rules {
	r, _ := multipart.Profile(name)
	return r
}

func defaultsIntegrity(Params) string {
	return "the library's defaults (profile " + multipart.DefaultProfile + ", no option but part size and concurrency), one writer.Uploader per upload: " +
		"CRC32C offered per part and FULL_OBJECT, ListParts check, HEAD verification (crc32c on both servers); one tiny part with a wrong checksum first (both servers refuse it: they check part checksums), then no part MD5s where the receipt echoes the checksum"
}

func cliIntegrity(Params) string {
	return "`safeput put` as a user runs it (whole process, no --provider, default backend and part size; the stream on its stdin through a pipe, or the file named): " +
		"as safeput-defaults; its CPU column is the CLI process's and the harness's memory sampler (as every row's); for a stream, the harness's sendfile into the pipe (the producer's work, which rows reading the file themselves do not have) is left out and given in the note, with the CLI's own user and sys; " +
		"as a program owning its process it sets the GC memory limit to its part budget + 12 MiB and asks Linux for huge pages for its part buffers, which the library rows, at Go's defaults, do not; " +
		"it keeps what a run learned about the endpoint in its cache directory (fresh for each benchmark run): its first run on a server sends the probe, later runs start from its answer"
}

func tmFullIntegrity(p Params) string {
	return "default CRC32 per part, ChecksumType FULL_OBJECT (a whole-object CRC, as safeput's; CRC64NVME FULL_OBJECT fails in this release: no CRC64NVME in its CompletedPart); " + signingNote(p)
}

func minioCRC32CIntegrity(p Params) string {
	s := "Checksum ChecksumFullObjectCRC32C (trailing CRC32C per part, full-object CRC32C at Complete; TrailingHeaders on), equal integrity to safeput's server profiles"
	if p.Signing == SigningUnsigned {
		return s + "; DisableContentSha256 (UNSIGNED-PAYLOAD)"
	}
	return s + "; streaming SHA-256 signature (plain-HTTP default)"
}

func tmIntegrity(p Params) string {
	return "default CRC32 per part (RequestChecksumCalculation WhenSupported); " + signingNote(p)
}

func managerIntegrity(p Params) string {
	return "default CRC32 per part (RequestChecksumCalculation WhenSupported); " + signingNote(p)
}

func minioIntegrity(p Params) string {
	s := "defaults: no checksum, no Content-MD5 (TrailingHeaders off, SendContentMd5 false)"
	if p.Signing == SigningUnsigned {
		return s + "; DisableContentSha256 (UNSIGNED-PAYLOAD)"
	}
	return s + "; streaming SHA-256 signature (plain-HTTP default)"
}

func rawIntegrity(Params) string {
	return "none: one PutObject, no checksum, UNSIGNED-PAYLOAD"
}

func signingNote(p Params) string {
	if p.Signing == SigningUnsigned {
		return "UNSIGNED-PAYLOAD; SDK retries at default"
	}
	return "SHA-256 payload signing (plain-HTTP default); SDK retries at default"
}

func safeputOptions(server string, p Params) []func(*writer.Options) {
	return []func(*writer.Options){
		func(o *writer.Options) {
			o.PartSize = p.PartSize
			o.Concurrency = p.Concurrency
			o.Profile = safeputProfile(server)
		},
	}
}

// safeputUploader uploads through one writer.Uploader of st, as a program writing to one store
// would: its uploads share a retry policy and what they learned about the server.
func safeputUploader(st store.Store, server, bucket string, p Params) (Uploader, error) {
	return safeputUploaderWith(st, bucket, safeputOptions(server, p))
}

func safeputUploaderWith(st store.Store, bucket string, opts []func(*writer.Options)) (Uploader, error) {
	up, err := writer.NewUploader(st, opts...)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, key string, src Source) (string, error) {
		// The observer notes when the last part was acknowledged, so the note can say how long
		// the commit (ListParts, Complete, HEAD verification) took after the data was sent.
		var mu sync.Mutex
		var lastPart time.Time
		observe := func(o *writer.Options) {
			o.Observer = func(e writer.Event) {
				if e.Type == writer.EventPartDone {
					mu.Lock()
					lastPart = time.Now()
					mu.Unlock()
				}
			}
		}
		res, err := up.Upload(ctx, bucket, key, src.Reader, observe)
		end := time.Now()
		if err != nil {
			return "", err
		}
		if res.Size != src.Size {
			return "", fmt.Errorf("safeput reported %d bytes, source has %d", res.Size, src.Size)
		}
		mu.Lock()
		defer mu.Unlock()
		note := fmt.Sprintf("%d parts of %d MiB, verified %s", res.Parts, res.PartSize>>20, res.Verified)
		if !lastPart.IsZero() {
			note += fmt.Sprintf("; commit+verify %d ms", end.Sub(lastPart).Milliseconds())
		}
		return note, nil
	}, nil
}

// newSafeputDefaults is safeput with nothing but the part size and concurrency every
// implementation gets: no profile (the default, strict), no checksum option.
func newSafeputDefaults(st store.Store, bucket string, p Params) (Uploader, error) {
	return safeputUploaderWith(st, bucket, []func(*writer.Options){func(o *writer.Options) { o.PartSize = p.PartSize; o.Concurrency = p.Concurrency }})
}

func newSafeputDefaultsAWS(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	st, err := awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
	if err != nil {
		return nil, err
	}
	return newSafeputDefaults(st, bucket, p)
}

func newSafeputDefaultsMinio(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	st, err := miniogo.New(miniogo.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
	if err != nil {
		return nil, err
	}
	return newSafeputDefaults(st, bucket, p)
}

func newSafeputAWS(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	st, err := awss3.New(awss3.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
	if err != nil {
		return nil, err
	}
	return safeputUploader(st, srv.Name, bucket, p)
}

func newSafeputMinio(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	st, err := miniogo.New(miniogo.Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, PathStyle: true, CABundle: srv.CABundle})
	if err != nil {
		return nil, err
	}
	return safeputUploader(st, srv.Name, bucket, p)
}

// awsClient is an aws-sdk-go-v2 client as a peer's user would build it: SDK defaults for
// retries (standard, 3 attempts), checksums (WhenSupported) and HTTP client, plus the signing
// choice documented on Signing. Over TLS with a private CA its HTTP client trusts that CA, as
// config.WithCustomCABundle would make it.
func awsClient(srv s3test.Server, p Params) *s3.Client {
	return s3.New(s3.Options{
		Region:       srv.Region,
		BaseEndpoint: aws.String(srv.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
	}, func(o *s3.Options) {
		if p.Signing == SigningUnsigned {
			o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
		}
		if roots := peerRoots(srv); roots != nil {
			o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
				tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			})
		}
	})
}

// peerRoots is what a peer's user would trust for srv's private CA: the system roots and that
// CA; nil over plain HTTP.
func peerRoots(srv s3test.Server) *x509.CertPool {
	if len(srv.CABundle) == 0 {
		return nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM(srv.CABundle)
	return roots
}

func newTransferManager(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	tm := transfermanager.New(awsClient(srv, p), func(o *transfermanager.Options) {
		o.PartSizeBytes = p.PartSize
		o.Concurrency = p.Concurrency
		// Its default threshold is 16 MiB whatever the part size; every other implementation
		// goes multipart above one part, so this one does too.
		o.MultipartUploadThreshold = p.PartSize
	})
	return func(ctx context.Context, key string, src Source) (string, error) {
		// A stream gets no ContentLength, like the other uploaders, which are not told the size
		// of a stream either. The SectionReader's size is found through Seek.
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: src.Reader})
		return "", err
	}, nil
}

// newTransferManagerFull is transfermanager with a whole-object checksum: its default CRC32 per
// part, FULL_OBJECT. (CRC64NVME FULL_OBJECT, the integrity of safeput's defaults, is out of its
// reach in this release: its CompletedPart carries no CRC64NVME, and the servers refuse the
// Complete with InvalidPart.)
func newTransferManagerFull(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	tm := transfermanager.New(awsClient(srv, p), func(o *transfermanager.Options) {
		o.PartSizeBytes = p.PartSize
		o.Concurrency = p.Concurrency
		o.MultipartUploadThreshold = p.PartSize
	})
	return func(ctx context.Context, key string, src Source) (string, error) {
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: src.Reader,
			ChecksumType: tmtypes.ChecksumTypeFullObject})
		return "", err
	}, nil
}

// newManager measures the deprecated uploader on purpose: it is what most existing code calls.
func newManager(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	//nolint:staticcheck // SA1019: deprecated, measured because it is still widely used.
	up := manager.NewUploader(awsClient(srv, p), func(u *manager.Uploader) {
		u.PartSize = p.PartSize
		u.Concurrency = p.Concurrency
	})
	return func(ctx context.Context, key string, src Source) (string, error) {
		in := &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: src.Reader}
		_, err := up.Upload(ctx, in) //nolint:staticcheck // SA1019, see above
		return "", err
	}, nil
}

func newMinioGo(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	return minioGoUploader(srv, bucket, p, minio.ChecksumNone)
}

// newMinioGoCRC32C is minio-go with a full-object CRC32C, the integrity safeput sends under
// the servers' own profiles.
func newMinioGoCRC32C(srv s3test.Server, bucket string, p Params) (Uploader, error) {
	return minioGoUploader(srv, bucket, p, minio.ChecksumFullObjectCRC32C)
}

func minioGoUploader(srv s3test.Server, bucket string, p Params, checksum minio.ChecksumType) (Uploader, error) {
	u, err := url.Parse(srv.Endpoint)
	if err != nil {
		return nil, err
	}
	mo := &minio.Options{
		Creds:           miniocreds.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Secure:          u.Scheme == "https",
		Region:          srv.Region,
		BucketLookup:    minio.BucketLookupPath,
		TrailingHeaders: checksum != minio.ChecksumNone, // Checksum needs it
	}
	if roots := peerRoots(srv); roots != nil {
		// minio-go's own transport, as its docs suggest, trusting the CA.
		tr, err := minio.DefaultTransport(true)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		mo.Transport = tr
	}
	c, err := minio.New(u.Host, mo)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, key string, src Source) (string, error) {
		opts := minio.PutObjectOptions{
			PartSize:             uint64(p.PartSize),
			NumThreads:           uint(p.Concurrency),
			DisableContentSha256: p.Signing == SigningUnsigned,
			Checksum:             checksum,
		}
		size := src.Size
		if src.Kind == SourceStream {
			// Unknown size, like for everyone else. Without ConcurrentStreamParts minio-go
			// uploads a stream one part at a time, so it is set to get the same concurrency.
			size = -1
			opts.ConcurrentStreamParts = true
		}
		// A ReaderAt of known size takes minio-go's parallel SectionReader path (NumThreads
		// workers, no part buffers).
		info, err := c.PutObject(ctx, bucket, key, src.Reader, size, opts)
		if err != nil {
			return "", err
		}
		if info.Size != src.Size {
			return "", fmt.Errorf("minio-go reported %d bytes, source has %d", info.Size, src.Size)
		}
		return "", nil
	}, nil
}

func newRawPut(srv s3test.Server, bucket string, _ Params) (Uploader, error) {
	c := awsClient(srv, Params{Signing: SigningUnsigned})
	return func(ctx context.Context, key string, src Source) (string, error) {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(bucket),
			Key:           aws.String(key),
			Body:          src.Reader,
			ContentLength: aws.Int64(src.Size),
		}, func(o *s3.Options) {
			// The ceiling computes nothing over the body: no CRC, no SHA-256.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		})
		return "single PUT", err
	}, nil
}
