//go:build unix

package writer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/storetest/memstore"
	"github.com/safeput/safeput/writer"
)

// lockFileOf is the one lock file in the journal directory.
func lockFileOf(t *testing.T, dir string) string {
	t.Helper()
	locks, err := filepath.Glob(filepath.Join(dir, "*.lock"))
	if err != nil || len(locks) != 1 {
		t.Fatalf("lock files in %s: %v, %v; want one", dir, locks, err)
	}
	return locks[0]
}

// A dry run creates nothing in the journal: a record without a lock file is settled (on paper)
// without one being made. A lock file that is a symbolic link is followed neither by a dry run
// nor by a run: its target is not created, the record is reported failed and its upload left.
func TestRecoverNeverCreatesThroughTheJournal(t *testing.T) {
	mem, j, id := resurrectionSetup(t)
	lock := lockFileOf(t, j.Path())
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	rep, err := writer.Recover(context.Background(), mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, DryRun: true})
	if err != nil || rep.Counts[writer.RecoverWouldAbort] != 1 {
		t.Fatalf("dry run = %+v, %v; want the upload reported would-abort", rep, err)
	}
	if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the dry run created the lock file (%v)", err)
	}

	target := filepath.Join(t.TempDir(), "planted")
	if err := os.Symlink(target, lock); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		rep, err := writer.Recover(context.Background(), mem, j.Path(), writer.RecoverOptions{Endpoint: endpointID, DryRun: dry, Settle: -1})
		if err != nil || rep.Counts[writer.RecoverFailed] != 1 || rep.Uploads[0].Err == nil ||
			!strings.Contains(rep.Uploads[0].Err.Error(), "symbolic link") {
			t.Fatalf("recover (dry run %v) with a linked lock file = %+v, %v; want the record failed, naming the link", dry, rep, err)
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("recover (dry run %v) created the lock file's link target (%v)", dry, err)
		}
	}
	if ups := mem.Uploads("b"); len(ups) != 1 || ups[0].UploadID != id.UploadID {
		t.Fatalf("uploads after recovering through a linked lock file: %v, want the journaled one left", ups)
	}
}

// A journal directory another user could write to is refused, naming the rule, by NewUploader,
// Recover and a multipart write (before anything is sent).
func TestJournalDirectoryOthersCanWriteIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	const rule = "group- or world-writable (mode 1777)"
	mem := memstore.New(memstore.WithBuckets("b"))
	check := func(what string, err error) {
		t.Helper()
		if err == nil || sperrors.KindOf(err) != sperrors.Permanent || !strings.Contains(err.Error(), rule) {
			t.Errorf("%s = %v, want a Permanent error naming the rule %q", what, err, rule)
		}
	}
	_, err := writer.NewUploader(mem, func(o *writer.Options) { o.JournalDir, o.JournalEndpoint = dir, endpointID })
	check("NewUploader", err)
	_, err = writer.Recover(context.Background(), mem, dir, writer.RecoverOptions{Endpoint: endpointID, DryRun: true})
	check("Recover", err)
	_, err = writer.Upload(context.Background(), mem, "b", "k", bytes.NewReader(make([]byte, 3*part)), func(o *writer.Options) {
		o.PartSize, o.Concurrency = part, 1
		o.JournalDir, o.JournalEndpoint = dir, endpointID
	})
	check("Upload", err)
	if ups := mem.Uploads("b"); len(ups) != 0 {
		t.Errorf("uploads created despite the refused journal: %v", ups)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files created in the refused journal: %v", entries)
	}
	// A missing directory is not an error until a write needs it, and is then made 0700.
	fresh := filepath.Join(t.TempDir(), "new")
	up, err := writer.NewUploader(mem, func(o *writer.Options) { o.PartSize, o.JournalDir, o.JournalEndpoint = part, fresh, endpointID })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Upload(context.Background(), "b", "k", bytes.NewReader(make([]byte, 3*part))); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("journal directory made by the write: %v, %v; want mode 0700", fi, err)
	}
}
