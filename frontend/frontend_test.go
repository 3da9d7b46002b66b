package frontend

import (
	"errors"
	"strings"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
)

// isolate clears what the SDK's default chain reads from the environment and the user's files,
// and disables the instance metadata service, which off EC2 answers nothing.
func isolate(t *testing.T) {
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_CA_BUNDLE",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("HOME", t.TempDir()) // the SSO token cache, ~/.aws
	resetConfigs()
	t.Cleanup(resetConfigs)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/safeput-test-config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/safeput-test-credentials")
}

func TestResolveSources(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ENDPOINT_URL", "http://generic:1")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://s3:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "envkey")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	r, err := Conn{}.Resolve()
	if err != nil || r.Endpoint != "http://s3:1" || r.Region != "us-east-1" || r.AccessKey != "envkey" {
		t.Fatalf("Resolve = %+v, %v; want the S3 endpoint, us-east-1 and the environment's keys", r, err)
	}
	// Given keys are a pair: a given access key never meets the environment's secret.
	if _, err := (Conn{AccessKey: "given"}).Resolve(); err == nil || !strings.Contains(err.Error(), "without a secret key") {
		t.Fatalf("half a given pair: %v; want the missing secret reported", err)
	}
	if _, err := (Conn{Endpoint: "ftp://x"}).Resolve(); err == nil {
		t.Fatal("ftp endpoint accepted")
	}
}

// When the flags and the environment give keys, region and endpoint, Resolve does not load the
// SDK's configuration, and gives what the SDK's precedence would: the environment's over the
// profile AWS_PROFILE names.
func TestFlagsAndEnvironmentAsTheSDKWould(t *testing.T) {
	isolate(t)
	sharedFilesIn(t, t.TempDir(), "[profile p]\nregion = eu-west-3\nendpoint_url = http://profile:1\n",
		"[p]\naws_access_key_id = pk\naws_secret_access_key = ps\n")
	t.Setenv("AWS_PROFILE", "p")
	t.Setenv("AWS_ACCESS_KEY_ID", "envkey")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	t.Setenv("AWS_REGION", "ap-south-2")
	t.Setenv("AWS_ENDPOINT_URL", "http://env:1")
	r, err := Conn{}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(t.Context(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	v, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil || r.AccessKey != v.AccessKeyID || r.SecretKey != v.SecretAccessKey || r.Region != cfg.Region || r.Endpoint != *cfg.BaseEndpoint {
		t.Fatalf("Resolve %+v; the SDK: keys %s, region %s, endpoint %s, %v", r, v.AccessKeyID, cfg.Region, *cfg.BaseEndpoint, err)
	}
	if r.AccessKey != "envkey" || r.Region != "ap-south-2" || r.Endpoint != "http://env:1" {
		t.Fatalf("Resolve %+v; want the environment's keys, region and endpoint", r)
	}
	// --profile outranks the environment's keys: the profile's, through the SDK.
	if r, err = (Conn{Profile: "p"}).Resolve(); err != nil || r.AccessKey != "pk" || r.Region != "ap-south-2" {
		t.Fatalf("--profile p: %+v, %v; want the profile's keys, the environment's region", r, err)
	}
}

func TestMissingCredentialsNamesTheCallersFields(t *testing.T) {
	isolate(t)
	_, err := Conn{KeysHint: "access_key and secret_key"}.Resolve()
	if err == nil || !strings.Contains(err.Error(), "access_key and secret_key") {
		t.Fatalf("err %v; want it to name the caller's fields", err)
	}
	if _, err := NewStore(Conn{Backend: "gcs", AccessKey: "a", SecretKey: "s"}); err == nil {
		t.Fatal("backend gcs accepted")
	}
}

func TestErrorJSON(t *testing.T) {
	se := &sperrors.Error{Kind: sperrors.Integrity, Op: "UploadPart", Code: "BadDigest", StatusCode: 400, UploadID: "u1"}
	je := ErrorJSON(KindExit(se.Kind), errors.Join(se))
	if je.ExitCode != ExitIntegrity || je.Kind != "integrity" || je.Code != "BadDigest" || je.HTTP != 400 || je.UploadID != "u1" {
		t.Fatalf("%+v; want the classified fields", je)
	}
	if strings.Contains(ErrorJSON(ExitUsage, errors.New("a\nb")).Error, "\n") {
		t.Fatal("error text spans lines")
	}
	// An error nobody classified still gets the kind its exit code stands for.
	for code, kind := range map[int]string{ExitInternal: "internal", ExitUsage: "permanent", ExitTransient: "transient", ExitCanceled: "canceled"} {
		if je := ErrorJSON(code, errors.New("plain")); je.Kind != kind {
			t.Errorf("exit %d: kind %q; want %q", code, je.Kind, kind)
		}
	}
}
