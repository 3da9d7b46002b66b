package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/storetest/s3test"
)

// bin is the safeput binary, built once: the tests run it as a user would, so flags, exit codes,
// stdout/stderr separation and signals are all exercised for real. It is the test build (tag
// safeput_faults: the hidden --fault and --pause); TestReleaseBuildHasNoTestHooks builds the other.
var bin string

// TestMain builds the CLI once for every test. The tests that call t.Parallel run side by side
// after the package's sequential tests: each spends most of its time waiting (on the CLI
// processes it starts, on the servers, or out a bound), and each has its own buckets, temporary
// directories and proxies, and hands the processes it starts their own environment. A test stays
// sequential when it measures the process (TestCtxReaderStreamsWithoutGarbage), sets the
// process's environment (TestLimitGCFollowsThePartBudget), records what a later test reads
// (TestProbe and TestPutDefaultsVerifyStrongly feed TestReadmeCompatibility), or was seen to
// fail beside the others (TestInstanceRoleCredentials: a metadata request without an IMDSv2
// token, which it counts, when its emulator answered late under load).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "safeput-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "safeput")
	build := exec.Command("go", "build", "-tags", "safeput_faults", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building safeput:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// cleanEnv is the environment without any AWS_* variable and with the shared config files
// pointed nowhere, so the developer's own settings (~/.aws) cannot leak into a test; the
// endpoint cache is pointed nowhere too, so no test starts from what an earlier one learned
// (TestPutKeepsEndpointFacts gives it a directory).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return append(env, "AWS_CONFIG_FILE=/nonexistent/safeput-test-config", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent/safeput-test-credentials",
		"XDG_CACHE_HOME=/dev/null/safeput-test-cache", // under a file: no directory, even for root
		// The end of the SDK's chain: this host's instance role, if any, is not the test's.
		"AWS_EC2_METADATA_DISABLED=true")
}

func serverEnv(s s3test.Server) []string {
	return append(cleanEnv(), "AWS_ENDPOINT_URL="+s.Endpoint, "AWS_REGION="+s.Region,
		"AWS_ACCESS_KEY_ID="+s.AccessKey, "AWS_SECRET_ACCESS_KEY="+s.SecretKey)
}

func runWith(t *testing.T, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	return runBinary(t, bin, env, stdin, args...)
}

func runBinary(t *testing.T, path string, env []string, stdin io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("running safeput %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// provider is the --provider profile for the test server: the profile named after it, or the
// gateway's (what these tests always used) for an external endpoint.
func provider(s s3test.Server) string {
	switch s.Name {
	case s3test.VersityGW, s3test.MinIO, s3test.Ceph:
		return s.Name
	}
	return s3test.VersityGW
}

func mustProfile(t *testing.T, name string) multipart.Rules {
	t.Helper()
	r, err := multipart.Profile(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cli runs safeput against the test server (path-style, credentials from the environment).
func cli(t *testing.T, s s3test.Server, stdin io.Reader, args ...string) result {
	t.Helper()
	return runWith(t, serverEnv(s), stdin, append([]string{"--path-style"}, args...)...)
}

func expectCode(t *testing.T, r result, want int, what string) {
	t.Helper()
	if r.code != want {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, r.code, want, r.stdout, r.stderr)
	}
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDemo(t *testing.T) {
	r := runWith(t, cleanEnv(), nil, "demo")
	expectCode(t, r, 0, "demo")
	for _, want := range []string{"in-memory", "checksum mismatch", "truncated", "EntityTooSmall", "SlowDown", "AccessDenied", "every promise held"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "BROKEN") {
		t.Errorf("demo reports a broken promise:\n%s", r.stdout)
	}
}

func TestHelpDocumentsExitCodesAndHidesFault(t *testing.T) {
	r := runWith(t, cleanEnv(), nil, "--help")
	expectCode(t, r, 0, "help")
	for _, want := range []string{"Exit codes", "8  cancelled", "AWS_ENDPOINT_URL"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	r = runWith(t, cleanEnv(), nil, "put", "--help")
	if strings.Contains(r.stdout, "--fault") {
		t.Error("put --help shows the hidden --fault flag")
	}
}

// The binary `go build ./cmd/safeput` makes has no test hooks: --fault and --pause are unknown
// flags (a usage error, exit 2), and the code behind them is not linked in. The test build has
// both, so the symbol check is shown to see them.
func TestReleaseBuildHasNoTestHooks(t *testing.T) {
	release := filepath.Join(t.TempDir(), "safeput")
	if out, err := exec.Command("go", "build", "-o", release, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"--fault", "x", "put", "-", "s3://b/k"},
		{"put", "--fault", "PutObject:SlowDown", "-", "s3://b/k"},
		{"--pause", "UploadPart:1s", "put", "-", "s3://b/k"},
	} {
		r := runBinary(t, release, cleanEnv(), strings.NewReader("x"), args...)
		flag := args[0]
		if flag == "put" {
			flag = args[1]
		}
		if r.code != 2 || !strings.Contains(r.stderr, "unknown flag: "+flag) {
			t.Errorf("release safeput %v: exit %d, stderr %q; want exit 2 and unknown flag: %s", args, r.code, r.stderr, flag)
		}
	}
	// A malformed --fault is the test build's usage error, naming the flag.
	if r := runWith(t, cleanEnv(), strings.NewReader("x"), "--fault", "PutObject:Nope", "put", "-", "s3://bucket/k"); r.code != 2 || !strings.Contains(r.stderr, "--fault") {
		t.Errorf("test safeput --fault PutObject:Nope: exit %d, stderr %q; want exit 2 naming --fault", r.code, r.stderr)
	}
	hooks := []string{"faulty.Parse", "main.parsePauses", "main.(*pausingStore)"}
	symbols := func(path string) string {
		out, err := exec.Command("go", "tool", "nm", path).Output()
		if err != nil {
			t.Fatalf("go tool nm %s: %v", path, err)
		}
		return string(out)
	}
	inRelease, inTest := symbols(release), symbols(bin)
	for _, h := range hooks {
		if strings.Contains(inRelease, h) {
			t.Errorf("the release binary links %s", h)
		}
		if !strings.Contains(inTest, h) {
			t.Errorf("the test binary does not link %s: the symbol check looks for the wrong name", h)
		}
	}
}

// The release build's packages (go list -deps, no tags) include none of the test support under
// storetest: the demo's in-memory store and fault injector are product code
// (internal/demostore), and what reaches the test support (the --fault hook) is in
// the test build only. The test build's list is checked to hold storetest/faulty, so the
// check is shown to see such a package.
func TestReleaseBuildHasNoTestSupport(t *testing.T) {
	list := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list", "-deps"}, append(args, ".")...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	const testSupport = "github.com/safeput/safeput/storetest"
	for _, p := range list() {
		if p == testSupport || strings.HasPrefix(p, testSupport+"/") {
			t.Errorf("the release build imports %s", p)
		}
	}
	if !slices.Contains(list("-tags", "safeput_faults"), testSupport+"/faulty") {
		t.Errorf("the test build does not import %s/faulty: the check looks for the wrong path", testSupport)
	}
}

func TestPutAndVerify(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, testPutAndVerify)
}

func testPutAndVerify(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	data := s3test.RandomBytes(12<<20 + 17)
	file := writeFile(t, data)
	for _, backend := range []string{"aws", "minio"} {
		t.Run(backend, func(t *testing.T) {
			common := []string{"--backend", backend, "--provider", provider(s), "--part-size", "5MiB"}
			key := backend + "/file.bin"
			r := cli(t, s, nil, append(common, "put", file, "s3://"+bucket+"/"+key)...)
			expectCode(t, r, 0, "put file")
			// The provider profile's CRC is the proof (CRC32C under minio and versitygw, CRC64NVME
			// otherwise); Ceph RGW keeps no checksums: its proof is the MD5 ETag, in put and verify
			// alike.
			alg := mustProfile(t, provider(s)).Checksum()
			putProof, verifyProof := strings.ToLower(string(alg))+" (strong)", string(alg)
			if s.IgnoresChecksums() {
				putProof, verifyProof = "etag-md5 (strong)", "ETag (MD5 of 3 part MD5s of 5 MiB)"
			}
			if !strings.Contains(r.stdout, "landed") || !strings.Contains(r.stdout, putProof) {
				t.Errorf("put output (want %q):\n%s", putProof, r.stdout)
			}
			if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("stored object differs from the file (%d vs %d bytes)", len(got), len(data))
			}
			r = cli(t, s, nil, append(common, "verify", file, "s3://"+bucket+"/"+key)...)
			expectCode(t, r, 0, "verify file")
			if !strings.Contains(r.stdout, "EQUAL") || !strings.Contains(r.stdout, verifyProof) || strings.Contains(r.stdout, "WEAK") {
				t.Errorf("verify output (want a strong %q comparison):\n%s", verifyProof, r.stdout)
			}

			// Stdin: unknown length, streamed through part buffers.
			skey := backend + "/stdin.bin"
			r = cli(t, s, bytes.NewReader(data), append(common, "--json", "put", "-", "s3://"+bucket+"/"+skey)...)
			expectCode(t, r, 0, "put stdin")
			var res jsonResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("--json output is not JSON: %v\n%q", err, r.stdout)
			}
			if res.Status != "landed" || res.Size != int64(len(data)) || !res.Multipart || !res.VerifiedStrong {
				t.Errorf("json result: %+v", res)
			}
			if got := s3test.ReadAll(t, s, bucket, skey); !bytes.Equal(got, data) {
				t.Fatal("stored stdin object differs")
			}
			r = cli(t, s, nil, append(common, "--json", "verify", "--read-back", file, "s3://"+bucket+"/"+skey)...)
			expectCode(t, r, 0, "verify --read-back")
			var vr verifyReport
			if err := json.Unmarshal([]byte(r.stdout), &vr); err != nil {
				t.Fatalf("verify --json: %v\n%s", err, r.stdout)
			}
			if vr.Status != "equal" || vr.Method != "read-back" || !vr.Strong {
				t.Errorf("verify report: %+v", vr)
			}
		})
	}

	// A different local file: exit 5.
	other := append([]byte(nil), data...)
	other[len(other)/2] ^= 1
	r := cli(t, s, nil, "--provider", provider(s), "--part-size", "5MiB", "verify", writeFile(t, other), "s3://"+bucket+"/aws/file.bin")
	expectCode(t, r, 5, "verify of a different file")
	if !strings.Contains(r.stdout, "DIFFERENT") {
		t.Errorf("verify output:\n%s", r.stdout)
	}
}

func TestJSONHasNoProgressNoise(t *testing.T) { s3test.ForEach(t, testJSONHasNoProgressNoise) }

func testJSONHasNoProgressNoise(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	r := cli(t, s, bytes.NewReader(s3test.RandomBytes(1<<20)), "--json", "put", "-", "s3://"+bucket+"/j")
	expectCode(t, r, 0, "put --json")
	if !json.Valid([]byte(r.stdout)) || strings.ContainsAny(r.stdout, "\r\x1b") {
		t.Fatalf("stdout is not clean JSON: %q", r.stdout)
	}
	// stderr is not a terminal here, so no progress bar either.
	if r.stderr != "" {
		t.Errorf("stderr not empty: %q", r.stderr)
	}
}

func TestBadInputIsUsageError(t *testing.T) { s3test.ForEach(t, testBadInputIsUsageError) }

func testBadInputIsUsageError(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	file := writeFile(t, []byte("hello"))
	dst := "s3://" + bucket + "/k"
	wo, err := os.OpenFile(filepath.Join(t.TempDir(), "wo"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer wo.Close()
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	cases := []struct {
		name  string
		env   []string
		stdin io.Reader
		args  []string
	}{
		{"malformed url", nil, nil, []string{"put", file, "s3:/" + bucket + "/k"}},
		{"no key", nil, nil, []string{"put", file, "s3://" + bucket + "/"}},
		{"not s3", nil, nil, []string{"put", file, "https://" + bucket + "/k"}},
		{"missing file", nil, nil, []string{"put", filepath.Join(t.TempDir(), "nope"), dst}},
		{"directory", nil, nil, []string{"put", t.TempDir(), dst}},
		{"unreadable stdin", nil, wo, []string{"put", "-", dst}},
		{"stdin is a directory", nil, dir, []string{"put", "-", dst}},
		{"unknown profile", nil, nil, []string{"--provider", "nosuch", "put", file, dst}},
		{"bad rules string", nil, nil, []string{"--provider", "min=5MiB,bogus=1", "put", file, dst}},
		{"bad part size", nil, nil, []string{"--part-size", "5XiB", "put", file, dst}},
		{"part size below profile", nil, nil, []string{"--provider", "aws", "--part-size", "1MiB", "put", file, dst}},
		{"bad checksum", nil, nil, []string{"--checksum", "md4", "put", file, dst}},
		{"missing credentials", append(cleanEnv(), "AWS_ENDPOINT_URL="+s.Endpoint), nil, []string{"put", file, dst}},
		{"wrong arg count", nil, nil, []string{"put", file}},
		{"unknown flag", nil, nil, []string{"put", "--nope", file, dst}},
		{"sweep empty prefix", nil, nil, []string{"sweep", "s3://" + bucket}},
		{"negative stall timeout", nil, nil, []string{"--stall-timeout", "-1s", "put", file, dst}},
		{"absurd stall timeout", nil, nil, []string{"--stall-timeout", "48h", "put", file, dst}},
		{"malformed stall timeout", nil, nil, []string{"--stall-timeout", "soon", "put", file, dst}},
		{"malformed read-back limit", nil, nil, []string{"recover", "--journal", t.TempDir(), "--read-back-limit", "lots", "s3://" + bucket}},
		{"recover without a scope", nil, nil, []string{"recover", "--journal", t.TempDir()}},
		{"recover with two buckets", nil, nil, []string{"recover", "--journal", t.TempDir(), "--bucket", "other-" + bucket, "s3://" + bucket}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := c.env
			if env == nil {
				env = serverEnv(s)
			}
			r := runWith(t, env, c.stdin, append([]string{"--path-style"}, c.args...)...)
			expectCode(t, r, 2, c.name)
			if strings.Contains(c.name, "stall") && !strings.Contains(r.stderr, "--stall-timeout") ||
				strings.Contains(c.name, "read-back") && !strings.Contains(r.stderr, "--read-back-limit") {
				t.Errorf("the error does not name the flag: %q", r.stderr)
			}
			if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "safeput: ") {
				t.Errorf("want one line on stderr, got %q", r.stderr)
			}
		})
	}
	if s3test.Exists(t, s, bucket, "k") {
		t.Error("a bad invocation uploaded something")
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 0 {
		t.Errorf("uploads left: %v", ups)
	}
}

// Parallel: its throttled case waits out the CLI's default throttle allowance.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	s3test.ForEach(t, testExitCodes)
}

func testExitCodes(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	small := writeFile(t, s3test.RandomBytes(64<<10))
	big := writeFile(t, s3test.RandomBytes(3<<20))
	dst := func(k string) string { return "s3://" + bucket + "/" + k }
	cases := []struct {
		name string
		code int
		args []string
	}{
		{"transient after retries (injected InternalError)", 3, []string{"--fault", "*:InternalError", "put", small, dst("t3")}},
		{"throttled after retries (injected SlowDown)", 3, []string{"--fault", "PutObject:SlowDown", "put", small, dst("t3b")}},
		{"permanent (injected AccessDenied)", 4, []string{"--fault", "PutObject:Forbidden", "put", small, dst("t4")}},
		{"permanent (real NoSuchBucket)", 4, []string{"put", small, "s3://no-such-bucket-safeput/x"}},
		{"integrity (injected checksum mismatch on every attempt)", 5, []string{"--fault", "PutObject:ChecksumMismatch", "put", small, dst("t5")}},
		{"compatibility (real EntityTooSmall from 1 MiB parts)", 6, []string{"--provider", "profile=" + provider(s) + ",min=1MiB", "--part-size", "1MiB", "put", big, dst("t6")}},
		{"compatibility (injected EntityTooSmall)", 6, []string{"--provider", provider(s), "--part-size", "5MiB", "--fault", "CompleteMultipartUpload:EntityTooSmall", "put", writeFile(t, s3test.RandomBytes(6<<20)), dst("t6b")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, s, nil, c.args...)
			expectCode(t, r, c.code, c.name)
		})
	}
	// Precondition: create-only onto a different existing object.
	r := cli(t, s, nil, "put", small, dst("t7"))
	expectCode(t, r, 0, "first put")
	r = cli(t, s, nil, "--json", "put", "--create-only", big, dst("t7"))
	expectCode(t, r, 7, "create-only onto an existing key")
	var je jsonError
	if err := json.Unmarshal([]byte(r.stdout), &je); err != nil || je.ExitCode != 7 || je.Kind != "precondition" {
		t.Errorf("json error: %+v (%v) from %q", je, err, r.stdout)
	}
	for _, k := range []string{"t3", "t3b", "t4", "t5", "t6", "t6b"} {
		if s3test.Exists(t, s, bucket, k) {
			t.Errorf("failed put left an object at %s", k)
		}
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 0 {
		t.Errorf("uploads left: %v", ups)
	}
}

func TestInterruptAbortsUpload(t *testing.T) { s3test.ForEach(t, testInterruptAbortsUpload) }

func testInterruptAbortsUpload(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	cmd := exec.Command(bin, "--path-style", "--provider", provider(s), "--part-size", "5MiB", "put", "-", "s3://"+bucket+"/slow")
	cmd.Env = serverEnv(s)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// More than one part, so a multipart upload is open; then the stream stalls.
	if _, err := stdin.Write(s3test.RandomBytes(6 << 20)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(s3test.IncompleteUploads(t, s, bucket, "")) == 0 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("no multipart upload was opened")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("safeput did not exit after SIGINT")
	}
	_ = stdin.Close()
	if code := cmd.ProcessState.ExitCode(); code != 8 {
		t.Fatalf("exit %d, want 8; stderr: %s", code, errb.String())
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 0 {
		t.Errorf("uploads left after SIGINT: %v", ups)
	}
	if s3test.Exists(t, s, bucket, "slow") {
		t.Error("an object landed after SIGINT")
	}
}

func TestProbe(t *testing.T) { s3test.ForEach(t, testProbe) }

func testProbe(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	args := []string{"--json", "probe", "s3://" + bucket + "/scratch/"}
	if kms := os.Getenv("SAFEPUT_S3_KMS_KEY_ID"); kms != "" {
		args = append(args, "--sse-kms-key-id", kms)
	}
	r := cli(t, s, nil, args...)
	expectCode(t, r, 0, "probe")
	var rep probeReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("probe --json: %v\n%s", err, r.stdout)
	}
	rows := map[string]probeRow{}
	for _, row := range rep.Rows {
		rows[row.Rule] = row
	}
	// What every server really does.
	type row struct{ rule, result, evidence string }
	want := []row{
		{"non-final part of 5 MiB", "accepted", "Complete 200"},
		{"non-final part of 1 MiB", "rejected", "Complete 400 EntityTooSmall"},
		{"effective minimum non-final part", "5 MiB", "EntityTooSmall"},
		{"multipart CRC64NVME FULL_OBJECT", "accepted", "Complete 200"},
		{"If-None-Match: * on PUT", "honoured", "412"},
		{"wrong Content-MD5 rejected", "yes", "400 BadDigest"},
		{ruleListParts, "supported", "ListParts 200 OK, 1 part(s) listed"},
		{ruleListUploads, "supported", "ListMultipartUploads 200 OK, 1 upload(s) listed"},
		{ruleAbort, "supported", "AbortMultipartUpload 200 OK"},
	}
	if s.Name != s3test.Ceph {
		want = append(want,
			row{"HEAD returns stored checksums", "yes", "HeadObject 200"},
			row{"If-None-Match: * on Complete", "honoured", "Complete 412"},
			row{"Complete answer without ETag", "no", "Complete 200 answers had an ETag"})
	}
	switch s.Name {
	case s3test.Ceph:
		// Ceph RGW 16.2.15: checksum headers accepted and ignored, nothing returned by HEAD,
		// If-None-Match ignored on Complete, Complete answered without ETag, MD5 ETags.
		want = append(want,
			row{"wrong x-amz-checksum-crc64nvme rejected", "no", "PutObject 200"},
			row{"HEAD returns stored checksums", "no", "HeadObject 200 without"},
			row{"If-None-Match: * on Complete", "ignored", "Complete 200"},
			row{"Complete answer without ETag", "yes", "HEAD shows the object"},
			row{"single PUT ETag is the body's MD5", "yes", "ETag"},
			row{"multipart ETag is md5-of-md5s-N", "yes", "HEAD ETag"},
		)
	case s3test.VersityGW:
		want = append(want, row{"wrong x-amz-checksum-crc64nvme rejected", "yes", "400 BadDigest"})
	case s3test.MinIO:
		// MinIO's differences, which the minio profile records: its own code for a checksum
		// mismatch, CRC64NVME COMPOSITE accepted beside FULL_OBJECT, no SHA256 FULL_OBJECT, MD5 ETags.
		want = append(want,
			row{"wrong x-amz-checksum-crc64nvme rejected", "yes", "400 XAmzContentChecksumMismatch"},
			row{"multipart CRC64NVME COMPOSITE", "accepted", "Complete 200"},
			row{"multipart SHA256 FULL_OBJECT", "rejected", "400 InvalidArgument"},
			row{"single PUT ETag is the body's MD5", "yes", "ETag"},
			row{"multipart ETag is md5-of-md5s-N", "yes", "ETag"},
		)
	}
	// Server-side encryption over plain HTTP, as each server does it (the writer's
	// TestEncryptionOnServers asserts the same over TLS, where MinIO honours SSE-C).
	if kms := os.Getenv("SAFEPUT_S3_KMS_KEY_ID"); kms != "" {
		sse := map[string][3]string{
			s3test.VersityGW: {"ignored", "ignored", "ignored"},
			s3test.MinIO:     {"honoured", "honoured", "refused"},
			s3test.Ceph:      {"ignored", "honoured", "honoured"},
		}
		if results, ok := sse[s.Name]; ok {
			for i, mode := range sseModes {
				ev := "HEAD reports"
				if results[i] == "refused" {
					ev = "PutObject 400"
				}
				want = append(want, row{sseRule(mode), results[i], ev})
			}
		}
	}
	// The profile named after the server must be what the probe measures there.
	if (s.Name == s3test.MinIO || s.Name == s3test.Ceph) && rep.MatchedProfile != s.Name {
		t.Errorf("probe on %s matched profile %q (closest %q, differences %v), want %s: the profile and the server disagree",
			s.Name, rep.MatchedProfile, rep.ClosestProfile, rep.Differences, s.Name)
	}
	for _, w := range want {
		row, ok := rows[w.rule]
		if !ok {
			t.Errorf("no row %q", w.rule)
			continue
		}
		if row.Result != w.result || !strings.Contains(row.Evidence, w.evidence) {
			t.Errorf("row %q = %q (%s), want %q with %q", w.rule, row.Result, row.Evidence, w.result, w.evidence)
		}
	}
	if rep.Recommendation == "" || rep.Rules == "" {
		t.Errorf("no recommendation: %+v", rep)
	}
	if len(rep.Leftovers) != 0 || rep.Removed.Objects != rep.Created.Objects {
		t.Errorf("probe left things behind: created %+v removed %+v leftovers %v", rep.Created, rep.Removed, rep.Leftovers)
	}
	if !strings.HasPrefix(rep.ScratchPrefix, "scratch/safeput-probe-") {
		t.Errorf("scratch prefix %q", rep.ScratchPrefix)
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 0 {
		t.Errorf("uploads left: %v", ups)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.RawClient().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 {
		t.Errorf("objects left: %d, first %s", len(out.Contents), aws.ToString(out.Contents[0].Key))
	}

	// The recommendation works when passed back: puts land strongly verified and byte-identical.
	putsVerifyStrongly(t, s, bucket, "--provider", rep.Recommendation)
	if !t.Failed() {
		recordProbe(s.Name, rep)
	}
}

// putsVerifyStrongly puts 3 MiB (one PUT) and 23 MiB (multipart) through both backends with
// the given extra flags and checks each exits 0, strongly verified, byte-identical.
func putsVerifyStrongly(t *testing.T, s s3test.Server, bucket string, flags ...string) {
	putsVerifyStronglyRecord(t, s, bucket, nil, flags...)
}

// putsVerifyStronglyRecord is putsVerifyStrongly that also reports each size's method to record.
func putsVerifyStronglyRecord(t *testing.T, s s3test.Server, bucket string, record func(size int, method string), flags ...string) {
	t.Helper()
	for _, size := range []int{3 << 20, 23 << 20} {
		data := s3test.RandomBytes(size)
		file := writeFile(t, data)
		for _, backend := range []string{"aws", "minio"} {
			key := fmt.Sprintf("strong/%s/%d", backend, size)
			args := append(append([]string{"--backend", backend, "--json"}, flags...), "put", file, "s3://"+bucket+"/"+key)
			r := cli(t, s, nil, args...)
			expectCode(t, r, 0, fmt.Sprintf("put %d bytes %v", size, args))
			var res jsonResult
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("--json output is not JSON: %v\n%q", err, r.stdout)
			}
			if res.Status != "landed" || !res.VerifiedStrong || res.Verified == "" {
				t.Errorf("put %d bytes %v: %+v, want landed and strongly verified", size, args, res)
			}
			if s.Name == s3test.Ceph && res.Verified != "etag-md5" {
				t.Errorf("put %d bytes on Ceph RGW verified by %q, want etag-md5 (the only proof it offers)", size, res.Verified)
			}
			if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
				t.Fatalf("put %d bytes %v: stored object differs", size, args)
			}
			if record != nil {
				record(size, res.Verified)
			}
		}
	}
}

// At defaults (no --provider) every server's puts verify strongly.
func TestPutDefaultsVerifyStrongly(t *testing.T) {
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		putsVerifyStronglyRecord(t, s, s3test.NewBucket(t, s), func(size int, method string) { recordDefault(s.Name, size, method) })
	})
}

// openUpload creates an incomplete upload with one part of size n via the raw client.
func openUpload(t *testing.T, s s3test.Server, bucket, key string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.RawClient()
	cr, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: cr.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(s3test.RandomBytes(n)), ContentLength: aws.Int64(int64(n))}); err != nil {
		t.Fatal(err)
	}
}

func TestSweep(t *testing.T) { s3test.ForEach(t, testSweep) }

func testSweep(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	openUpload(t, s, bucket, "sw/a", 1000)
	openUpload(t, s, bucket, "sw/b", 2000)
	openUpload(t, s, bucket, "sw/c/d", 3000)
	openUpload(t, s, bucket, "other/e", 10)

	sweep := func(args ...string) sweepReport {
		t.Helper()
		r := cli(t, s, nil, append([]string{"--json", "sweep"}, args...)...)
		expectCode(t, r, 0, "sweep "+strings.Join(args, " "))
		var rep sweepReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("sweep --json: %v\n%s", err, r.stdout)
		}
		return rep
	}
	dst := "s3://" + bucket + "/sw/"

	rep := sweep(dst)
	if !rep.DryRun || rep.Found != 3 || rep.Aborted != 0 || rep.Bytes != 6000 {
		t.Errorf("dry run: %+v", rep)
	}
	if n := len(s3test.IncompleteUploads(t, s, bucket, "")); n != 4 {
		t.Fatalf("dry run changed something: %d uploads", n)
	}
	rep = sweep("--older-than", "1h", dst)
	if rep.Found != 0 || rep.Elsewhere != 4 {
		t.Errorf("--older-than 1h: %+v", rep)
	}

	rep = sweep("--run", dst)
	if rep.Found != 3 || rep.Aborted != 3 || rep.Failed != 0 || rep.Freed != 6000 {
		t.Errorf("run: %+v", rep)
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 1 || !strings.HasPrefix(ups[0], "other/e@") {
		t.Fatalf("after run: %v", ups)
	}

	// A re-run is harmless and says where the remaining upload is.
	rep = sweep("--run", dst)
	if rep.Found != 0 || rep.Aborted != 0 || rep.Failed != 0 || rep.Elsewhere != 1 || rep.Prefix != "sw/" {
		t.Errorf("re-run: %+v", rep)
	}
	r := cli(t, s, nil, "sweep", "s3://"+bucket+"/wrong/")
	expectCode(t, r, 0, "sweep of a wrong prefix")
	if !strings.Contains(r.stdout, `under prefix "wrong/"`) || !strings.Contains(r.stdout, "elsewhere in bucket "+bucket+" (any prefix, any age): 1") {
		t.Errorf("wrong-prefix output does not name the prefix and what is elsewhere:\n%s", r.stdout)
	}
	rep = sweep("--all", "--run", "s3://"+bucket)
	if rep.Aborted != 1 {
		t.Errorf("--all --run: %+v", rep)
	}
	if ups := s3test.IncompleteUploads(t, s, bucket, ""); len(ups) != 0 {
		t.Errorf("after --all: %v", ups)
	}
}

// Credentials, region and endpoint from the shared config files for --profile (or AWS_PROFILE),
// when no keys are given by flag or environment.
func TestSharedConfigProfile(t *testing.T) {
	t.Parallel() // mostly waiting: side by side with the others (see TestMain)
	s3test.ForEach(t, testSharedConfigProfile)
}

func testSharedConfigProfile(t *testing.T, s s3test.Server) {
	bucket := s3test.NewBucket(t, s)
	dir := t.TempDir()
	creds := dir + "/credentials"
	conf := dir + "/config"
	if err := os.WriteFile(creds, []byte("[safeput-test]\naws_access_key_id = "+s.AccessKey+"\naws_secret_access_key = "+s.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[profile safeput-test]\nregion = "+s.Region+"\nendpoint_url = "+s.Endpoint+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "AWS_SHARED_CREDENTIALS_FILE="+creds, "AWS_CONFIG_FILE="+conf)
	data := s3test.RandomBytes(1000)
	file := writeFile(t, data)
	r := runWith(t, env, nil, "--path-style", "--profile", "safeput-test", "put", file, "s3://"+bucket+"/profiled")
	expectCode(t, r, 0, "put with --profile")
	if got := s3test.ReadAll(t, s, bucket, "profiled"); !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	r = runWith(t, append(env, "AWS_PROFILE=safeput-test"), nil, "--path-style", "verify", file, "s3://"+bucket+"/profiled")
	expectCode(t, r, 0, "verify with AWS_PROFILE")
	r = runWith(t, env, nil, "--path-style", "--profile", "nope", "put", file, "s3://"+bucket+"/nope")
	expectCode(t, r, 2, "unknown profile")
	if !strings.Contains(r.stderr, "profile \"nope\": not in the shared config or credentials files ("+conf) {
		t.Errorf("unknown profile: stderr %q; want the profile and the files read named", r.stderr)
	}

	// credential_process (how vaults and other credential tools reach the CLI),
	// in the default profile, through both backends.
	script := dir + "/creds.sh"
	out := fmt.Sprintf(`{"Version":1,"AccessKeyId":%q,"SecretAccessKey":%q}`, s.AccessKey, s.SecretKey)
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s' '"+out+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf2 := dir + "/config2"
	if err := os.WriteFile(conf2, []byte("[default]\nregion = "+s.Region+"\nendpoint_url = "+s.Endpoint+"\ncredential_process = "+script+" # inline comment\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env2 := append(cleanEnv(), "AWS_SHARED_CREDENTIALS_FILE="+dir+"/none", "AWS_CONFIG_FILE="+conf2)
	for _, backend := range []string{"aws", "minio"} {
		key := "process-" + backend
		r = runWith(t, env2, nil, "--path-style", "--backend", backend, "put", file, "s3://"+bucket+"/"+key)
		expectCode(t, r, 0, "put with credential_process ("+backend+")")
		if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
			t.Fatalf("%s: read back differs", key)
		}
	}
	// A profile that assumes a role gets its keys from STS AssumeRole (AWS_ENDPOINT_URL_STS: a
	// stand-in that checks the call is signed with the source profile's keys and answers with
	// the server's), through both backends; a refused AssumeRole stores nothing.
	var roleCalls, shortCalls atomic.Int32
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		if form.Get("Action") == "AssumeRole" && strings.Contains(r.Header.Get("Authorization"), "Credential=sourcekey/") &&
			form.Get("RoleArn") == "arn:aws:iam::123456789012:role/short" {
			// Keys living 2 to 3 s (RFC 3339 keeps whole seconds), renewed as they near their end.
			shortCalls.Add(1)
			s3test.AssumeRoleAnswer(w, s.AccessKey, s.SecretKey, "", time.Now().Add(3*time.Second))
			return
		}
		if form.Get("Action") != "AssumeRole" || !strings.Contains(r.Header.Get("Authorization"), "Credential=sourcekey/") ||
			form.Get("RoleArn") != "arn:aws:iam::123456789012:role/x" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Code>AccessDenied</Code><Message>not this role</Message></Error></ErrorResponse>`)
			return
		}
		roleCalls.Add(1)
		s3test.AssumeRoleAnswer(w, s.AccessKey, s.SecretKey, "", time.Now().Add(time.Hour))
	}))
	defer sts.Close()
	conf3 := dir + "/config3"
	if err := os.WriteFile(conf3, []byte("[profile source]\naws_access_key_id = sourcekey\naws_secret_access_key = sourcesecret\n"+
		"[profile role]\nregion = "+s.Region+"\nendpoint_url = "+s.Endpoint+"\nrole_arn = arn:aws:iam::123456789012:role/x\nsource_profile = source\n"+
		"[profile other]\nregion = "+s.Region+"\nendpoint_url = "+s.Endpoint+"\nrole_arn = arn:aws:iam::123456789012:role/other\nsource_profile = source\n"+
		"[profile short]\nregion = "+s.Region+"\nendpoint_url = "+s.Endpoint+"\nrole_arn = arn:aws:iam::123456789012:role/short\nsource_profile = source\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env3 := append(cleanEnv(), "AWS_SHARED_CREDENTIALS_FILE="+dir+"/none", "AWS_CONFIG_FILE="+conf3, "AWS_ENDPOINT_URL_STS="+sts.URL)
	for _, backend := range []string{"aws", "minio"} {
		key := "role-" + backend
		r = runWith(t, env3, nil, "--path-style", "--backend", backend, "--profile", "role", "put", file, "s3://"+bucket+"/"+key)
		expectCode(t, r, 0, "put with an assumed role ("+backend+")")
		if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
			t.Fatalf("%s: read back differs", key)
		}
	}
	if n := roleCalls.Load(); n != 2 {
		t.Errorf("%d AssumeRole calls, want 2 (one per put)", n)
	}
	// A put that outlasts its role's keys renews them: a stream that trickles in for 4 s sends
	// after the first keys' end, signed with keys assumed again, and lands whole.
	for _, backend := range []string{"aws", "minio"} {
		key := "renewed-" + backend
		before := shortCalls.Load()
		r = runWith(t, env3, &trickle{data: data, chunks: 4, pause: time.Second}, "--path-style", "--backend", backend, "--profile", "short", "put", "-", "s3://"+bucket+"/"+key)
		expectCode(t, r, 0, "put outlasting its role's keys ("+backend+")")
		if got := s3test.ReadAll(t, s, bucket, key); !bytes.Equal(got, data) {
			t.Fatalf("%s: read back differs", key)
		}
		if n := shortCalls.Load() - before; n < 2 {
			t.Errorf("%s: %d AssumeRole calls for a put longer than its keys' life, want the keys renewed (2 or more)", key, n)
		}
	}
	r = runWith(t, env3, nil, "--path-style", "--profile", "other", "put", file, "s3://"+bucket+"/role-refused")
	expectCode(t, r, 2, "profile whose role STS refuses")
	if !strings.Contains(r.stderr, "role/other") || !strings.Contains(r.stderr, "not this role") {
		t.Errorf("refused role: stderr %q; want the role and STS's message", r.stderr)
	}
	if s3test.Exists(t, s, bucket, "role-refused") {
		t.Error("a refused profile stored an object")
	}
}

// trickle gives data in chunks with a pause before each: a source slower than its keys' life.
type trickle struct {
	data   []byte
	chunks int
	pause  time.Duration
	sent   int
}

func (tr *trickle) Read(p []byte) (int, error) {
	if len(tr.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(tr.pause)
	n := min(len(p), max(1, len(tr.data)/max(1, tr.chunks-tr.sent)))
	n = copy(p, tr.data[:n])
	tr.data = tr.data[n:]
	tr.sent++
	return n, nil
}
