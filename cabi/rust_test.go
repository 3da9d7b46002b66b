package cabi_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/cabi"
	"github.com/safeput/safeput/cabi/internal/abitest"
	"github.com/safeput/safeput/storetest/s3test"
)

// buildRust compiles the Rust reference caller (internal/rustcaller: hand-written bindings and
// the safe wrapper in safeput.rs, the scenarios in main.rs) against libsafeput.so with rustc
// alone, no cargo and no crates. Debian's rustc (scripts/rustc.sh) is the oldest it must build
// with.
func buildRust(t *testing.T) string {
	t.Helper()
	rustc, err := exec.LookPath("rustc")
	if err != nil {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" {
			t.Fatal("rustc is not installed: the test command installs it (scripts/rustc.sh)")
		}
		t.Skip("rustc is not installed (scripts/rustc.sh installs it)")
	}
	lib := buildLib(t, "")
	prog := filepath.Join(buildDir, "rust", "rust_caller")
	libMu.Lock()
	defer libMu.Unlock()
	if _, err := os.Stat(prog); err == nil {
		return prog
	}
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, exec.Command(rustc, "--edition", "2021", "-O", "-D", "warnings", "internal/rustcaller/main.rs",
		"-L", lib, "-C", "link-arg=-Wl,-rpath,"+lib, "-o", prog))
	return prog
}

// runRust runs a scenario of the Rust caller and returns the lines it wrote and where its
// data files are (OUT.data, OUT.data.N). Every case line must end in ok, and the exit be 0.
func runRust(t *testing.T, prog, scenario string, args ...string) (lines []string, out string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "out")
	code := exitCode(t, exec.Command(prog, append([]string{scenario, out}, args...)...))
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("%s: exit %d, no output: %v", scenario, code, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for _, l := range lines {
		t.Log(l)
		if strings.HasPrefix(l, "case ") && !strings.HasSuffix(l, " ok") {
			t.Errorf("%s: %s", scenario, l)
		}
	}
	if code != 0 || len(lines) == 0 {
		t.Fatalf("%s: exit %d with %d lines; want 0", scenario, code, len(lines))
	}
	return lines, out
}

// rustConfig is the config the Rust caller opens with: credentials in it, since the servers'
// subtests run side by side and cannot each set the environment.
func rustConfig(s s3test.Server, bucket, key, backend string, extra string) string {
	return fmt.Sprintf(`{"bucket":%q,"key":%q,"endpoint":%q,"region":%q,"access_key":%q,"secret_key":%q,`+
		`"path_style":true,"backend":%q,"provider":"versitygw","part_size":"5MiB","concurrency":3%s}`,
		bucket, key, s.Endpoint, s.Region, s.AccessKey, s.SecretKey, backend, extra)
}

// sameAsWritten checks that key holds exactly the bytes the Rust caller wrote to file, and
// that no incomplete upload is left.
func sameAsWritten(t *testing.T, s s3test.Server, bucket, key, file string) {
	t.Helper()
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	abitest.CheckLanded(t, s, bucket, key, want)
}

// The Rust reference caller, a separate process loading libsafeput.so through bindings written
// from safeput.h alone, on every server through both adapters: a columnar file (pages of odd
// sizes, two writes each, then a footer) lands byte-identical; four threads, each given its
// writer, land theirs; an abort with a cloned token while another thread writes stops it with
// 8 and leaves nothing; misuse answers 2 or 8 with a kind, and a writer dropped unfinished
// aborts; RSS stays flat over many open/write/close cycles. And once per adapter against a
// store that never answers: the header's bounds on the create wait and on abort.
func TestRustCaller(t *testing.T) {
	prog := buildRust(t)
	t.Run("hung", func(t *testing.T) {
		t.Parallel() // with the servers' subtests: it only waits
		endpoint := cabi.HungServer(t)
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				t.Parallel()
				cfg := fmt.Sprintf(`{"bucket":"hung","key":"k","endpoint":%q,"access_key":"a","secret_key":"s","path_style":true,`+
					`"backend":%q,"provider":"versitygw","part_size":"5MiB","stall_timeout":"1s","abort_timeout":"1s"}`, endpoint, backend)
				runRust(t, prog, "hung", cfg)
			})
		}
	})
	s3test.ForEach(t, func(t *testing.T, s s3test.Server) {
		bucket := s3test.NewBucket(t, s)
		for _, backend := range []string{"aws", "minio"} {
			t.Run(backend, func(t *testing.T) {
				t.Run("columnar", func(t *testing.T) {
					key := "columnar/" + backend
					_, out := runRust(t, prog, "columnar", rustConfig(s, bucket, key, backend, ""), "600", "5")
					sameAsWritten(t, s, bucket, key, out+".data")
				})
				t.Run("threads", func(t *testing.T) {
					args := []string{"200", "40"} // about 6.5 MB each: two parts
					for i := range 4 {
						args = append(args, rustConfig(s, bucket, fmt.Sprintf("threads/%s/%d", backend, i), backend, ""))
					}
					_, out := runRust(t, prog, "threads", args...)
					for i := range 4 {
						sameAsWritten(t, s, bucket, fmt.Sprintf("threads/%s/%d", backend, i), fmt.Sprintf("%s.data.%d", out, i))
					}
				})
				t.Run("abort-from-another-thread", func(t *testing.T) {
					key := "abort/" + backend
					runRust(t, prog, "abort", rustConfig(s, bucket, key, backend, ""))
					abitest.CheckNothingLanded(t, s, bucket, key)
				})
				t.Run("misuse", func(t *testing.T) {
					a, b := "misuse/a/"+backend, "misuse/b/"+backend
					runRust(t, prog, "misuse", rustConfig(s, bucket, a, backend, ""), rustConfig(s, bucket, b, backend, ""))
					if got := s3test.ReadAll(t, s, bucket, a); string(got) != "abc" {
						t.Errorf("%s: %q; want abc", a, got)
					}
					abitest.CheckNothingLanded(t, s, bucket, b)
				})
			})
		}
		t.Run("cycles", func(t *testing.T) {
			key := "cycles/k"
			runRust(t, prog, "cycles", "150", rustConfig(s, bucket, key, "aws", ""), rustConfig(s, bucket, key, "minio", ""))
			if left := s3test.IncompleteUploads(t, s, bucket, key); len(left) > 0 {
				t.Errorf("%s: incomplete uploads left: %v", key, left)
			}
		})
	})
}
