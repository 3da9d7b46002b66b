package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safeput/safeput/internal/s3test"
	"github.com/safeput/safeput/journal"
)

// What recover says about a journal with nothing to do, and about bad input: a clear message,
// the right exit code, and nothing touched.
func TestRecoverMessages(t *testing.T) {
	s := s3test.Require(t)
	dir := t.TempDir()
	r := cli(t, s, nil, "recover", "--journal", filepath.Join(dir, "missing"))
	expectCode(t, r, 2, "recover of a missing directory")
	if !strings.Contains(r.stderr, "missing") {
		t.Errorf("stderr does not name the directory: %q", r.stderr)
	}
	r = cli(t, s, nil, "recover")
	expectCode(t, r, 2, "recover without --journal")

	r = cli(t, s, nil, "recover", "--journal", dir)
	expectCode(t, r, 0, "recover of an empty journal")
	if !strings.Contains(r.stdout, "holds no uploads: nothing to recover") {
		t.Errorf("stdout: %q", r.stdout)
	}
	// A foreign file is skipped with a warning naming it; a record of another endpoint is
	// reported and left in place, even with --run.
	junk := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(junk, []byte(`{"version": 1, "bucket": "b"`), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	other := journal.ID{Endpoint: "http://elsewhere:9000", Bucket: "b", Key: "k", UploadID: "u"}
	if err := j.Begin(journal.Record{ID: other, PartSize: 5 << 20, SourceSize: 11 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(other); err != nil {
		t.Fatal(err)
	}
	r = cli(t, s, nil, "recover", "--run", "--journal", dir)
	expectCode(t, r, 0, "recover with a foreign file and another endpoint's record")
	if !strings.Contains(r.stderr, "warning: skipped "+junk) {
		t.Errorf("stderr does not name the skipped file: %q", r.stderr)
	}
	if !strings.Contains(r.stdout, "other-endpoint") || !strings.Contains(r.stdout, "http://elsewhere:9000") {
		t.Errorf("stdout does not report the other endpoint's record: %q", r.stdout)
	}
	if recs, _, _ := j.List(); len(recs) != 1 {
		t.Fatalf("records after recover --run: %d, want the other endpoint's kept", len(recs))
	}
	if _, err := os.Stat(junk); err != nil {
		t.Fatalf("the foreign file was touched: %v", err)
	}
}
