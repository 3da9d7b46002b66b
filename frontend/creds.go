package frontend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/processcreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/smithy-go/logging"
)

// Credentials, region and endpoint come from aws-sdk-go-v2's config package, the default chain
// every AWS tool follows: the environment, the shared config and credentials files with every
// profile form (source_profile, credential_source, SSO and sso_session, web identity,
// credential_process), container credentials, and the EC2 instance metadata service (IMDSv2).
// Hand-written resolution drifted from those conventions and refused IMDS outright.
//
// The cost: the package links the SDK's STS, SSO, SSO-OIDC and sign-in clients, whose package
// initialisation allocates at start (GODEBUG=inittrace=1 lists it) and whose pages count as
// touched, so the binary and the CLI's peak RSS grow, even with the configuration not loaded when
// the flags and the environment give everything (conn.go). The CLI's peak RSS on a stream against
// its promise is BENCHMARKS.md's "Memory of the CLI on a stream" (`MEMORY_ONLY=1 bash
// scripts/bench.sh`). What this buys is every credential source AWS documents, EC2 instance roles
// included, kept in step with AWS by AWS.

// credentialTimeout bounds one resolution of credentials (a credential_process, an STS, SSO,
// container or instance metadata call): nothing waits forever, not even for credentials. (A
// variable so a test can show the bound.)
var credentialTimeout = time.Minute

// processWaitDelay is how long past credentialTimeout a resolution is waited for. The SDK's
// credential_process provider waits for the process's output pipe to close, which a child it
// left running holds open; past this the call is abandoned (its goroutine ends with the child).
const processWaitDelay = time.Second

// sdkConfigs keeps the SDK configuration (and so its credentials cache) per environment, so a
// process that resolves the same connection again (every C ABI open; the CLI's journal identity)
// neither calls STS, a credential_process or IMDS each time nor gets new keys each time (the C
// ABI shares one client per set of keys).
var sdkConfigs struct {
	mu sync.Mutex
	m  map[configKey]aws.Config
}

// maxConfigs bounds sdkConfigs; past it the map starts over (a process that keeps changing its
// environment is rare, and only loses cached keys).
const maxConfigs = 16

// configKey is what a loaded configuration depends on: the profile and region given, every
// AWS_ variable, the home directory, and the shared files' size and time (so an edited file is
// read again).
type configKey struct {
	profile, region, env, home, files string
}

func currentConfigKey(profile, region string) configKey {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	slices.Sort(env)
	home, _ := os.UserHomeDir()
	var files strings.Builder
	for _, path := range sharedFiles() {
		if fi, err := os.Stat(path); err == nil {
			fmt.Fprintf(&files, "%s:%d:%d;", path, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return configKey{profile: profile, region: region, env: strings.Join(env, "\x00"), home: home, files: files.String()}
}

// sharedFiles are the shared config and credentials files the SDK reads.
func sharedFiles() []string {
	files := []string{os.Getenv("AWS_CONFIG_FILE"), os.Getenv("AWS_SHARED_CREDENTIALS_FILE")}
	if files[0] == "" {
		files[0] = config.DefaultSharedConfigFilename()
	}
	if files[1] == "" {
		files[1] = config.DefaultSharedCredentialsFilename()
	}
	return files
}

func resetConfigs() {
	sdkConfigs.mu.Lock()
	defer sdkConfigs.mu.Unlock()
	sdkConfigs.m = nil
}

// loadConfig loads the SDK's default configuration for profile (c.Profile; "" lets AWS_PROFILE
// or default be used) and region (c.Region; "" lets the environment or the profile give it).
func loadConfig(ctx context.Context, profile, region string) (aws.Config, error) {
	k := currentConfigKey(profile, region)
	sdkConfigs.mu.Lock()
	defer sdkConfigs.mu.Unlock()
	if cfg, ok := sdkConfigs.m[k]; ok {
		return cfg, nil
	}
	opts := []func(*config.LoadOptions) error{
		// A BuildableClient keeps the IMDS client's own short dial and response timeouts (off EC2
		// nothing answers 169.254.169.254); the overall timeout bounds STS, SSO and container calls.
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(credentialTimeout)),
		config.WithProcessCredentialOptions(func(o *processcreds.Options) { o.Timeout = credentialTimeout }),
		// An STS call needs a region; the one AWS tools assume when none is set.
		config.WithDefaultRegion(defaultRegion),
		// The SDK's own warnings (an IMDSv1 fallback, say) would land on the CLI's stderr and a C
		// caller's; what matters reaches the error.
		config.WithLogger(logging.Nop{}),
	}
	if profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(profile))
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return cfg, configError(err)
	}
	if sdkConfigs.m == nil || len(sdkConfigs.m) >= maxConfigs {
		sdkConfigs.m = map[configKey]aws.Config{}
	}
	sdkConfigs.m[k] = cfg
	return cfg, nil
}

// configError words the SDK's errors about the shared files for a user.
func configError(err error) error {
	var missing config.SharedConfigProfileNotExistError
	if errors.As(err, &missing) {
		files := missing.Filename
		if len(files) == 0 {
			files = sharedFiles()
		}
		return fmt.Errorf("profile %q: not in the shared config or credentials files (%s)", missing.Profile, strings.Join(files, ", "))
	}
	return fmt.Errorf("shared config: %w", err)
}

// sources returns the environment and shared configuration the SDK read.
func sources(cfg aws.Config) (env config.EnvConfig, shared config.SharedConfig) {
	for _, s := range cfg.ConfigSources {
		switch v := s.(type) {
		case config.EnvConfig:
			env = v
		case config.SharedConfig:
			shared = v
		}
	}
	return env, shared
}

// describeSource names the credential source the SDK's chain picked for cfg, in the chain's own
// order (config.resolveCredentialChain), for an error that says where keys were sought. It never
// names a secret.
func describeSource(cfg aws.Config, profileGiven bool) string {
	env, shared := sources(cfg)
	switch {
	case profileGiven:
	case env.Credentials.HasKeys():
		return "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	case env.WebIdentityTokenFilePath != "":
		return fmt.Sprintf("web identity (AWS_WEB_IDENTITY_TOKEN_FILE %s, role %s) through STS", env.WebIdentityTokenFilePath, env.RoleARN)
	}
	return describeProfile(env, &shared)
}

func describeProfile(env config.EnvConfig, sh *config.SharedConfig) string {
	name := fmt.Sprintf("profile %q", sh.Profile)
	var base string
	switch {
	case sh.Source != nil:
		base = describeProfile(env, sh.Source)
	case sh.Credentials.HasKeys():
		base = name + " static keys"
	case sh.CredentialSource != "":
		base = fmt.Sprintf("%s credential_source %s", name, sh.CredentialSource)
	case sh.WebIdentityTokenFile != "":
		return fmt.Sprintf("%s web identity (web_identity_token_file %s, role %s) through STS", name, sh.WebIdentityTokenFile, sh.RoleARN)
	case sh.SSOSession != nil || sh.SSOAccountID != "" || sh.SSORoleName != "" || sh.SSOStartURL != "":
		base = name + " SSO (the token `aws sso login` caches)"
	case sh.LoginSession != "":
		base = name + " login_session (the token `aws login` caches)"
	case sh.CredentialProcess != "":
		base = name + " credential_process"
	case env.ContainerCredentialsRelativePath != "":
		base = "container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)"
	case env.ContainerCredentialsEndpoint != "":
		base = "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI " + env.ContainerCredentialsEndpoint + ")"
	default:
		base = "the EC2 instance metadata service"
		switch {
		case env.EC2IMDSClientEnableState == imds.ClientDisabled:
			base += " (disabled by AWS_EC2_METADATA_DISABLED)"
		case env.EC2IMDSEndpoint != "":
			base += " at " + env.EC2IMDSEndpoint
		}
		if sh.Profile != "" {
			base = fmt.Sprintf("%s (%s gives no credentials)", base, name)
		}
	}
	if sh.RoleARN != "" {
		return fmt.Sprintf("%s role %s assumed through STS with %s", name, sh.RoleARN, base)
	}
	return base
}

// retrieve asks p for keys within credentialTimeout (plus processWaitDelay for a
// credential_process whose child holds its output open), and words the error without a secret.
func retrieve(ctx context.Context, p aws.CredentialsProvider) (aws.Credentials, error) {
	ctx, cancel := context.WithTimeout(ctx, credentialTimeout)
	defer cancel()
	type result struct {
		v   aws.Credentials
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := p.Retrieve(ctx)
		done <- result{v, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-ctx.Done():
		t := time.NewTimer(processWaitDelay)
		defer t.Stop()
		select {
		case res = <-done:
		case <-t.C:
			return aws.Credentials{}, fmt.Errorf("no answer within %s", credentialTimeout)
		}
	}
	if res.err != nil && strings.Contains(res.err.Error(), "process output") {
		// The SDK's message quotes the output, which may hold the very secrets it failed to parse.
		return aws.Credentials{}, errors.New("credential_process: its output is not the credential JSON (Version 1, AccessKeyId, SecretAccessKey)")
	}
	if res.err == nil && (res.v.AccessKeyID == "" || res.v.SecretAccessKey == "") {
		res.err = errors.New("the answer holds no keys")
	}
	return res.v, res.err
}
