package cabi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
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
	// CLI's --ca-bundle; empty: AWS_CA_BUNDLE, then ca_bundle in the profile, for an https endpoint).
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
	// Server-side encryption, as the CLI's put flags: sse "AES256" or "aws:kms" (with
	// sse_kms_key_id, sse_kms_encryption_context, bucket_key_enabled), or sse_c_key_file.
	SSE                     string `json:"sse"`
	SSEKMSKeyID             string `json:"sse_kms_key_id"`
	SSEKMSEncryptionContext string `json:"sse_kms_encryption_context"`
	BucketKeyEnabled        bool   `json:"bucket_key_enabled"`
	SSECKeyFile             string `json:"sse_c_key_file"`
	// AllowSSECOverHTTP sends the SSE-C key to a plain http:// endpoint anyway (else refused as
	// bad input at open); the close JSON then carries a warning.
	AllowSSECOverHTTP bool `json:"allow_sse_c_over_http"`
	// StallTimeout cuts and retries a request that moves no byte for this long ("20s" default,
	// "0s" off); every handle shares the library's default retry budget.
	StallTimeout string `json:"stall_timeout"`
	// AbortTimeout bounds each clean-up step after a failure or an abort (the store's abort,
	// the sweep of a lost create), so safeput_abort has a worst case the caller chose.
	AbortTimeout string `json:"abort_timeout"`

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
		n, err := bytesize.Parse(str)
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

// knownFields is the table of the config's field names, read once from Config's json tags: a
// field added to Config is known here too, with nothing else to keep in step.
var knownFields = func() map[string]int {
	t := reflect.TypeFor[Config]()
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			m[name] = i // the field's index in Config
		}
	}
	return m
}()

// parseConfig reads and checks the JSON; every error is bad input naming what is wrong. The
// object is read strictly, so it means one thing: a field name must match exactly
// (encoding/json alone would take "KEY" for "key"), no field may appear twice (encoding/json
// alone keeps the last), and every string must be valid UTF-8 (encoding/json alone replaces a
// bad byte by U+FFFD, which would write under another key). What is wrong with the config is
// reported here, before anything is looked up in the environment (credentials).
func parseConfig(text string) (Config, error) {
	var c Config
	fields, err := configFields(text)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	for _, f := range fields {
		// A field at a time: the error names it, and the exact name is the one decoded.
		if err := json.Unmarshal(f.raw, fieldPtr(&c, f.name)); err != nil {
			return c, fmt.Errorf("config: %s: %w", f.name, err)
		}
	}
	if c.Bucket == "" || c.Key == "" {
		return c, errors.New("config: bucket and key are required")
	}
	if err := store.ValidateBucketKey(c.Bucket, c.Key); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if c.Backend == "" {
		c.Backend = "aws"
	}
	if err := c.conn().CheckBackend(); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
		return c, fmt.Errorf("config: endpoint %q: want http://host[:port] or https://host[:port]", c.Endpoint)
	}
	if c.Provider == "" {
		c.Provider = multipart.DefaultProfile
	}
	return c, nil
}

type rawField struct {
	name string
	raw  json.RawMessage
}

// configFields splits text, which must be one JSON object, into its fields, refusing an unknown
// or repeated name and a string value that is not valid UTF-8.
func configFields(text string) ([]rawField, error) {
	if !utf8.ValidString(text) {
		// Name the field when a string value holds the bad bytes; else the text as a whole.
		if name := invalidUTF8Field(text); name != "" {
			return nil, fmt.Errorf("%s: not valid UTF-8", name)
		}
		return nil, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(text))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("want a JSON object")
	}
	var fields []rawField
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		if _, ok := knownFields[name]; !ok {
			return nil, fmt.Errorf("unknown field %q (field names are exact and lower case)", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("field %q given twice", name)
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if lonelySurrogate(raw) {
			return nil, fmt.Errorf("%s: not valid UTF-8 (an unpaired surrogate escape)", name)
		}
		fields = append(fields, rawField{name, raw})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return fields, nil
}

// fieldPtr returns a pointer to c's field tagged name (one of knownFields).
func fieldPtr(c *Config, name string) any {
	return reflect.ValueOf(c).Elem().Field(knownFields[name]).Addr().Interface()
}

// invalidUTF8Field names the field whose name or string value holds the first byte that is not
// UTF-8, by reading the text up to it; "" when the bad byte is not inside a field.
func invalidUTF8Field(text string) string {
	bad := 0
	for i, r := range text {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(text[i:]); size == 1 {
				bad = i
				break
			}
		}
	}
	// The last complete "name": before the bad byte is the field it belongs to.
	prefix := text[:bad]
	end := strings.LastIndex(prefix, `":`)
	if end < 0 {
		return ""
	}
	start := strings.LastIndex(prefix[:end], `"`)
	if start < 0 {
		return ""
	}
	name := prefix[start+1 : end]
	if _, ok := knownFields[name]; ok {
		return name
	}
	return ""
}

// lonelySurrogate reports whether a JSON string holds an escaped UTF-16 surrogate with no pair
// (e.g. "\ud800"), which encoding/json decodes to U+FFFD, as it does a bad byte.
func lonelySurrogate(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '"' || !bytes.Contains(raw, []byte(`\u`)) {
		return false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	// Every U+FFFD in s must come from one written in the text, literally or escaped.
	want := strings.Count(s, "\uFFFD")
	have := bytes.Count(raw, []byte("\uFFFD")) + bytes.Count(bytes.ToLower(raw), []byte(`\ufffd`))
	return want > have
}

// writerOptions turns c into writer options, checked against a plan so that a bad combination
// is bad input at open, before any request, and the retry options of this handle (its stall
// window), for a policy derived from the connection's so the retry budget stays shared.
func (c Config) writerOptions() ([]func(*writer.Options), []func(*retry.Options), error) {
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
		if *c.Concurrency < 1 || *c.Concurrency > frontend.MaxConcurrency {
			return nil, nil, fmt.Errorf("concurrency %d: must be from 1 to %d parts in flight", *c.Concurrency, frontend.MaxConcurrency)
		}
		concurrency = *c.Concurrency
	}
	var checksumOpt []func(*writer.Options) // none chosen: the writer's default for the rules and endpoint
	if c.Checksum != nil {
		alg, err := frontend.ParseChecksum(*c.Checksum)
		if err != nil {
			return nil, nil, fmt.Errorf("checksum %w", err)
		}
		checksumOpt = append(checksumOpt, func(o *writer.Options) { o.Checksum, o.NoChecksum = alg, alg == store.ChecksumNone })
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
	var ropts []func(*retry.Options)
	opts := []func(*writer.Options){
		func(o *writer.Options) {
			o.Rules = &rules
			o.PartSize = partSize
			o.Concurrency = concurrency
			o.Logger = log
		},
	}
	opts = append(opts, checksumOpt...)
	if size >= 0 {
		opts = append(opts, func(o *writer.Options) { o.Size = size })
	}
	if c.ExpectedSize.set {
		opts = append(opts, func(o *writer.Options) { o.ExpectedMaxSize = c.ExpectedSize.n })
	}
	if c.CreateOnly {
		opts = append(opts, func(o *writer.Options) { o.CreateOnly = true })
	}
	if c.ContentType != "" {
		opts = append(opts, func(o *writer.Options) { o.ContentType = c.ContentType })
	}
	if c.ReadBack {
		opts = append(opts, func(o *writer.Options) { o.ReadBack = true })
	}
	enc, err := frontend.SSE{Type: c.SSE, KMSKeyID: c.SSEKMSKeyID, KMSContext: c.SSEKMSEncryptionContext,
		BucketKey: c.BucketKeyEnabled, CustomerKeyFile: c.SSECKeyFile}.Encryption()
	if err != nil {
		return nil, nil, err
	}
	if enc.Type != "" {
		opts = append(opts, func(o *writer.Options) { o.Encryption = enc })
	}
	if c.AllowSSECOverHTTP {
		opts = append(opts, func(o *writer.Options) { o.AllowSSECOverHTTP = true })
	}
	if c.StallTimeout != "" {
		d, err := time.ParseDuration(c.StallTimeout)
		if err != nil || d < 0 || d > time.Hour {
			return nil, nil, fmt.Errorf("stall_timeout %q: want a duration from 0s (off) to 1h", c.StallTimeout)
		}
		ropts = append(ropts, func(o *retry.Options) { o.StallTimeout = d })
	}
	if c.AbortTimeout != "" {
		d, err := time.ParseDuration(c.AbortTimeout)
		if err != nil || d <= 0 || d > time.Hour {
			return nil, nil, fmt.Errorf("abort_timeout %q: want a duration above 0s, at most 1h", c.AbortTimeout)
		}
		opts = append(opts, func(o *writer.Options) { o.AbortTimeout = d })
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
