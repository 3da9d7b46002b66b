package frontend

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
)

// maxRoleChain bounds a chain of profiles whose source_profile assumes a role in turn.
const maxRoleChain = 8

// rolePropertyOf names the property that makes a profile's credentials come from STS, or "".
func rolePropertyOf(props map[string]string) string {
	for _, k := range []string{"role_arn", "source_profile", "credential_source", "web_identity_token_file", "login_session"} {
		if props[k] != "" {
			return k
		}
	}
	return ""
}

// roleCredentials assumes the named profile's role_arn through STS AssumeRole, signed with its
// source's keys: source_profile (that profile's credentials, which may assume a role in turn;
// the profile itself means its own static keys) or credential_source (Environment or
// EcsContainer). The STS endpoint is AWS_ENDPOINT_URL_STS, else the region's, as the SDKs pick.
// The call is bounded by credentialTimeout.
func roleCredentials(ctx context.Context, name string, profiles map[string]map[string]string, region string, chain []string) (Resolved, error) {
	props := profiles[name]
	refuse := func(format string, args ...any) (Resolved, error) {
		return Resolved{}, fmt.Errorf("profile %q: %s", name, fmt.Sprintf(format, args...))
	}
	switch {
	case props["web_identity_token_file"] != "":
		return refuse("web_identity_token_file in a profile is not read; set AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN in the environment instead")
	case props["login_session"] != "":
		return refuse("login_session (aws login) is not supported; use credential_process = aws configure export-credentials --profile %s --format process in a profile of its own", name)
	case props["mfa_serial"] != "":
		return refuse("mfa_serial: safeput cannot ask for an MFA code; use credential_process = aws configure export-credentials --profile %s --format process in a profile of its own", name)
	case props["role_arn"] == "":
		return refuse("source_profile or credential_source without role_arn")
	case props["source_profile"] != "" && props["credential_source"] != "":
		return refuse("sets both source_profile and credential_source; a role takes one source")
	case len(chain) >= maxRoleChain:
		return refuse("role chain longer than %d profiles: %s", maxRoleChain, strings.Join(append(chain, name), " -> "))
	}
	duration := 0
	if v := props["duration_seconds"]; v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d <= 0 {
			return refuse("duration_seconds %q: want a positive number of seconds", v)
		}
		duration = d
	}
	source, err := roleSource(ctx, name, profiles, region, chain)
	if err != nil {
		return Resolved{}, err
	}
	endpoint := stsEndpoint(region)
	key := roleKey{endpoint: endpoint, region: region, arn: props["role_arn"], session: props["role_session_name"],
		externalID: props["external_id"], duration: duration, source: source}
	if keys, ok := fetchedKeys.get(key); ok {
		return keys, nil
	}
	session := props["role_session_name"]
	if session == "" {
		session = "safeput-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	sts := &miniocreds.STSAssumeRole{STSEndpoint: endpoint, Options: miniocreds.STSAssumeRoleOptions{
		AccessKey: source.AccessKey, SecretKey: source.SecretKey, SessionToken: source.SessionToken,
		RoleARN: props["role_arn"], RoleSessionName: session, ExternalID: props["external_id"],
		DurationSeconds: duration, Location: region,
	}}
	v, err := sts.RetrieveWithCredContext(&miniocreds.CredContext{Client: &http.Client{Timeout: credentialTimeout}})
	if err == nil && (v.AccessKeyID == "" || v.SecretAccessKey == "") {
		err = errors.New("the answer holds no credentials")
	}
	if err != nil {
		return refuse("assuming role %s through STS at %s: %v", props["role_arn"], endpoint, err)
	}
	keys := minioKeys(v)
	fetchedKeys.put(key, keys)
	return keys, nil
}

// roleKey is what an AssumeRole call depends on (credCache).
type roleKey struct {
	endpoint, region, arn, session, externalID string
	duration                                   int
	source                                     Resolved
}

// credCache keeps keys that cost a call (STS, a credential_process, the SSO portal, a container's
// credentials endpoint) until shortly before they expire, so a process that resolves the same
// profile again (every C ABI open; the CLI's journal identity; a store renewing its keys) neither
// makes the call each time nor gets new keys each time (the C ABI shares one client per set of
// keys). Keys given with no expiry are kept, as the SDKs keep them.
type credCache struct {
	mu sync.Mutex
	m  map[any]cachedKeys // roleKey, processKey, ssoKey, ambientKey
}

type cachedKeys struct {
	keys      Resolved
	refreshAt time.Time // zero: no expiry given
}

// refreshBefore is how long before expiry cached keys are given up for new ones, long enough for
// a write started with them to finish; a quarter of what is left for keys that live shorter.
const refreshBefore = 15 * time.Minute

var fetchedKeys credCache

func (c *credCache) get(k any) (Resolved, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	if !ok || (!r.refreshAt.IsZero() && !time.Now().Before(r.refreshAt)) {
		return Resolved{}, false
	}
	return r.keys, true
}

// put keeps keys until shortly before keys.Expires (zero: for good). Keys already expired are
// not kept.
func (c *credCache) put(k any, keys Resolved) {
	if !keys.Expires.IsZero() && !time.Now().Before(keys.Expires) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[any]cachedKeys{}
	}
	c.m[k] = cachedKeys{keys: keys, refreshAt: renewAt(keys.Expires)}
}

// renewAt is when keys that expire at expires are given up for new ones: refreshBefore ahead,
// or a quarter of what is left for keys that live shorter. Zero (never) for keys without expiry.
func renewAt(expires time.Time) time.Time {
	if expires.IsZero() {
		return time.Time{}
	}
	return expires.Add(-min(refreshBefore, time.Until(expires)/4))
}

func (c *credCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}

// roleSource resolves the keys that sign the named profile's AssumeRole.
func roleSource(ctx context.Context, name string, profiles map[string]map[string]string, region string, chain []string) (Resolved, error) {
	props := profiles[name]
	if src := props["source_profile"]; src != "" {
		if src == name {
			// The profile's own static keys sign its role, as in the SDKs.
			id, secret := props["aws_access_key_id"], props["aws_secret_access_key"]
			if id == "" || secret == "" {
				return Resolved{}, fmt.Errorf("profile %q: source_profile is the profile itself, which has no aws_access_key_id and aws_secret_access_key", name)
			}
			return Resolved{AccessKey: id, SecretKey: secret, SessionToken: props["aws_session_token"]}, nil
		}
		if slices.Contains(chain, src) {
			return Resolved{}, fmt.Errorf("profile %q: source_profile loops: %s", name, strings.Join(append(chain, name, src), " -> "))
		}
		if _, found := profiles[src]; !found {
			return Resolved{}, fmt.Errorf("profile %q: source_profile %q is not in the shared config or credentials files", name, src)
		}
		keys, ok, err := profileCredentials(ctx, src, profiles, region, append(chain, name))
		if err == nil && !ok {
			err = fmt.Errorf("profile %q: source_profile %q has no credentials", name, src)
		}
		return keys, err
	}
	switch cs := props["credential_source"]; cs {
	case "Environment":
		id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		if id == "" || secret == "" {
			return Resolved{}, fmt.Errorf("profile %q: credential_source Environment, but AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set", name)
		}
		return Resolved{AccessKey: id, SecretKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN")}, nil
	case "EcsContainer":
		keys, ok, err := ambientCredentials(containerEnv)
		if err == nil && !ok {
			err = fmt.Errorf("profile %q: credential_source EcsContainer, but neither %s is set", name, strings.Join(containerEnv, " nor "))
		}
		return keys, err
	case "Ec2InstanceMetadata":
		return Resolved{}, fmt.Errorf("profile %q: credential_source Ec2InstanceMetadata: safeput does not call the instance metadata service; use credential_process = aws configure export-credentials --profile %s --format process in a profile of its own", name, name)
	case "":
		return Resolved{}, fmt.Errorf("profile %q: role_arn without source_profile or credential_source", name)
	default:
		return Resolved{}, fmt.Errorf("profile %q: credential_source %q: want Environment or EcsContainer", name, cs)
	}
}

// stsEndpoint is where AssumeRole goes: AWS_ENDPOINT_URL_STS, else the region's STS endpoint
// (the SDKs' default since regional endpoints replaced the global one).
func stsEndpoint(region string) string {
	if e := os.Getenv("AWS_ENDPOINT_URL_STS"); e != "" {
		return e
	}
	domain := "amazonaws.com"
	if strings.HasPrefix(region, "cn-") {
		domain = "amazonaws.com.cn"
	}
	return "https://sts." + region + "." + domain
}
