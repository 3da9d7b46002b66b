package frontend

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials/processcreds"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// The shared config and credentials files are read here rather than by aws-sdk-go-v2's config
// package: that package links the SDK's STS, SSO, SSO-OIDC and sign-in clients, whose code pages
// alone put the CLI about 1.7 MiB over its memory promise on a stream (BENCHMARKS.md). What it
// reads instead is what minio-go, linked anyway, and the SDK's small processcreds package give:
// static keys, credential_process, AWS IAM Identity Center (SSO) profiles from the token
// cache `aws sso login` writes, and roles assumed through STS AssumeRole (role.go).

// credentialTimeout bounds a credential_process, an SSO portal call, or a container or web
// identity credential request: nothing waits forever, not even for credentials. (A variable
// so a test can show the bound.)
var credentialTimeout = time.Minute

// processWaitDelay bounds the wait, once a credential_process has ended or been killed at
// credentialTimeout, for its output pipe to close: a child it left running holds the pipe open,
// and without a bound the SDK's provider would wait for that child however long it runs.
const processWaitDelay = time.Second

// boundedProcess builds the credential_process command as the SDK does (sh -c, or cmd.exe /C),
// with processWaitDelay.
type boundedProcess struct{ command string }

func (b boundedProcess) NewCommand(ctx context.Context) (*exec.Cmd, error) {
	cmd, err := processcreds.DefaultNewCommandBuilder{Args: []string{b.command}}.NewCommand(ctx)
	if err != nil {
		return nil, err
	}
	cmd.WaitDelay = processWaitDelay
	return cmd, nil
}

// sharedFiles are the shared config and credentials files, as the SDKs find them.
func sharedFiles() (config, credentials string) {
	config, credentials = os.Getenv("AWS_CONFIG_FILE"), os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if config == "" || credentials == "" {
		if home, err := os.UserHomeDir(); err == nil {
			if config == "" {
				config = filepath.Join(home, ".aws", "config")
			}
			if credentials == "" {
				credentials = filepath.Join(home, ".aws", "credentials")
			}
		}
	}
	return config, credentials
}

// sharedProfiles reads the shared config and credentials files once into their profiles,
// merged as the SDKs merge them: the config file's [default], then its [profile NAME] (a bare
// [NAME] there is not a profile to the SDKs), overridden key by key by the credentials file's
// [NAME]. A missing file counts as empty.
func sharedProfiles() (map[string]map[string]string, error) {
	configFile, credentialsFile := sharedFiles()
	profiles := map[string]map[string]string{}
	merge := func(name string, section map[string]string) {
		if profiles[name] == nil {
			profiles[name] = map[string]string{}
		}
		maps.Copy(profiles[name], section)
	}
	for i, path := range []string{configFile, credentialsFile} {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("shared config: %w", err)
		}
		sections := parseShared(string(data))
		if i == 1 { // the credentials file: every section is a profile
			for name, section := range sections {
				merge(name, section)
			}
			continue
		}
		if section, ok := sections["default"]; ok {
			merge("default", section)
		}
		for s, section := range sections {
			if name, ok := strings.CutPrefix(s, "profile "); ok {
				merge(name, section)
			}
		}
	}
	return profiles, nil
}

// parseShared reads a shared config or credentials file: sections of lower-cased keys. It
// follows the SDKs' format: full-line comments (# or ;), an inline comment only after
// whitespace, indented lines continuing the property above (a nested block, under a property
// with no value, is skipped: none of the keys read here is nested). It never fails: what it
// cannot read is left out, and a profile missing what it needs is reported by its caller.
func parseShared(data string) map[string]map[string]string {
	sections := map[string]map[string]string{}
	var cur map[string]string
	lastKey := ""
	for _, line := range strings.Split(data, "\n") {
		line = strings.TrimRight(line, "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';' {
			continue
		}
		if trimmed[0] == '[' {
			cur, lastKey = nil, ""
			end := strings.IndexByte(trimmed, ']')
			if end < 0 {
				continue // a malformed header: its keys belong to no profile
			}
			name := strings.Join(strings.Fields(trimmed[1:end]), " ")
			if cur = sections[name]; cur == nil {
				cur = map[string]string{}
				sections[name] = cur
			}
			continue
		}
		if cur == nil {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if lastKey != "" && cur[lastKey] != "" {
				cur[lastKey] += "\n" + trimComment(trimmed)
			}
			continue
		}
		k, v, ok := strings.Cut(trimmed, "=")
		if !ok {
			lastKey = ""
			continue
		}
		lastKey = strings.ToLower(strings.TrimSpace(k))
		cur[lastKey] = strings.TrimSpace(trimComment(v))
	}
	return sections
}

// trimComment cuts an inline comment: a # or ; that follows whitespace.
func trimComment(v string) string {
	for i := 1; i < len(v); i++ {
		if (v[i] == '#' || v[i] == ';') && (v[i-1] == ' ' || v[i-1] == '\t') {
			return v[:i]
		}
	}
	return v
}

// usesSSO reports an IAM Identity Center profile.
func usesSSO(props map[string]string) bool {
	return props["sso_role_name"] != "" || props["sso_account_id"] != "" || props["sso_session"] != "" || props["sso_start_url"] != ""
}

// profileCredentials resolves the named profile's keys: an assumed role, static keys, SSO, or
// credential_process, in the SDK's order. ok is false when the profile names no credentials at
// all. region signs an STS call; chain holds the profiles whose roles led here (role.go).
func profileCredentials(ctx context.Context, name string, profiles map[string]map[string]string, region string, chain []string) (keys Resolved, ok bool, err error) {
	props := profiles[name]
	if k := rolePropertyOf(props); k != "" {
		keys, err := roleCredentials(ctx, name, profiles, region, chain)
		return keys, err == nil, err
	}
	id, secret := props["aws_access_key_id"], props["aws_secret_access_key"]
	switch {
	case id != "" && secret != "":
		return Resolved{AccessKey: id, SecretKey: secret, SessionToken: props["aws_session_token"]}, true, nil
	case id != "":
		return keys, false, fmt.Errorf("profile %q has aws_access_key_id without aws_secret_access_key", name)
	case secret != "":
		return keys, false, fmt.Errorf("profile %q has aws_secret_access_key without aws_access_key_id", name)
	case usesSSO(props):
		if props["sso_role_name"] == "" {
			return keys, false, fmt.Errorf("profile %q: an SSO profile needs sso_role_name and sso_account_id (an sso-session alone gives no credentials)", name)
		}
		key := ssoKey{profile: name, account: props["sso_account_id"], role: props["sso_role_name"], session: props["sso_session"], startURL: props["sso_start_url"]}
		if keys, ok := fetchedKeys.get(key); ok {
			return keys, true, nil
		}
		p := &miniocreds.FileAWSCredentials{Profile: name}
		v, err := p.RetrieveWithCredContext(&miniocreds.CredContext{Client: &http.Client{Timeout: credentialTimeout}})
		if err != nil {
			return keys, false, fmt.Errorf("profile %q (SSO): %w", name, err)
		}
		keys = minioKeys(v)
		fetchedKeys.put(key, keys)
		return keys, true, nil
	case props["credential_process"] != "":
		key := processKey{command: props["credential_process"]}
		if keys, ok := fetchedKeys.get(key); ok {
			return keys, true, nil
		}
		ctx, cancel := context.WithTimeout(ctx, credentialTimeout)
		defer cancel()
		v, err := processcreds.NewProviderCommand(boundedProcess{props["credential_process"]}, func(o *processcreds.Options) {
			o.Timeout = credentialTimeout
		}).Retrieve(ctx)
		if err != nil && strings.Contains(err.Error(), "process output") {
			// The SDK's message quotes the output, which may hold the very secrets it failed to parse.
			return keys, false, fmt.Errorf("profile %q: credential_process: its output is not the credential JSON (Version 1, AccessKeyId, SecretAccessKey)", name)
		}
		if err != nil {
			return keys, false, fmt.Errorf("profile %q: credential_process: %w", name, err)
		}
		keys = Resolved{AccessKey: v.AccessKeyID, SecretKey: v.SecretAccessKey, SessionToken: v.SessionToken}
		if v.CanExpire {
			keys.Expires = v.Expires
		}
		fetchedKeys.put(key, keys)
		return keys, true, nil
	}
	return keys, false, nil
}

// processKey and ssoKey are what a credential_process run and an SSO profile's keys depend on
// (credCache).
type (
	processKey struct{ command string }
	ssoKey     struct{ profile, account, role, session, startURL string }
)

// The environment variables that point at ambient credentials: a Kubernetes service account's
// web identity, which the SDKs take before the default profile, and a container task's (ECS,
// EKS Pod Identity), which they take only when the default profile gives none.
var (
	webIdentityEnv = []string{"AWS_WEB_IDENTITY_TOKEN_FILE"}
	containerEnv   = []string{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"}
)

// ambientCredentials fetches the credentials the first set variable of env points at; never the
// EC2 instance metadata service, which a process off EC2 would wait on for nothing.
func ambientCredentials(env []string) (keys Resolved, ok bool, err error) {
	source := ""
	for _, name := range env {
		if os.Getenv(name) != "" {
			source = name
			break
		}
	}
	if source == "" {
		return keys, false, nil
	}
	key := ambientKey{}
	for i, name := range ambientVars {
		key.values[i] = os.Getenv(name)
	}
	if keys, ok := fetchedKeys.get(key); ok {
		return keys, true, nil
	}
	v, err := (&miniocreds.IAM{}).RetrieveWithCredContext(&miniocreds.CredContext{Client: &http.Client{Timeout: credentialTimeout}})
	if err != nil {
		return keys, false, fmt.Errorf("credentials from %s: %w", source, err)
	}
	keys = minioKeys(v)
	fetchedKeys.put(key, keys)
	return keys, true, nil
}

// ambientVars are what ambient credentials depend on; ambientKey holds their values (credCache).
var ambientVars = [...]string{"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"}

type ambientKey struct{ values [len(ambientVars)]string }

func minioKeys(v miniocreds.Value) Resolved {
	return Resolved{AccessKey: v.AccessKeyID, SecretKey: v.SecretAccessKey, SessionToken: v.SessionToken, Expires: v.Expiration}
}
