// Package abitest is the integration suite of the C ABI, run once per way of linking it: it
// drives the reference C caller (internal/ctest/abi_prog.c) against the real S3 server and
// checks what landed with the raw client, never through the ABI itself.
package abitest

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/safeput/safeput/storetest/s3test"
)

// Runner runs abi_prog with args (scenario, output file, scenario arguments) and returns its
// exit code.
type Runner func(t *testing.T, args []string) int

const (
	mib = 1 << 20
	// streamSize is several 5 MiB parts and a short last one.
	streamSize = 23*mib + 12345
	partSize   = 5 * mib
)

// Expected generates the bytes abi_prog writes for seed (its fill function).
func Expected(n int, seed uint64) []byte {
	out := make([]byte, n+8)
	x := seed*0x9E3779B97F4A7C15 | 1
	for i := 0; i < n; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(out[i:], x)
	}
	return out[:n]
}

// Config is the JSON abi_prog opens with. Credentials are not in it: they come from the
// environment, as for the CLI.
func Config(s s3test.Server, bucket, key, backend string, extra map[string]any) string {
	c := map[string]any{
		"bucket": bucket, "key": key, "endpoint": s.Endpoint, "region": s.Region, "path_style": true,
		"backend": backend, "provider": "versitygw", "part_size": "5MiB", "concurrency": 3,
	}
	for k, v := range extra {
		c[k] = v
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Result is the part of the close JSON the tests check.
type Result struct {
	Status         string         `json:"status"`
	ExitCode       int            `json:"exit_code"`
	Kind           string         `json:"kind"`
	Error          string         `json:"error"`
	Key            string         `json:"key"`
	Size           int64          `json:"size"`
	Multipart      bool           `json:"multipart"`
	Parts          int            `json:"parts"`
	PartSize       int64          `json:"part_size"`
	Verified       string         `json:"verified"`
	VerifiedStrong bool           `json:"verified_strong"`
	Failures       map[string]int `json:"failures"`
	UploadAttempts int            `json:"upload_attempts"`
}

// Scope says how much of the suite to run.
type Scope int

const (
	// Full runs every scenario through both adapters.
	Full Scope = iota
	// Quick runs one multi-part stream, the misuse cases and the cross-thread abort: for slow
	// runners (valgrind).
	Quick
)

// Suite runs the scenarios of scope through run.
func Suite(t *testing.T, scope Scope, run Runner) {
	s := s3test.Require(t)
	// Credentials from the environment only; the shared config files point nowhere so a
	// developer's ~/.aws cannot take part.
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/safeput-cabi-test-config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/safeput-cabi-test-credentials")
	bucket := s3test.NewBucket(t, s)

	backends := []string{"aws", "minio"}
	if scope == Quick {
		backends = backends[:1]
	}
	for _, backend := range backends {
		t.Run("stream-"+backend, func(t *testing.T) {
			key := "stream/" + backend
			status, res := stream(t, run, Config(s, bucket, key, backend, nil), streamSize, 11)
			if status != 0 || res.Status != "landed" {
				t.Fatalf("status %d, result %+v; want 0, landed", status, res)
			}
			if res.Size != streamSize || !res.Multipart || res.Parts != 5 || res.PartSize != partSize {
				t.Errorf("result %+v; want %d bytes in 5 parts of 5 MiB", res, streamSize)
			}
			if !res.VerifiedStrong || res.Verified == "" {
				t.Errorf("verified %q strong=%v; want a strong verification", res.Verified, res.VerifiedStrong)
			}
			CheckLanded(t, s, bucket, key, Expected(streamSize, 11))
		})
		if scope == Quick {
			continue
		}

		t.Run("integrity-fault-survived-"+backend, func(t *testing.T) {
			key := "fault/integrity/" + backend
			// The store refuses a part's body once for a checksum mismatch (corruption on the
			// way); the writer still holds the part and re-sends it.
			cfg := Config(s, bucket, key, backend, map[string]any{"test_faults": "UploadPart:ChecksumMismatch:1"})
			status, res := stream(t, run, cfg, 11*mib+7, 12)
			if status != 0 || res.Status != "landed" {
				t.Fatalf("status %d, result %+v; want 0, landed after the retry", status, res)
			}
			if res.Failures["integrity"] < 1 {
				t.Errorf("failures %v; want the injected integrity failure counted", res.Failures)
			}
			CheckLanded(t, s, bucket, key, Expected(11*mib+7, 12))
		})

		t.Run("integrity-fault-after-checksum-"+backend, func(t *testing.T) {
			key := "fault/flip/" + backend
			// A byte flips before the checksum is computed, so the store accepts the part; the
			// layout check after upload sees the stored checksum differ. A stream cannot be
			// replayed, so the write fails as integrity and nothing lands.
			cfg := Config(s, bucket, key, backend, map[string]any{"test_faults": "UploadPart:FlipByte:1"})
			status, res := stream(t, run, cfg, 11*mib+7, 14)
			if status != 5 || res.Kind != "integrity" {
				t.Fatalf("status %d, result %+v; want 5, integrity", status, res)
			}
			CheckNothingLanded(t, s, bucket, key)
		})

		t.Run("permanent-fault-"+backend, func(t *testing.T) {
			key := "fault/permanent/" + backend
			cfg := Config(s, bucket, key, backend, map[string]any{"test_faults": "UploadPart:Forbidden"})
			status, res := stream(t, run, cfg, 11*mib+7, 13)
			if status != 4 || res.ExitCode != 4 || res.Kind != "permanent" || res.Error == "" {
				t.Fatalf("status %d, result %+v; want 4 with kind permanent and the message", status, res)
			}
			CheckNothingLanded(t, s, bucket, key)
		})
	}

	if scope == Full {
		t.Run("threads", func(t *testing.T) { threads(t, s, bucket, run) })
	}

	t.Run("misuse", func(t *testing.T) {
		args := []string{
			Config(s, bucket, "misuse/a", "aws", nil),
			Config(s, bucket, "misuse/b", "minio", nil),
			Config(s, bucket, "misuse/c", "aws", nil),
		}
		lines := runScenario(t, run, "misuse", args, 0)
		reportCases(t, lines)
		CheckLanded(t, s, bucket, "misuse/a", []byte("abc"))
		CheckNothingLanded(t, s, bucket, "misuse/b")
		CheckLanded(t, s, bucket, "misuse/c", []byte("xyz"))
	})

	t.Run("open-exact-heap-string", func(t *testing.T) {
		lines := runScenario(t, run, "heapopen", []string{Config(s, bucket, "heapopen/k", "aws", nil)}, 0)
		reportCases(t, lines)
		CheckNothingLanded(t, s, bucket, "heapopen/k")
	})

	t.Run("abort-from-another-thread", func(t *testing.T) {
		key := "abortrace/k"
		lines := runScenario(t, run, "abortrace", []string{Config(s, bucket, key, "aws", nil)}, 0)
		reportCases(t, lines)
		CheckNothingLanded(t, s, bucket, key)
	})
}

// threads streams one object per C thread, all at once, half through each adapter.
func threads(t *testing.T, s s3test.Server, bucket string, run Runner) {
	const n, size = 4, 6*mib + 1
	args := []string{strconv.Itoa(size), "100"}
	for i := range n {
		args = append(args, Config(s, bucket, fmt.Sprintf("threads/%d", i), []string{"aws", "minio"}[i%2], nil))
	}
	lines := runScenario(t, run, "threads", args, 0)
	if len(lines) != n {
		t.Fatalf("%d thread lines, want %d: %q", len(lines), n, lines)
	}
	for i, line := range lines {
		f := strings.SplitN(line, " ", 5)
		if len(f) < 5 || f[3] != "0" {
			t.Errorf("thread %d: %q; want status 0", i, line)
			continue
		}
		CheckLanded(t, s, bucket, fmt.Sprintf("threads/%d", i), Expected(size, uint64(100+i)))
	}
}

// stream runs the stream scenario and returns the close status and JSON.
func stream(t *testing.T, run Runner, cfg string, size int, seed uint64) (int, Result) {
	t.Helper()
	lines := runScenario(t, run, "stream", []string{cfg, strconv.Itoa(size), strconv.FormatUint(seed, 10)}, 0)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "status ") {
		t.Fatalf("stream output %q", lines)
	}
	status, err := strconv.Atoi(strings.TrimPrefix(lines[0], "status "))
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal([]byte(lines[1]), &res); err != nil {
		t.Fatalf("close JSON %q: %v", lines[1], err)
	}
	if status != 0 && res.ExitCode != status {
		t.Errorf("JSON exit_code %d, status %d; want them equal", res.ExitCode, status)
	}
	return status, res
}

// runScenario runs abi_prog and returns the lines it wrote to its output file.
func runScenario(t *testing.T, run Runner, scenario string, args []string, wantCode int) []string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	code := run(t, append([]string{scenario, out}, args...))
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("%s: exit %d, no output: %v", scenario, code, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if code != wantCode {
		t.Fatalf("%s: exit %d, want %d; output:\n%s", scenario, code, wantCode, strings.Join(lines, "\n"))
	}
	return lines
}

// reportCases logs each case the C program tried and fails on any it got wrong.
func reportCases(t *testing.T, lines []string) {
	t.Helper()
	if len(lines) == 0 {
		t.Fatal("no cases reported")
	}
	for _, l := range lines {
		t.Log(l)
		if !strings.HasSuffix(l, " ok") {
			t.Errorf("case failed: %s", l)
		}
	}
}

// CheckLanded fails t unless key reads back as want and no incomplete upload is left for it.
func CheckLanded(t *testing.T, s s3test.Server, bucket, key string, want []byte) {
	t.Helper()
	got := s3test.ReadAll(t, s, bucket, key)
	if string(got) != string(want) {
		t.Errorf("%s: read back %d bytes, want %d identical bytes", key, len(got), len(want))
	}
	if left := s3test.IncompleteUploads(t, s, bucket, key); len(left) > 0 {
		t.Errorf("%s: incomplete uploads left: %v", key, left)
	}
}

// CheckNothingLanded fails t if an object or an incomplete upload exists at key.
func CheckNothingLanded(t *testing.T, s s3test.Server, bucket, key string) {
	t.Helper()
	if s3test.Exists(t, s, bucket, key) {
		t.Errorf("%s: an object landed; want none", key)
	}
	if left := s3test.IncompleteUploads(t, s, bucket, key); len(left) > 0 {
		t.Errorf("%s: incomplete uploads left: %v", key, left)
	}
}
