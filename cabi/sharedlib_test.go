package cabi_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/safeput/safeput/cabi/internal/abitest"
	"github.com/safeput/safeput/storetest/s3test"
)

// buildDir holds what the tests build (the shared library and the C program): a temporary
// directory, never the source tree.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "safeput-cabi-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// build makes libsafeput.so with the extra tags (always safeput_faults: the tests inject
// faults), once per tags, and the reference C program linked against it with the extra C flags,
// once per name, all under buildDir.
//
// The library is built without -race even when the tests run under it: the race detector's
// runtime, loaded from a shared library into a C process it did not start, cannot map its
// shadow memory (ThreadSanitizer "failed to allocate ... errno 12"). TestInProcess runs the same
// C program under -race.
func build(t *testing.T, name, tags string, cflags ...string) string {
	t.Helper()
	lib := buildLib(t, tags)
	prog := filepath.Join(buildDir, name, "abi_prog")
	if _, err := os.Stat(prog); err == nil {
		return prog
	}
	if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-std=c11", "-D_POSIX_C_SOURCE=200809L", "-g", "-O1", "-Wall", "-Wextra", "-Werror"}, cflags...)
	args = append(args, "-I", ".", "-o", prog, "internal/ctest/abi_prog.c", "testdata/main.c",
		"-L", lib, "-lsafeput", "-lpthread", "-Wl,-rpath,"+lib)
	run(t, exec.Command("gcc", args...))
	return prog
}

// buildLib makes libsafeput.so with the extra tags (and always safeput_faults), once per tags,
// and returns its directory.
func buildLib(t *testing.T, tags string) string {
	t.Helper()
	libMu.Lock()
	defer libMu.Unlock()
	lib := filepath.Join(buildDir, "lib"+strings.ReplaceAll(tags, ",", "-"))
	if _, err := os.Stat(filepath.Join(lib, "libsafeput.so")); err != nil {
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-tags", "safeput_faults"+tags,
			"-o", filepath.Join(lib, "libsafeput.so"), "./lib")
		if strings.Contains(tags, "valgrind") {
			// Debian's valgrind (3.19) cannot read the DWARF 5 that Go writes by default.
			cmd.Env = append(os.Environ(), "GOEXPERIMENT=nodwarf5")
		}
		run(t, cmd)
	}
	return lib
}

// libMu: a test's build of the library must not race another's.
var libMu sync.Mutex

func run(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
}

// exitCode runs cmd and returns its exit code; output goes to the test log.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		t.Logf("%s", out)
	}
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", cmd.Args[0], err)
	return -1
}

// The reference C program, a separate process loading libsafeput.so, against the real server.
func TestSharedLibrary(t *testing.T) {
	s3test.Require(t)
	prog := build(t, "shared", "")
	abitest.Suite(t, abitest.Full, func(t *testing.T, args []string) int {
		return exitCode(t, exec.Command(prog, args...))
	})
}

// The same program built with AddressSanitizer: an out-of-bounds access or use after free in
// the C caller's use of the library, or a string the library returned and the program did not
// release (LeakSanitizer at exit), fails the run. The Go side allocates with malloc only for
// what it returns, so LeakSanitizer sees exactly the ownership rules of safeput.h.
func TestSharedLibraryASan(t *testing.T) {
	s3test.Require(t)
	prog := build(t, "asan", "", "-fsanitize=address", "-fno-omit-frame-pointer")
	abitest.Suite(t, abitest.Full, func(t *testing.T, args []string) int {
		cmd := exec.Command(prog, args...)
		cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=1:exitcode=97")
		return exitCode(t, cmd)
	})
}

// The program under valgrind's memcheck, with the library built with Go's valgrind
// annotations (tag valgrind) and asynchronous preemption off (its signal frames write below the
// stack pointer, which memcheck reports). Memcheck does not follow the Go heap's zeroing, so it
// reports uninitialised values inside Go code; those are suppressed for frames in
// libsafeput.so only, and every invalid read or write anywhere, and every uninitialised use in
// the C program, still fails the run. Leak checking stays with LeakSanitizer above: memcheck's
// leak scan cannot cope with the Go heap's annotations.
func TestSharedLibraryValgrind(t *testing.T) {
	s3test.Require(t)
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" {
			t.Fatal("valgrind is not installed: the test command installs it (scripts/valgrind.sh)")
		}
		t.Skip("valgrind is not installed (scripts/valgrind.sh installs it)")
	}
	prog := build(t, "valgrind", ",valgrind")
	supp := filepath.Join(buildDir, "go-heap.supp")
	var rules strings.Builder
	for _, kind := range []string{"Cond", "Value1", "Value2", "Value4", "Value8", "Value16"} {
		fmt.Fprintf(&rules, "{\n  go-heap-%s\n  Memcheck:%s\n  obj:*/libsafeput.so\n}\n", kind, kind)
	}
	// And the suppression safeput.h gives callers of safeput_open, exactly as printed there: the
	// heapopen scenario opens with an exact-length heap string.
	rules.WriteString(headerSuppression(t))
	if err := os.WriteFile(supp, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	abitest.Suite(t, abitest.Quick, func(t *testing.T, args []string) int {
		vg := []string{"-q", "--error-exitcode=99", "--leak-check=no", "--suppressions=" + supp, prog}
		cmd := exec.Command(valgrind, append(vg, args...)...)
		// cpu.rdtscp=off: the runtime's clock otherwise uses RDTSCP, which valgrind 3.19
		// does not decode (SIGILL in runtime.cputicks); the fallback is RDTSC behind fences.
		// (golang.org/x/sys/cpu, linked in, prints that it knows no "rdtscp": harmless.)
		cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off")
		return exitCode(t, cmd)
	})
}

// headerSuppression returns the memcheck suppression safeput.h's VALGRIND note prints: the
// comment lines from "{" to "}" after it, without the comment's " * " margin.
func headerSuppression(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("safeput.h")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), " * VALGRIND.")
	if !ok {
		t.Fatal("safeput.h has no VALGRIND note")
	}
	var b strings.Builder
	in := false
	for line := range strings.SplitSeq(after, "\n") {
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "*"))
		if text == "{" {
			in = true
		}
		if in {
			b.WriteString(text + "\n")
		}
		if text == "}" {
			in = false
		}
		if strings.HasPrefix(text, "*/") || strings.HasPrefix(strings.TrimSpace(line), "*/") {
			break
		}
	}
	if !strings.Contains(b.String(), "fun:runtime.findnull") {
		t.Fatalf("safeput.h's VALGRIND note has no suppression: %q", b.String())
	}
	return b.String()
}
