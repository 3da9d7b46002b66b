//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// put --journal and recover --journal refuse a journal directory another user could write to:
// a usage error naming the directory and the rule, before the store is contacted (the endpoint
// here answers nothing) and without a file created in it.
func TestJournalDirectoryOthersCanWriteIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "AWS_ENDPOINT_URL=http://127.0.0.1:9", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s")
	file := writeFile(t, make([]byte, 1<<20))
	for _, args := range [][]string{
		{"put", "--journal", dir, file, "s3://bucket/k"},
		{"recover", "--journal", dir, "s3://bucket"},
		{"recover", "--run", "--journal", dir, "s3://bucket/"},
	} {
		r := runWith(t, env, nil, args...)
		expectCode(t, r, 2, strings.Join(args, " "))
		if !strings.Contains(r.stderr, dir) || !strings.Contains(r.stderr, "group- or world-writable (mode 1777)") {
			t.Errorf("%v: stderr does not name the directory and the rule: %q", args, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files created in the refused journal: %v", entries)
	}
}
