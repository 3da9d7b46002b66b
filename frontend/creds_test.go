package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/safeput/safeput/storetest/s3test"
	"github.com/safeput/safeput/writer"
)

// imdsEmulator is an EC2 instance metadata service (IMDSv2) on loopback: a session token from
// PUT /latest/api/token, then the instance role's name and its keys, which expire life after
// each fetch, and the instance's identity document (its region). Every metadata GET must carry the token.
type imdsEmulator struct {
	accessKey, secretKey, region string
	life                         time.Duration

	mu        sync.Mutex
	requests  int // every request, answered or not
	tokens    int // PUT /latest/api/token
	fetches   int // GETs of the role's keys
	untokened int // metadata GETs without the token
}

const imdsRole = "safeput-test-role"

func (m *imdsEmulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
		if r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds") == "" {
			http.Error(w, "no TTL", http.StatusBadRequest)
			return
		}
		m.tokens++
		w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
		_, _ = io.WriteString(w, "imds-session-token")
		return
	}
	if r.Header.Get("X-Aws-Ec2-Metadata-Token") != "imds-session-token" {
		m.untokened++
		http.Error(w, "IMDSv2 only", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/latest/meta-data/iam/security-credentials/":
		_, _ = io.WriteString(w, imdsRole+"\n")
	case "/latest/meta-data/iam/security-credentials/" + imdsRole:
		m.fetches++
		_ = json.NewEncoder(w).Encode(map[string]string{
			"Code": "Success", "Type": "AWS-HMAC", "LastUpdated": time.Now().UTC().Format(time.RFC3339),
			"AccessKeyId": m.accessKey, "SecretAccessKey": m.secretKey, "Token": "",
			"Expiration": time.Now().Add(m.life).UTC().Format(time.RFC3339),
		})
	case "/latest/dynamic/instance-identity/document":
		_ = json.NewEncoder(w).Encode(map[string]string{"region": m.region, "instanceId": "i-0123"})
	default:
		http.NotFound(w, r)
	}
}

func (m *imdsEmulator) counts() (requests, tokens, fetches, untokened int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests, m.tokens, m.fetches, m.untokened
}

// serveIMDS starts m and points AWS_EC2_METADATA_SERVICE_ENDPOINT at it, with IMDS enabled.
func serveIMDS(t *testing.T, m *imdsEmulator) {
	t.Helper()
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
}

// With nothing configured, the keys and the region are the EC2 instance role's, fetched over
// IMDSv2 (a token first, then every GET with it).
func TestIMDSCredentials(t *testing.T) {
	isolate(t)
	m := &imdsEmulator{accessKey: "imdskey", secretKey: "imdssecret", region: "eu-north-1", life: time.Hour}
	serveIMDS(t, m)
	r, err := Conn{}.Resolve()
	if err != nil || r.AccessKey != "imdskey" || r.SecretKey != "imdssecret" || r.Region != "eu-north-1" || r.Expires.IsZero() || r.creds == nil {
		t.Fatalf("IMDS: %+v, %v; want the role's keys, with their expiry, and the instance's region", r, err)
	}
	if _, tokens, fetches, untokened := m.counts(); tokens == 0 || fetches != 1 || untokened != 0 {
		t.Errorf("IMDS saw %d token PUTs, %d key fetches, %d GETs without the token; want IMDSv2 and one fetch", tokens, fetches, untokened)
	}
	// A region configured wins over the instance's.
	t.Setenv("AWS_REGION", "ap-east-1")
	if r, err = (Conn{}).Resolve(); err != nil || r.Region != "ap-east-1" || r.AccessKey != "imdskey" {
		t.Fatalf("IMDS with AWS_REGION: %+v, %v", r, err)
	}
}

// AWS_EC2_METADATA_DISABLED=true keeps the instance metadata service from being asked at all;
// the error names what was tried and why it gave nothing.
func TestIMDSDisabled(t *testing.T) {
	isolate(t)
	m := &imdsEmulator{accessKey: "imdskey", secretKey: "imdssecret", life: time.Hour}
	serveIMDS(t, m)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	_, err := Conn{KeysHint: "--access-key and --secret-key"}.Resolve()
	if err == nil || !strings.Contains(err.Error(), "missing credentials: set --access-key and --secret-key") ||
		!strings.Contains(err.Error(), "instance metadata service (disabled by AWS_EC2_METADATA_DISABLED)") {
		t.Fatalf("IMDS disabled: %v; want the missing credentials, IMDS named as disabled", err)
	}
	if n, _, _, _ := m.counts(); n != 0 {
		t.Errorf("IMDS got %d requests while disabled", n)
	}
}

// Off EC2 nothing answers the instance metadata service: the attempt is bounded, whether the
// address refuses connections or swallows them.
func TestIMDSOffEC2IsBounded(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	hole, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		_ = hole.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	for _, tc := range []struct {
		name, endpoint string
		bound          time.Duration
	}{
		{"closed port", "http://" + closedAddr, 8 * time.Second},
		{"black hole", "http://" + hole.Addr().String(), 10 * time.Second},
	} {
		resetConfigs()
		t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", tc.endpoint)
		start := time.Now()
		_, err := Conn{}.Resolve()
		took := time.Since(start)
		t.Logf("%s: gave up after %s", tc.name, took.Round(time.Millisecond))
		if err == nil || !strings.Contains(err.Error(), "the default chain ended at the EC2 instance metadata service at "+tc.endpoint) {
			t.Errorf("%s: %v; want the missing credentials, naming the metadata endpoint", tc.name, err)
		}
		if took > tc.bound {
			t.Errorf("%s: gave up after %s, want at most %s", tc.name, took, tc.bound)
		}
	}
}

// stsWebIdentity answers AssumeRoleWithWebIdentity (unsigned: the token is the proof) with keys,
// and records each form.
type stsWebIdentity struct {
	mu    sync.Mutex
	forms []map[string]string
	auth  []string
}

func (s *stsWebIdentity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	_ = r.ParseForm()
	form := map[string]string{}
	for _, kv := range strings.Split(string(body), "&") {
		k, v, _ := strings.Cut(kv, "=")
		form[k] = v
	}
	s.mu.Lock()
	s.forms = append(s.forms, form)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	_, _ = fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>`+
		`<Credentials><AccessKeyId>webkey</AccessKeyId><SecretAccessKey>websecret</SecretAccessKey><SessionToken>webtoken</SessionToken>`+
		`<Expiration>%s</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
}

// A Kubernetes service account's web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN), and
// the same in a profile (web_identity_token_file), give the keys STS answers for the token.
func TestWebIdentity(t *testing.T) {
	isolate(t)
	sts := &stsWebIdentity{}
	srv := httptest.NewServer(sts)
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_STS", srv.URL)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("the-jwt"), 0o600); err != nil {
		t.Fatal(err)
	}
	sharedFilesIn(t, dir, "[profile web]\nrole_arn = arn:aws:iam::1:role/fromprofile\nweb_identity_token_file = "+tokenFile+"\n", "")
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/web")
	t.Setenv("AWS_ROLE_SESSION_NAME", "pod")
	r, err := Conn{}.Resolve()
	if err != nil || r.AccessKey != "webkey" || r.SecretKey != "websecret" || r.SessionToken != "webtoken" || r.Expires.IsZero() {
		t.Fatalf("web identity: %+v, %v", r, err)
	}
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
	t.Setenv("AWS_ROLE_ARN", "")
	if r, err = (Conn{Profile: "web"}).Resolve(); err != nil || r.AccessKey != "webkey" {
		t.Fatalf("web identity in a profile: %+v, %v", r, err)
	}
	sts.mu.Lock()
	defer sts.mu.Unlock()
	if len(sts.forms) != 2 {
		t.Fatalf("%d STS calls, want 2", len(sts.forms))
	}
	for i, want := range []string{"arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fweb", "arn%3Aaws%3Aiam%3A%3A1%3Arole%2Ffromprofile"} {
		f := sts.forms[i]
		if f["Action"] != "AssumeRoleWithWebIdentity" || f["WebIdentityToken"] != "the-jwt" || f["RoleArn"] != want || sts.auth[i] != "" {
			t.Errorf("call %d: form %v, Authorization %q; want an unsigned AssumeRoleWithWebIdentity for %s with the token", i, f, sts.auth[i], want)
		}
	}
	if sts.forms[0]["RoleSessionName"] != "pod" {
		t.Errorf("RoleSessionName %q, want AWS_ROLE_SESSION_NAME's", sts.forms[0]["RoleSessionName"])
	}
}

// slowReader hands out data at about rate bytes a second, so an upload outlasts keys that
// expire within it.
type slowReader struct {
	r    io.Reader
	rate int
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(p) > s.rate/40 {
		p = p[:s.rate/40]
	}
	time.Sleep(25 * time.Millisecond)
	return s.r.Read(p)
}

// An EC2 instance role's keys (the server's own, handed out by the IMDSv2 emulator) put an object
// that lands whole, through both adapters (one server after another: the environment is the process's); the keys expire mid-upload and are fetched again
// from IMDS, and the upload goes on.
func TestIMDSPutRenewsMidUpload(t *testing.T) {
	s3test.ForEachSerial(t, func(t *testing.T, srv s3test.Server) {
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				testIMDSPut(t, srv, backend)
			})
		}
	})
}

func testIMDSPut(t *testing.T, srv s3test.Server, backend string) {
	bucket := s3test.NewBucket(t, srv)
	isolate(t)
	// Keys for 3 s (RFC 3339 keeps whole seconds: 2 to 3), due for renewal a quarter early; the
	// upload takes about 4 s.
	m := &imdsEmulator{accessKey: srv.AccessKey, secretKey: srv.SecretKey, region: srv.Region, life: 3 * time.Second}
	serveIMDS(t, m)
	st, err := NewStore(Conn{Endpoint: srv.Endpoint, Backend: backend, PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	data := s3test.RandomBytes(16 << 20)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := writer.Upload(ctx, st, bucket, "imds.bin", &slowReader{r: bytes.NewReader(data), rate: 4 << 20},
		func(o *writer.Options) { o.PartSize = 5 << 20; o.Concurrency = 2 })
	if err != nil {
		t.Fatalf("upload with instance role keys: %v", err)
	}
	if res.Size != int64(len(data)) {
		t.Errorf("result size %d, want %d", res.Size, len(data))
	}
	if got := s3test.ReadAll(t, srv, bucket, "imds.bin"); !bytes.Equal(got, data) {
		t.Fatalf("object read back differs (%d bytes, want %d)", len(got), len(data))
	}
	_, _, fetches, untokened := m.counts()
	if fetches < 2 || untokened != 0 {
		t.Errorf("IMDS key fetches %d (GETs without the token %d); want the keys fetched again mid-upload over IMDSv2", fetches, untokened)
	}
	t.Logf("%s: %d key fetches from IMDS over the upload (%v)", backend, fetches, time.Since(t0))
}

// An IAM Identity Center profile (sso_session) signs in with the token `aws sso login` cached
// and gets the role's keys from the SSO portal (AWS_ENDPOINT_URL_SSO: a local stand-in).
func TestSSOSession(t *testing.T) {
	isolate(t)
	home := os.Getenv("HOME")
	var calls []string
	portal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.URL.Path+"?"+r.URL.RawQuery+" "+r.Header.Get("X-Amz-Sso_bearer_token"))
		_, _ = fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":"ssokey","secretAccessKey":"ssosecret","sessionToken":"ssotoken","expiration":%d}}`,
			time.Now().Add(time.Hour).UnixMilli())
	}))
	defer portal.Close()
	t.Setenv("AWS_ENDPOINT_URL_SSO", portal.URL)
	cache := filepath.Join(home, ".aws", "sso", "cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	// The SDK names the cache file by the SHA-1 of the session's name ("corp").
	token := `{"accessToken":"portal-token","expiresAt":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","region":"us-east-1","startUrl":"https://x.awsapps.com/start"}`
	if err := os.WriteFile(filepath.Join(cache, "ee0bfd2552fbd840c02cc48b6e823320543c450f.json"), []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	sharedFilesIn(t, t.TempDir(), "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = Writer\nregion = eu-west-1\n"+
		"[sso-session corp]\nsso_region = us-east-1\nsso_start_url = https://x.awsapps.com/start\nsso_registration_scopes = sso:account:access\n", "")
	r, err := Conn{Profile: "dev"}.Resolve()
	if err != nil || r.AccessKey != "ssokey" || r.SessionToken != "ssotoken" || r.Region != "eu-west-1" || r.Expires.IsZero() {
		t.Fatalf("SSO: %+v, %v", r, err)
	}
	if len(calls) != 1 || !strings.Contains(calls[0], "account_id=111122223333") || !strings.Contains(calls[0], "role_name=Writer") || !strings.HasSuffix(calls[0], " portal-token") {
		t.Errorf("SSO portal calls %q; want one GetRoleCredentials with the cached token", calls)
	}
}
