package frontend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/store/storetest/testcerts"
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
