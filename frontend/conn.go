package frontend

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
	"go.uber.org/zap"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/miniogo"
)

// Conn is how to reach the store, as the user gave it; empty fields are filled from the
// environment and the shared config files by Resolve.
type Conn struct {
	Endpoint     string
	Region       string
	AccessKey    string
	SecretKey    string
	SessionToken string
	// Profile names the shared config/credentials profile (else AWS_PROFILE, else "default").
	Profile            string
	PathStyle          bool
	Backend            string // "aws" (aws-sdk-go-v2) or "minio" (minio-go)
	InsecureSkipVerify bool
	// CABundle is a PEM file of the CAs that sign the endpoint's certificate, trusted besides
	// the system roots for this store only; else AWS_CA_BUNDLE, else ca_bundle in the profile
	// (as the AWS CLI reads them). Those two are ignored under InsecureSkipVerify.
	CABundle string
	// Logger gets the warning that certificate verification is off, once per store built.
	Logger *zap.Logger
	// KeysHint names where the caller can give keys directly, for the missing-credentials
	// message ("--access-key and --secret-key" for the CLI).
	KeysHint string
}

// Resolved is the connection after flags, environment and shared config.
type Resolved struct {
	Endpoint, Region, AccessKey, SecretKey, SessionToken string
	// CABundle is the CA bundle file in effect ("" for the system roots alone).
	CABundle string
	// Expires is when the keys stop working (an assumed role's, say); zero when they do not
	// expire or nobody said when. A store built for keys that expire renews them (renew.go).
	Expires time.Time

	// creds is the SDK's credentials cache the keys came from, which renews them; source names
	// where they came from, for errors. (Both comparable: the C ABI keys its clients by Resolved.)
	creds  *aws.CredentialsCache
	source string
}

// Every error Resolve and NewStore return is a configuration error: nothing was sent.

// Resolve fills what c leaves empty from aws-sdk-go-v2's default configuration (creds.go): the
// endpoint from AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL or the profile's endpoint_url; the
// region from AWS_REGION, AWS_DEFAULT_REGION or the profile, else the instance metadata
// service when that gave the keys, else us-east-1; the keys from the SDK's default chain
// (environment, the profile c.Profile or AWS_PROFILE or default, web identity, container
// credentials, the EC2 instance metadata service).
func (c Conn) Resolve() (Resolved, error) {
	ctx := context.Background()
	r := Resolved{Endpoint: c.Endpoint, Region: c.Region, AccessKey: c.AccessKey, SecretKey: c.SecretKey, SessionToken: c.SessionToken}
	hint := c.KeysHint
	if hint == "" {
		hint = "an access key and a secret key"
	}
	given := r.AccessKey != "" || r.SecretKey != ""
	switch {
	case given && r.AccessKey == "":
		return r, fmt.Errorf("missing credentials: a secret key without an access key id")
	case given && r.SecretKey == "":
		return r, fmt.Errorf("missing credentials: an access key id without a secret key")
	case !given && (os.Getenv("AWS_ACCESS_KEY_ID") == "") != (os.Getenv("AWS_SECRET_ACCESS_KEY") == ""):
		// The SDK passes over half a pair silently and goes on down the chain.
		return r, fmt.Errorf("missing credentials: only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set")
	}
	if c.fromFlagsAndEnv(&r) {
		return r, c.checkEndpoint(&r)
	}
	cfg, err := loadConfig(ctx, c.Profile, c.Region)
	if err != nil {
		return r, err
	}
	env, shared := sources(cfg)
	if r.Endpoint == "" {
		r.Endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
	}
	if r.Endpoint == "" && cfg.BaseEndpoint != nil {
		r.Endpoint = *cfg.BaseEndpoint
	}
	r.Region = cfg.Region // c.Region when given (config.WithRegion)
	if !given {
		if err := c.credentials(ctx, cfg, &r, hint); err != nil {
			return r, err
		}
		if c.Region == "" && env.Region == "" && shared.Region == "" && r.source == imdsSource {
			// On EC2 with no region configured, the instance's own, as AWS tools on EC2 take it.
			if out, err := imds.NewFromConfig(cfg).GetRegion(ctx, nil); err == nil && out.Region != "" {
				r.Region = out.Region
			}
		}
	}
	c.resolveCABundle(&r, env, shared)
	return r, c.checkEndpoint(&r)
}

// fromFlagsAndEnv fills r from the flags and the environment alone when they give everything
// the shared files could (keys, region, endpoint, and a CA bundle or no need of one), as the
// SDK's precedence would keep it: nothing is left for the files to give, so the SDK's
// configuration is not loaded (which touches code and data that count in the CLI's peak RSS on
// a stream; creds.go). For a plain-HTTP endpoint without a region the region comes from the
// shared files alone (profileRegion). AWS_PROFILE does not outrank keys in the environment; --profile
// does. (Unlike the SDK, an AWS_PROFILE naming no profile is not an error then.)
func (c Conn) fromFlagsAndEnv(r *Resolved) bool {
	if r.AccessKey == "" {
		if c.Profile != "" || os.Getenv("AWS_ACCESS_KEY_ID") == "" || os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
			return false
		}
		r.AccessKey, r.SecretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		if r.SessionToken == "" {
			r.SessionToken = os.Getenv("AWS_SESSION_TOKEN")
		}
	}
	region := cmp.Or(c.Region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
	endpoint := c.Endpoint
	if endpoint == "" && os.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") == "" {
		endpoint = cmp.Or(os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL"))
	}
	ca := c.CABundle
	if ca == "" && !c.InsecureSkipVerify && !plainHTTP(endpoint) {
		ca = os.Getenv("AWS_CA_BUNDLE")
	}
	if region == "" && plainHTTP(endpoint) {
		// The region is all the files could still give. The SDK's loading would also parse every
		// certificate of AWS_CA_BUNDLE (or fail on a bundle it cannot read), which a plain-HTTP
		// endpoint never uses: the region is read from the shared files alone.
		if r, ok := profileRegion(c.Profile); ok {
			region = cmp.Or(r, defaultRegion)
		}
	}
	if region == "" || endpoint == "" || (ca == "" && !c.InsecureSkipVerify && !plainHTTP(endpoint)) {
		if c.AccessKey == "" {
			r.AccessKey, r.SecretKey, r.SessionToken = "", "", c.SessionToken
		}
		return false
	}
	r.Region, r.Endpoint, r.CABundle = region, endpoint, ca
	return true
}

// defaultRegion is the region AWS tools assume when none is set (loadConfig's too).
const defaultRegion = "us-east-1"

// profileRegion is the region the shared files give the profile named (else AWS_PROFILE, else
// AWS_DEFAULT_PROFILE, else default), read from the files AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE name (else ~/.aws/config and ~/.aws/credentials) as the SDK reads
// them, and nothing else of its configuration; "" when the profile sets none, or is the
// default one and absent. ok is false when the files cannot say (a profile named but absent,
// a file that does not parse): the SDK's loading then decides, and words the error.
func profileRegion(named string) (region string, ok bool) {
	profile := cmp.Or(named, os.Getenv("AWS_PROFILE"), os.Getenv("AWS_DEFAULT_PROFILE"))
	explicit := profile != ""
	sc, err := config.LoadSharedConfigProfile(context.Background(), cmp.Or(profile, "default"), func(o *config.LoadSharedConfigOptions) {
		if f := os.Getenv("AWS_CONFIG_FILE"); f != "" {
			o.ConfigFiles = []string{f}
		}
		if f := os.Getenv("AWS_SHARED_CREDENTIALS_FILE"); f != "" {
			o.CredentialsFiles = []string{f}
		}
	})
	var missing config.SharedConfigProfileNotExistError
	switch {
	case err == nil:
		return sc.Region, true
	case !explicit && errors.As(err, &missing):
		return "", true
	default:
		return "", false
	}
}

// checkEndpoint refuses an endpoint that is not http(s); minio-go, which needs one, gets the
// region's AWS endpoint when none is set.
func (c Conn) checkEndpoint(r *Resolved) error {
	if r.Endpoint != "" {
		if !strings.HasPrefix(r.Endpoint, "http://") && !strings.HasPrefix(r.Endpoint, "https://") {
			return fmt.Errorf("endpoint %q: want http://host[:port] or https://host[:port]", r.Endpoint)
		}
	} else if c.Backend == "minio" {
		// minio-go needs a host; without one, use the AWS endpoint awss3 would pick.
		r.Endpoint = "https://s3." + r.Region + ".amazonaws.com"
	}
	return nil
}

// imdsSource is how Resolved.source names the instance metadata service.
const imdsSource = "the EC2 instance metadata service"

// credentials fills r's keys from the SDK's chain; an error names the source the chain picked
// and why it gave nothing.
func (c Conn) credentials(ctx context.Context, cfg aws.Config, r *Resolved, hint string) error {
	cache, ok := cfg.Credentials.(*aws.CredentialsCache)
	if !ok {
		cache = aws.NewCredentialsCache(cfg.Credentials)
	}
	source := describeSource(cfg, c.Profile != "")
	v, err := retrieve(ctx, cache)
	if err != nil {
		if strings.HasPrefix(source, imdsSource) {
			// The end of the chain: nothing was configured, and this is no EC2 host with a role.
			return fmt.Errorf("missing credentials: set %s, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a --profile (AWS_PROFILE) "+
				"in the shared config files; the default chain ended at %s: %w", hint, source, err)
		}
		return fmt.Errorf("credentials from %s: %w", source, err)
	}
	r.AccessKey, r.SecretKey, r.SessionToken = v.AccessKeyID, v.SecretAccessKey, v.SessionToken
	r.source = source
	if v.Source == ec2rolecreds.ProviderName {
		r.source = imdsSource
	}
	if v.CanExpire {
		r.Expires, r.creds = v.Expires, cache
	}
	return nil
}

// resolveCABundle picks the CA bundle file: c.CABundle, else AWS_CA_BUNDLE, else ca_bundle in
// the profile, whoever gave the keys. Under InsecureSkipVerify only c.CABundle counts (and the
// adapter refuses the pair). A plain http:// endpoint takes none from the environment or the
// profile: no TLS is ever made to it, and a bundle set for other endpoints cost each process
// the parse of the system roots and the bundle (with Debian's ca-certificates as
// AWS_CA_BUNDLE: 5 MB of RSS and 15 ms of a 1-byte put).
func (c Conn) resolveCABundle(r *Resolved, env config.EnvConfig, shared config.SharedConfig) {
	r.CABundle = c.CABundle
	if r.CABundle != "" || c.InsecureSkipVerify || plainHTTP(r.Endpoint) {
		return
	}
	if r.CABundle = env.CustomCABundle; r.CABundle != "" {
		return
	}
	r.CABundle = shared.CustomCABundle
}

// plainHTTP reports an endpoint that is spoken to without TLS (Resolve accepts only the
// lower-case schemes).
func plainHTTP(endpoint string) bool { return strings.HasPrefix(endpoint, "http://") }

// readCABundle reads the CA bundle file: one that cannot be read or holds no PEM certificate
// is an error naming it, never a silent fall back to the system roots.
func readCABundle(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA bundle %s: %w", path, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("CA bundle %s: holds no PEM certificate", path)
	}
	return data, nil
}

// NewStore resolves c and builds the adapter it names.
func NewStore(c Conn) (store.Store, error) {
	if err := c.CheckBackend(); err != nil {
		return nil, err
	}
	r, err := c.Resolve()
	if err != nil {
		return nil, err
	}
	return NewResolvedStore(c, r)
}

// CheckBackend refuses a backend other than aws and minio.
func (c Conn) CheckBackend() error {
	if c.Backend != "aws" && c.Backend != "minio" {
		return fmt.Errorf("backend %q: want aws or minio", c.Backend)
	}
	return nil
}

// NewResolvedStore builds the adapter c names for the connection r (from c.Resolve). Keys that
// expire are renewed through the SDK's credentials cache they came from as they near their
// end, so a write that outlasts them goes on (renew.go); both adapters sign through one renewing
// provider.
func NewResolvedStore(c Conn, r Resolved) (store.Store, error) {
	if err := c.CheckBackend(); err != nil {
		return nil, err
	}
	ca, err := readCABundle(r.CABundle)
	if err != nil {
		return nil, err
	}
	if c.Backend == "minio" {
		cfg := miniogo.Config{Endpoint: r.Endpoint, Region: r.Region, PathStyle: c.PathStyle, InsecureSkipVerify: c.InsecureSkipVerify, CABundle: ca}
		if r.creds == nil {
			cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = r.AccessKey, r.SecretKey, r.SessionToken
		} else {
			cfg.Credentials = miniocreds.New(minioRenewing{newRenewing(r)})
		}
		return miniogo.New(cfg)
	}
	cfg := awss3.Config{Endpoint: r.Endpoint, Region: r.Region, PathStyle: c.PathStyle, InsecureSkipVerify: c.InsecureSkipVerify, CABundle: ca}
	if r.creds == nil {
		cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = r.AccessKey, r.SecretKey, r.SessionToken
	} else {
		cfg.Credentials = awsRenewing{newRenewing(r)}
	}
	return awss3.New(cfg)
}

// ParseChecksum reads a checksum name: crc64nvme, crc32c, crc32, or none ("" is none).
func ParseChecksum(s string) (store.ChecksumAlgorithm, error) {
	switch strings.ToLower(s) {
	case "crc64nvme":
		return store.ChecksumCRC64NVME, nil
	case "crc32c":
		return store.ChecksumCRC32C, nil
	case "crc32":
		return store.ChecksumCRC32, nil
	case "none", "":
		return store.ChecksumNone, nil
	}
	return "", fmt.Errorf("%q: want crc64nvme, crc32c, crc32 or none", s)
}
