package frontend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/testcerts"
)

// The CA bundle comes from the flag, else AWS_CA_BUNDLE, else ca_bundle in the profile (whoever
// gave the keys); under InsecureSkipVerify, or for a plain http:// endpoint, only the flag counts. A file that cannot be read or
// holds no certificate is an error naming it.
func TestCABundleSources(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	ca, err := testcerts.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "ca.pem")
	junk := filepath.Join(dir, "junk.pem")
	// The SDK reads the environment's and the profile's bundles as it loads, so they exist.
	fromDefault, fromP, fromEnv := filepath.Join(dir, "default.pem"), filepath.Join(dir, "p.pem"), filepath.Join(dir, "env.pem")
	for p, b := range map[string][]byte{good: ca.PEM, junk: []byte("nothing"), fromDefault: ca.PEM, fromP: ca.PEM, fromEnv: ca.PEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sharedFilesIn(t, dir, "[default]\nca_bundle = "+fromDefault+"\n[profile p]\nca_bundle = "+fromP+"\n", "")
	base := Conn{Endpoint: "https://127.0.0.1:1", AccessKey: "a", SecretKey: "s", Backend: "aws"}
	resolve := func(c Conn) string {
		t.Helper()
		r, err := c.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		return r.CABundle
	}
	if got := resolve(base); got != fromDefault {
		t.Errorf("default profile: %q", got)
	}
	p := base
	p.Profile = "p"
	if got := resolve(p); got != fromP {
		t.Errorf("named profile: %q", got)
	}
	t.Setenv("AWS_CA_BUNDLE", fromEnv)
	if got := resolve(base); got != fromEnv {
		t.Errorf("environment: %q", got)
	}
	flag := base
	flag.CABundle = good
	if got := resolve(flag); got != good {
		t.Errorf("flag: %q", got)
	}
	insecure := base
	insecure.InsecureSkipVerify = true
	if got := resolve(insecure); got != "" {
		t.Errorf("insecure takes %q from the environment", got)
	}
	// A plain-HTTP endpoint makes no TLS: the environment's and the profile's bundles are not
	// read for it; the flag's still is (and is checked).
	plain := base
	plain.Endpoint = "http://127.0.0.1:1"
	if got := resolve(plain); got != "" {
		t.Errorf("plain HTTP takes %q from the environment", got)
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	if got := resolve(plain); got != "" {
		t.Errorf("plain HTTP takes %q from the profile", got)
	}
	t.Setenv("AWS_CA_BUNDLE", fromEnv)
	plain.CABundle = good
	if got := resolve(plain); got != good {
		t.Errorf("plain HTTP with the flag: %q", got)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
	viaEnv := base
	viaEnv.Endpoint = ""
	if got := resolve(viaEnv); got != "" {
		t.Errorf("an http endpoint from AWS_ENDPOINT_URL takes %q from the environment", got)
	}
	t.Setenv("AWS_ENDPOINT_URL", "")

	for _, backend := range []string{"aws", "minio"} {
		c := flag
		c.Backend = backend
		if _, err := NewStore(c); err != nil {
			t.Errorf("%s: a good bundle: %v", backend, err)
		}
		for file, want := range map[string]string{junk: "holds no PEM certificate", filepath.Join(dir, "none.pem"): "no such file"} {
			c.CABundle = file
			if _, err := NewStore(c); err == nil || !strings.Contains(err.Error(), "CA bundle "+file) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: bundle %s: %v, want an error naming it (%s)", backend, file, err, want)
			}
		}
	}
}

// A plain-HTTP endpoint makes no TLS, so the CA bundle AWS_CA_BUNDLE names is neither read nor
// parsed for it, even when no region is given (the SDK's configuration, which would parse it,
// is then not loaded: the region comes from the shared files alone, with the SDK's precedence).
// A bundle that cannot be read, or holds no certificate, does not stop such a put; for an https
// endpoint it still does.
func TestPlainHTTPIgnoresTheEnvironmentsCABundle(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("nothing"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "envkey")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	plain := Conn{Endpoint: "http://127.0.0.1:1", Backend: "aws"}
	for _, bundle := range []string{filepath.Join(dir, "none.pem"), junk} {
		t.Setenv("AWS_CA_BUNDLE", bundle)
		sharedFilesIn(t, t.TempDir(), "", "") // no files
		r, err := plain.Resolve()
		if err != nil || r.Region != "us-east-1" || r.CABundle != "" || r.AccessKey != "envkey" {
			t.Fatalf("bundle %s: Resolve = %+v, %v; want us-east-1, no bundle, the environment's keys", bundle, r, err)
		}
		for _, backend := range []string{"aws", "minio"} {
			c := plain
			c.Backend = backend
			if _, err := NewStore(c); err != nil {
				t.Errorf("bundle %s, %s: %v", bundle, backend, err)
			}
		}
		// The region of the profile in effect, as the SDK would take it.
		sharedFilesIn(t, t.TempDir(), "[default]\nregion = eu-west-3\n[profile p]\nregion = ap-south-1\n", "")
		if r, err := plain.Resolve(); err != nil || r.Region != "eu-west-3" {
			t.Errorf("bundle %s, the default profile: Resolve = %+v, %v; want its region", bundle, r, err)
		}
		t.Setenv("AWS_PROFILE", "p")
		if r, err := plain.Resolve(); err != nil || r.Region != "ap-south-1" {
			t.Errorf("bundle %s, AWS_PROFILE: Resolve = %+v, %v; want its region", bundle, r, err)
		}
		t.Setenv("AWS_REGION", "us-west-2")
		if r, err := plain.Resolve(); err != nil || r.Region != "us-west-2" {
			t.Errorf("bundle %s, AWS_REGION: Resolve = %+v, %v; want it over the profile's", bundle, r, err)
		}
		t.Setenv("AWS_REGION", "")
		t.Setenv("AWS_PROFILE", "")

		// An https endpoint uses the bundle: one that cannot be used is still an error.
		tls := plain
		tls.Endpoint = "https://127.0.0.1:1"
		if _, err := NewStore(tls); err == nil {
			t.Errorf("bundle %s: an https endpoint took it without an error", bundle)
		}
	}
}

// BenchmarkPlainHTTPStoreWithCABundle is the set-up of a store at a plain-HTTP endpoint with the
// keys in the environment, no region, and AWS_CA_BUNDLE naming the system's bundle (exported for
// other endpoints), as the CLI does once per run: none of the bundle's certificates is parsed.
func BenchmarkPlainHTTPStoreWithCABundle(b *testing.B) {
	const bundle = "/etc/ssl/certs/ca-certificates.crt"
	if _, err := os.Stat(bundle); err != nil {
		b.Skip("no system CA bundle at " + bundle)
	}
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_PROFILE": "", "AWS_CA_BUNDLE": bundle, "AWS_CONFIG_FILE": "/nonexistent/c", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/c",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": "", "AWS_EC2_METADATA_DISABLED": "true"} {
		b.Setenv(k, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		resetConfigs()
		if _, err := NewStore(Conn{Endpoint: "http://127.0.0.1:1", Backend: "aws"}); err != nil {
			b.Fatal(err)
		}
	}
}
