package main

import (
	"context"
	"encoding/json"
	stderrors "errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

// globalOpts are the flags every command shares.
type globalOpts struct {
	endpoint     string
	region       string
	accessKey    string
	secretKey    string
	sessionToken string
	profile      string
	pathStyle    bool
	backend      string
	provider     string
	partSize     string
	concurrency  int
	checksum     string
	json         bool
	logLevel     string
	stallTimeout time.Duration
	insecure     bool
	caBundle     string
	hooks        testHooks // --fault and --pause, in the test build only (testhooks_on.go)

	// secretKeyFile and sessionTokenFile hold the secrets out of the process list (secrets.go).
	secretKeyFile    string
	sessionTokenFile string
}

type app struct {
	stdin          *os.File
	stdout, stderr io.Writer
	g              globalOpts
	log            *zap.Logger
	pol            *retry.Policy // built once from the flags by policy()
	// limitGCToBudget: a put sets the GC memory limit from its part budget (the real binary
	// only: a test process hosting many commands keeps its own).
	limitGCToBudget bool
	// hugePages: a put's fresh part buffers get huge-page advice (writer.Options.HugePages). The
	// real binary uploads once per process, so its buffers are all fresh and their first-touch
	// faults are paid on every run (internal/hugepage says what that costs).
	hugePages bool
	// insecureWarned: the warning that certificate verification is off is printed once a run.
	insecureWarned bool
	// storeAnswered: a request of this run got an answer from the store itself. Until one has,
	// a store that takes no requests is a wrong endpoint, not an outage to ride out
	// (retry.Op.FirstContact).
	storeAnswered atomic.Bool
}

func newApp(stdin *os.File, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, log: zap.NewNop()}
}

const envHelp = `Environment:
  AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL   endpoint when --endpoint is not given (S3 one wins)
  AWS_REGION, AWS_DEFAULT_REGION          region when --region is not given (default us-east-1)
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
                                          credentials when the flags are not given (secrets
                                          here or in --secret-key-file, --session-token-file or
                                          a --profile, not on the command line, where every
                                          user of the machine can read them)
  OTEL_EXPORTER_OTLP_ENDPOINT (and the other OTEL_* variables)
                                          put exports its spans and metrics over OTLP/HTTP`

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "safeput",
		Short: "Write objects to S3-compatible storage: landed and verified, or a classified failure",
		Long: `safeput writes objects to S3-compatible storage so that a write either lands exactly as sent,
verified against the store after commit, or fails with a classified error and exit code; no
multipart upload is left behind.

Start with "safeput demo": no set-up, no network.

` + exitCodesHelp + "\n\n" + envHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.setupLogger(); err != nil {
				return err
			}
			if err := a.readSecrets(); err != nil {
				return err
			}
			_, err := a.policy() // validates --stall-timeout before any command starts
			return err
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	// Flag parse errors are usage errors: exit 2 with one line.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })

	f := root.PersistentFlags()
	f.StringVar(&a.g.endpoint, "endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:9000 (env AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)")
	f.StringVar(&a.g.region, "region", "", "region to sign requests for (env AWS_REGION; default us-east-1)")
	f.StringVar(&a.g.accessKey, "access-key", "", "access key id (env AWS_ACCESS_KEY_ID)")
	f.StringVar(&a.g.secretKey, "secret-key", "", "secret access key (env AWS_SECRET_ACCESS_KEY); on the command line it is visible to every user of the machine: prefer the variable or --secret-key-file")
	f.StringVar(&a.g.secretKeyFile, "secret-key-file", "", "a file holding the secret access key (surrounding white space ignored)")
	f.StringVar(&a.g.sessionToken, "session-token", "", "session token for temporary credentials (env AWS_SESSION_TOKEN); visible in the process list: prefer the variable or --session-token-file")
	f.StringVar(&a.g.sessionTokenFile, "session-token-file", "", "a file holding the session token (surrounding white space ignored)")
	f.StringVar(&a.g.profile, "profile", "", "shared config/credentials profile, used when no keys are given by flag or environment (env AWS_PROFILE)")
	f.BoolVar(&a.g.pathStyle, "path-style", false, "address buckets as endpoint/bucket instead of bucket.endpoint")
	f.StringVar(&a.g.backend, "backend", "aws", "S3 client library: aws (aws-sdk-go-v2) or minio (minio-go)")
	f.StringVar(&a.g.provider, "provider", "strict", "provider profile ("+strings.Join(multipart.ProfileNames(), ", ")+") or a rules string such as min=5MiB,max=5GiB,parts=10000")
	f.StringVar(&a.g.partSize, "part-size", "", "preferred part size, e.g. 16MiB (default 16 MiB; raised to fit the part-count limit)")
	f.IntVar(&a.g.concurrency, "concurrency", writer.DefaultConcurrency, fmt.Sprintf("parts in flight per upload (1 to %d)", frontend.MaxConcurrency))
	f.StringVar(&a.g.checksum, "checksum", "", "checksum sent and verified: crc64nvme, crc32c, crc32 or none (default: the --provider profile's choice: crc32c for the default strict, minio and versitygw, crc64nvme for the others and for an R2 endpoint)")
	f.BoolVar(&a.g.json, "json", false, "print a machine-readable result on stdout")
	f.StringVar(&a.g.logLevel, "log-level", "error", "log level on stderr: debug, info, warn, error (the outcome line is printed at any level)")
	f.DurationVar(&a.g.stallTimeout, "stall-timeout", retry.DefaultStallTimeout,
		"cut and retry a request that moves no byte for this long (0 disables; at most "+maxStallTimeout.String()+")")
	f.BoolVar(&a.g.insecure, "insecure-skip-verify", false, "do not verify the endpoint's TLS certificate (test endpoints only; warned about on stderr)")
	f.StringVar(&a.g.caBundle, "ca-bundle", "", "PEM file of the CAs that sign the endpoint's certificate, trusted besides the system roots (env AWS_CA_BUNDLE, or ca_bundle in the profile, for an https endpoint)")
	a.g.hooks.register(f)

	root.AddCommand(a.putCmd(), a.verifyCmd(), a.probeCmd(), a.sweepCmd(), a.recoverCmd(), a.demoCmd())
	return root
}

// execute runs the command line and turns the outcome into an exit code and one line on stderr.
func (a *app) execute(ctx context.Context, args []string) int {
	root := a.root()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if cmd != nil && isArgsOrCommandError(err) {
		err = usageErr("%v (see %s --help)", err, cmd.CommandPath())
	}
	code := exitCodeFor(ctx, err)
	var ee *exitError
	quiet := stderrors.As(err, &ee) && stderrors.Is(ee.err, errQuiet)
	if !quiet {
		_, _ = fmt.Fprintf(a.stderr, "safeput: %s\n", oneLine(err))
	}
	return code
}

// errQuiet marks a failure the command has already reported in full.
var errQuiet = stderrors.New("already reported")

// isArgsOrCommandError recognises cobra's own errors (wrong argument count, unknown command),
// which it returns as plain errors.
func isArgsOrCommandError(err error) bool {
	var ee *exitError
	var se *sperrors.Error
	if stderrors.As(err, &ee) || stderrors.As(err, &se) {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "accepts ") || strings.Contains(s, "unknown command") ||
		strings.Contains(s, "requires ") || strings.Contains(s, "arg(s)")
}

func oneLine(err error) string { return frontend.OneLine(err) }

func (a *app) setupLogger() error {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(a.g.logLevel)); err != nil {
		return usageErr("--log-level %q: want debug, info, warn or error", a.g.logLevel)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = "" // a CLI's stderr lines need no timestamp
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(a.stderr)), lvl)
	a.log = zap.New(core)
	return nil
}

// conn is the connection the flags describe.
func (a *app) conn() frontend.Conn {
	return frontend.Conn{
		Endpoint: a.g.endpoint, Region: a.g.region, AccessKey: a.g.accessKey, SecretKey: a.g.secretKey,
		SessionToken: a.g.sessionToken, Profile: a.g.profile, PathStyle: a.g.pathStyle, Backend: a.g.backend,
		InsecureSkipVerify: a.g.insecure, CABundle: a.g.caBundle, Logger: a.log, KeysHint: "--access-key and --secret-key",
	}
}

// newStore builds the store adapter the flags ask for (in the test build, wrapped by the
// fault injector --fault asks for).
func (a *app) newStore() (store.Store, error) {
	if a.g.backend != "aws" && a.g.backend != "minio" {
		return nil, usageErr("--backend %q: want aws or minio", a.g.backend)
	}
	withFaults, err := a.g.hooks.faults()
	if err != nil {
		return nil, err
	}
	st, err := frontend.NewStore(a.conn())
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if withFaults != nil {
		st = withFaults(st)
	}
	if a.g.insecure && !a.insecureWarned {
		// Whatever the log level: the library's own warning is a log line, hidden at the
		// default level, and sweep, verify and probe do not go through it.
		a.insecureWarned = true
		a.warn(frontend.InsecureTLSWarning("--insecure-skip-verify"))
	}
	return st, nil
}

// checkSSECTransport refuses an SSE-C key (sendsKey) for a plain http:// endpoint unless
// --allow-sse-c-over-http (allowed), and warns when it is allowed (frontend.SSECOverHTTP).
func (a *app) checkSSECTransport(st store.Store, sendsKey, allowed bool) error {
	warning, err := frontend.SSECOverHTTP(st, sendsKey, allowed, "--allow-sse-c-over-http")
	if err != nil {
		return usageErr("%v", err)
	}
	if warning != "" {
		a.warn(warning)
	}
	return nil
}

// warn prints a warning on stderr whatever the log level: for what the user chose that weakens
// what safeput promises, which must not depend on asking for logs.
func (a *app) warn(msg string) {
	_, _ = fmt.Fprintf(a.stderr, "safeput: warning: %s\n", msg)
}

// maxStallTimeout: a longer window is no longer a stall detector, and is almost surely a typo.
const maxStallTimeout = time.Hour

// policy is the retry policy for every store request of this run, with the stall window of
// --stall-timeout. One per process, so its retry budget bounds the whole run.
func (a *app) policy() (*retry.Policy, error) {
	if a.pol != nil {
		return a.pol, nil
	}
	d := a.g.stallTimeout
	if d < 0 || d > maxStallTimeout {
		return nil, usageErr("--stall-timeout %s: must be 0 (off) or between 1ns and %s", d, maxStallTimeout)
	}
	a.pol = retry.New(func(o *retry.Options) { o.StallTimeout, o.Logger = d, a.log })
	return a.pol, nil
}

// do runs one store request under the run's policy: retried when retryable, cut when stalled.
// A NoSuchUpload answer is returned at once (the caller decides what a vanished upload means).
func (a *app) do(ctx context.Context, op string, u s3URL, fn func(ctx context.Context) error) error {
	p, err := a.policy()
	if err != nil {
		return err
	}
	var gone error
	_, err = p.Do(ctx, retry.Op{Name: op, Bucket: u.Bucket, Key: u.Key, FirstContact: !a.storeAnswered.Load()}, func(ctx context.Context, _ int) error {
		err := fn(ctx)
		var re *store.ResponseError
		if err == nil || (stderrors.As(err, &re) && re.StatusCode > 0 && re.StatusCode != 502 && re.StatusCode != 503 && re.StatusCode != 504) {
			a.storeAnswered.Store(true) // not a balancer's 502, 503 or 504 with nothing behind it
		}
		if isNoSuchUpload(err) {
			gone = err
			return nil
		}
		return err
	})
	if err == nil && gone != nil {
		return gone
	}
	return err
}

// uploadConfig is the validated writer configuration from the flags.
type uploadConfig struct {
	rules    multipart.Rules
	partSize int64
	opts     []func(*writer.Options)
}

func parseChecksum(s string) (store.ChecksumAlgorithm, error) {
	alg, err := frontend.ParseChecksum(s)
	if err != nil {
		return "", usageErr("--checksum %v", err)
	}
	return alg, nil
}

// uploadOptions validates --provider, --part-size, --concurrency and --checksum against a plan
// for size (-1 unknown), so a bad configuration is exit 2 before any request.
func (a *app) uploadOptions(size int64) (uploadConfig, error) {
	var uc uploadConfig
	rules, err := multipart.Parse(a.g.provider)
	if err != nil {
		return uc, usageErr("--provider: %v", err)
	}
	uc.rules = rules
	uc.partSize = writer.DefaultPartSize
	if a.g.partSize != "" {
		n, err := bytesize.Parse(a.g.partSize)
		if err != nil {
			return uc, usageErr("--part-size: %v", err)
		}
		if n <= 0 {
			return uc, usageErr("--part-size %q: must be positive", a.g.partSize)
		}
		uc.partSize = n
	}
	if a.g.concurrency < 1 || a.g.concurrency > frontend.MaxConcurrency {
		return uc, usageErr("--concurrency %d: must be from 1 to %d parts in flight", a.g.concurrency, frontend.MaxConcurrency)
	}
	var checksumOpt []func(*writer.Options) // none chosen: the writer's default for the rules and endpoint
	if a.g.checksum != "" {
		alg, err := parseChecksum(a.g.checksum)
		if err != nil {
			return uc, err
		}
		checksumOpt = append(checksumOpt, func(o *writer.Options) { o.Checksum, o.NoChecksum = alg, alg == store.ChecksumNone })
	}
	plan, err := rules.Plan(multipart.PlanRequest{Size: size, PartSize: uc.partSize, Concurrency: a.g.concurrency})
	if err != nil {
		return uc, usageErr("%v", err)
	}
	if plan.PartSize > math.MaxInt64/int64(a.g.concurrency) {
		// Only a rules string with a huge maximum part size gets here; the writer refuses it too.
		return uc, usageErr("--concurrency %d × part size %s does not fit in 64 bits: lower one of them",
			a.g.concurrency, bytesize.Format(plan.PartSize))
	}
	pol, err := a.policy()
	if err != nil {
		return uc, err
	}
	uc.opts = []func(*writer.Options){
		func(o *writer.Options) {
			o.Retry = pol
			o.Rules = &rules
			o.PartSize = uc.partSize
			o.Concurrency = a.g.concurrency
			o.Logger = a.log
		},
	}
	uc.opts = append(uc.opts, checksumOpt...)
	return uc, nil
}

// printJSON writes v as one JSON document on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonError is the machine form of a failure.
type jsonError = frontend.JSONError

func newJSONError(ctx context.Context, err error) jsonError {
	return frontend.ErrorJSON(exitCodeFor(ctx, err), err)
}
