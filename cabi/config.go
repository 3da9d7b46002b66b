package cabi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/safeput/safeput/internal/frontend"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/writer"
)

// Config is the JSON object safeput_open takes. Field names follow the CLI's flags; an unknown
// field is an error (a misspelt "create_only" must not silently allow an overwrite).
type Config struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`

	// Connection: as the CLI's flags; empty values come from the same environment variables
	// and shared config files (see frontend.Conn.Resolve).
	Endpoint           string `json:"endpoint"`
	Region             string `json:"region"`
	PathStyle          bool   `json:"path_style"`
	Backend            string `json:"backend"` // aws (default) or minio
	Profile            string `json:"profile"` // shared config profile for credentials
	AccessKey          string `json:"access_key"`
	SecretKey          string `json:"secret_key"`
	SessionToken       string `json:"session_token"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify"`
	// CABundle is a PEM file of CAs trusted besides the system roots for this store (as the
	// CLI's --ca-bundle; empty: AWS_CA_BUNDLE, then ca_bundle in the profile).
	CABundle string `json:"ca_bundle"`

	// Upload: as the CLI's put flags.
	Provider     string   `json:"provider"`      // provider profile or rules string (default strict)
	PartSize     sizeJSON `json:"part_size"`     // bytes, or "16MiB" (default 16 MiB)
	Concurrency  *int     `json:"concurrency"`   // parts in flight (default 4)
	Checksum     *string  `json:"checksum"`      // crc64nvme, crc32c, crc32, none (default: the provider's, crc64nvme but crc32c for minio and versitygw)
	CreateOnly   bool     `json:"create_only"`   // fail with 7 if the key exists
	ContentType  string   `json:"content_type"`  //
	Size         *int64   `json:"size"`          // exact size, when known
	ExpectedSize sizeJSON `json:"expected_size"` // largest size an unknown-size stream may reach
	ReadBack     bool     `json:"read_back"`     // re-read the whole object after commit
	// StallTimeout cuts and retries a request that moves no byte for this long ("20s" default,
	// "0s" off); every handle shares the library's default retry budget.
	StallTimeout string `json:"stall_timeout"`

	// LogLevel logs to stderr at debug, info, warn or error; empty: no logging.
	LogLevel string `json:"log_level"`

	// TestFaults injects store faults (OP:FAULT[:N],...). Honoured only by a library built with
	// the safeput_faults tag, or by this module's own tests; anything else rejects it with
	// status 2.
	TestFaults string `json:"test_faults"`
}

// sizeJSON is a byte count given as a JSON number or a string with a unit ("5MiB").
type sizeJSON struct {
	n   int64
	set bool
}

func (s *sizeJSON) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		n, err := multipart.ParseSize(str)
		if err != nil {
			return err
		}
		s.n, s.set = n, true
		return nil
	}
	if err := json.Unmarshal(b, &s.n); err != nil {
		return fmt.Errorf("want a byte count or a size such as \"16MiB\": %w", err)
	}
	s.set = true
	return nil
}

// parseConfig reads and checks the JSON; every error is bad input.
func parseConfig(text string) (Config, error) {
	var c Config
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if dec.More() {
		return c, fmt.Errorf("config: trailing data after the JSON object")
	}
	if c.Backend == "" {
		c.Backend = "aws"
	}
	if c.Provider == "" {
		c.Provider = multipart.DefaultProfile
	}
	return c, nil
}

// writerOptions turns c into writer options, checked against a plan so that a bad combination
// is bad input at open, before any request, and the retry options of this handle (its stall
// window), for a policy derived from the connection's so the retry budget stays shared.
func (c Config) writerOptions() ([]writer.Option, []retry.Option, error) {
	rules, err := multipart.Parse(c.Provider)
	if err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	partSize := int64(writer.DefaultPartSize)
	if c.PartSize.set {
		if c.PartSize.n <= 0 {
			return nil, nil, fmt.Errorf("part_size %d: must be positive", c.PartSize.n)
		}
		partSize = c.PartSize.n
	}
	concurrency := writer.DefaultConcurrency
	if c.Concurrency != nil {
		if *c.Concurrency < 1 {
			return nil, nil, fmt.Errorf("concurrency %d: must be at least 1", *c.Concurrency)
		}
		concurrency = *c.Concurrency
	}
	alg := rules.Checksum()
	if c.Checksum != nil {
		if alg, err = frontend.ParseChecksum(*c.Checksum); err != nil {
			return nil, nil, fmt.Errorf("checksum %w", err)
		}
	}
	size := int64(-1)
	if c.Size != nil {
		if *c.Size < 0 {
			return nil, nil, fmt.Errorf("size %d: must not be negative", *c.Size)
		}
		size = *c.Size
	}
	req := multipart.PlanRequest{Size: size, PartSize: partSize, Concurrency: concurrency}
	if c.ExpectedSize.set {
		req.ExpectedMaxSize = c.ExpectedSize.n
	}
	if _, err := rules.Plan(req); err != nil {
		return nil, nil, err
	}
	log, err := newLogger(c.LogLevel)
	if err != nil {
		return nil, nil, err
	}
	var ropts []retry.Option
	opts := []writer.Option{
		writer.WithRules(rules),
		writer.WithPartSize(partSize),
		writer.WithConcurrency(concurrency),
		writer.WithChecksum(alg),
		writer.WithLogger(log),
	}
	if size >= 0 {
		opts = append(opts, writer.WithSize(size))
	}
	if c.ExpectedSize.set {
		opts = append(opts, writer.WithExpectedMaxSize(c.ExpectedSize.n))
	}
	if c.CreateOnly {
		opts = append(opts, writer.WithCreateOnly(true))
	}
	if c.ContentType != "" {
		opts = append(opts, writer.WithContentType(c.ContentType))
	}
	if c.ReadBack {
		opts = append(opts, writer.WithReadBack(true))
	}
	if c.StallTimeout != "" {
		d, err := time.ParseDuration(c.StallTimeout)
		if err != nil || d < 0 || d > time.Hour {
			return nil, nil, fmt.Errorf("stall_timeout %q: want a duration from 0s (off) to 1h", c.StallTimeout)
		}
		ropts = append(ropts, retry.WithStallTimeout(d))
	}
	return opts, ropts, nil
}

func (c Config) conn() frontend.Conn {
	log, _ := newLogger(c.LogLevel) // writerOptions has refused a bad level already
	return frontend.Conn{
		Endpoint: c.Endpoint, Region: c.Region, AccessKey: c.AccessKey, SecretKey: c.SecretKey,
		SessionToken: c.SessionToken, Profile: c.Profile, PathStyle: c.PathStyle, Backend: c.Backend,
		InsecureSkipVerify: c.InsecureSkipVerify, CABundle: c.CABundle, Logger: log,
		KeysHint: "access_key and secret_key in the config",
	}
}

func newLogger(level string) (*zap.Logger, error) {
	if level == "" {
		return zap.NewNop(), nil
	}
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log_level %q: want debug, info, warn or error", level)
	}
	enc := zap.NewProductionEncoderConfig()
	core := zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(os.Stderr)), lvl)
	return zap.New(core).With(zap.String("component", "safeput-cabi")), nil
}
