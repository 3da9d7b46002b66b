package journal

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// TestHelperHold is the other process of TestClaimAcrossProcesses: it claims a record, says so
// on stdout, and holds the claim until it is killed.
func TestHelperHold(t *testing.T) {
	dir := os.Getenv("JOURNAL_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Claim(testID("shared")); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	select {} // until SIGKILL
}

// A claim held by another process keeps this one out; when that process is killed, the kernel
// drops its flock and the record can be claimed (to recover or resume it).
func TestClaimAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := testID("shared")
	if err := d.Begin(Record{ID: id, PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := d.Release(id); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHold$")
	cmd.Env = append(os.Environ(), "JOURNAL_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	if _, err := d.Claim(id); !errors.Is(err, ErrInUse) {
		t.Errorf("Claim while another process holds it = %v, want ErrInUse", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	rec, err := d.Claim(id)
	if err != nil || rec.ID != id {
		t.Fatalf("Claim after the holder was killed = %+v, %v", rec, err)
	}
}
