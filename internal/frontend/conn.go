package frontend

import (
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
	"go.uber.org/zap"

	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/store/awss3"
	"github.com/safeput/safeput/store/storetest/faulty"
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
}

// Every error Resolve and NewStore return is a configuration error: nothing was sent.

// Resolve fills what c leaves empty: the endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL,
// the region from AWS_REGION or AWS_DEFAULT_REGION (default us-east-1), the keys from
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, and failing those from the
// shared config files.
func (c Conn) Resolve() (Resolved, error) {
	r := Resolved{Endpoint: c.Endpoint, Region: c.Region, AccessKey: c.AccessKey, SecretKey: c.SecretKey, SessionToken: c.SessionToken}
	if r.Endpoint == "" {
		r.Endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	if r.Region == "" {
		r.Region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	}
	if r.Region == "" {
		r.Region = "us-east-1"
	}
	// Given keys and environment keys are taken as pairs: mixing a given key with an environment
	// secret would sign with credentials nobody meant together.
	if r.AccessKey == "" && r.SecretKey == "" {
		r.AccessKey, r.SecretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		if r.SessionToken == "" {
			r.SessionToken = os.Getenv("AWS_SESSION_TOKEN")
		}
	}
	if r.AccessKey == "" && r.SecretKey == "" {
		if err := c.fromSharedConfig(&r); err != nil {
			return r, err
		}
	}
	hint := c.KeysHint
	if hint == "" {
		hint = "an access key and a secret key"
	}
	switch {
	case r.AccessKey == "" && r.SecretKey == "":
		return r, fmt.Errorf("missing credentials: set %s, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a --profile (AWS_PROFILE) in the shared config files", hint)
	case r.AccessKey == "":
		return r, fmt.Errorf("missing credentials: a secret key without an access key id")
	case r.SecretKey == "":
		return r, fmt.Errorf("missing credentials: an access key id without a secret key")
	}
	if err := c.resolveCABundle(&r); err != nil {
		return r, err
	}
	if r.Endpoint != "" {
		if !strings.HasPrefix(r.Endpoint, "http://") && !strings.HasPrefix(r.Endpoint, "https://") {
			return r, fmt.Errorf("endpoint %q: want http://host[:port] or https://host[:port]", r.Endpoint)
		}
	} else if c.Backend == "minio" {
		// minio-go needs a host; without one, use the AWS endpoint awss3 would pick.
		r.Endpoint = "https://s3." + r.Region + ".amazonaws.com"
	}
	return r, nil
}

// resolveCABundle picks the CA bundle file: c.CABundle, else AWS_CA_BUNDLE, else ca_bundle in
// the profile (c.Profile, AWS_PROFILE or default), whoever gave the keys. Under
// InsecureSkipVerify only c.CABundle counts (and the adapter refuses the pair). A plain http://
// endpoint takes none from the environment or the profile: no TLS is ever made to it, and a
// bundle set for other endpoints cost each process the parse of the system roots and the bundle
// (with Debian's ca-certificates as AWS_CA_BUNDLE: 5 MB of RSS and 15 ms of a 1-byte put).
func (c Conn) resolveCABundle(r *Resolved) error {
	r.CABundle = c.CABundle
	if r.CABundle != "" || c.InsecureSkipVerify || plainHTTP(r.Endpoint) {
		return nil
	}
	if r.CABundle = os.Getenv("AWS_CA_BUNDLE"); r.CABundle != "" {
		return nil
	}
	profile := c.Profile
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	if profile == "" {
		profile = "default"
	}
	profiles, err := sharedProfiles()
	if err != nil {
		return err
	}
	if v := profiles[profile]["ca_bundle"]; v != "" {
		if rest, ok := strings.CutPrefix(v, "~/"); ok {
			if home, err := os.UserHomeDir(); err == nil {
				v = filepath.Join(home, rest)
			}
		}
		r.CABundle = v
	}
	return nil
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

// fromSharedConfig fills what c and the environment left empty, in the SDKs' order: a profile
// named by c.Profile or AWS_PROFILE; else a web identity the environment points at; else the
// "default" profile of the shared config and credentials files (~/.aws/config,
// ~/.aws/credentials, or AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE); else a container
// task's credentials the environment points at. A profile gives keys
// (static, credential_process, SSO or an assumed role; see shared.go), region and endpoint_url. A named profile
// that is missing or gives no keys is an error; a missing default is not (the caller reports the
// missing credentials).
func (c Conn) fromSharedConfig(r *Resolved) error {
	profile := c.Profile
	if profile == "" {
		profile = os.Getenv("AWS_PROFILE")
	}
	named := profile != ""
	if !named {
		profile = "default"
	}
	profiles, err := sharedProfiles()
	if err != nil {
		return err
	}
	props, found := profiles[profile]
	if named && !found {
		known := "none"
		if len(profiles) > 0 {
			known = strings.Join(slices.Sorted(maps.Keys(profiles)), ", ")
		}
		return fmt.Errorf("profile %q: not in the shared config or credentials files (profiles there: %s)", profile, known)
	}
	if found {
		if c.Region == "" && firstEnv("AWS_REGION", "AWS_DEFAULT_REGION") == "" && props["region"] != "" {
			r.Region = props["region"]
		}
		if r.Endpoint == "" && props["endpoint_url"] != "" {
			r.Endpoint = props["endpoint_url"]
		}
	}
	var keys Resolved
	ok := false
	if !named {
		if keys, ok, err = ambientCredentials(webIdentityEnv); err != nil {
			return err
		}
	}
	if !ok && found {
		if keys, ok, err = profileCredentials(context.Background(), profile, profiles, r.Region, nil); err != nil {
			return err
		}
	}
	if !ok && !named {
		if keys, ok, err = ambientCredentials(containerEnv); err != nil {
			return err
		}
	}
	if !ok && named {
		return fmt.Errorf("profile %q: no credentials (want aws_access_key_id and aws_secret_access_key, credential_process, an SSO profile, or role_arn with source_profile or credential_source)", profile)
	}
	r.AccessKey, r.SecretKey, r.SessionToken, r.Expires = keys.AccessKey, keys.SecretKey, keys.SessionToken, keys.Expires
	return nil
}

// NewStore resolves c and builds the adapter it names, wrapped by faults when there are any
// (tests only: see ParseFaults).
func NewStore(c Conn, faults []faulty.Rule) (store.Store, error) {
	if err := c.CheckBackend(); err != nil {
		return nil, err
	}
	r, err := c.Resolve()
	if err != nil {
		return nil, err
	}
	st, err := NewResolvedStore(c, r)
	if err != nil {
		return nil, err
	}
	if len(faults) > 0 {
		st = faulty.New(st, faults...)
	}
	return st, nil
}

// CheckBackend refuses a backend other than aws and minio.
func (c Conn) CheckBackend() error {
	if c.Backend != "aws" && c.Backend != "minio" {
		return fmt.Errorf("backend %q: want aws or minio", c.Backend)
	}
	return nil
}

// NewResolvedStore builds the adapter c names for the connection r (from c.Resolve). Keys that
// expire are renewed through c.Resolve as they near their end, so a write that outlasts them
// goes on (renew.go).
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
		if r.Expires.IsZero() {
			cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = r.AccessKey, r.SecretKey, r.SessionToken
		} else {
			cfg.Credentials = miniocreds.New(minioRenewing{newRenewing(c, r)})
		}
		return miniogo.New(cfg)
	}
	cfg := awss3.Config{Endpoint: r.Endpoint, Region: r.Region, PathStyle: c.PathStyle, InsecureSkipVerify: c.InsecureSkipVerify, CABundle: ca}
	if r.Expires.IsZero() {
		cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = r.AccessKey, r.SecretKey, r.SessionToken
	} else {
		cfg.Credentials = awsRenewing{newRenewing(c, r)}
	}
	return awss3.New(cfg)
}

// firstEnv returns the first non-empty value among the named environment variables.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
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
