//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/safeput/safeput/store"
)

// within fails the test when f has not returned after a few seconds: a FIFO that blocks an open
// would otherwise hang the test binary until its own timeout.
func within[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked after 5 s", what)
		panic("unreachable")
	}
}

// problemsText is every Problem as a user sees it (path and reason).
func problemsText(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s: %v\n", p.Path, p.Err)
	}
	return b.String()
}

// problemFor returns the Problem reported for path, failing when there is none.
func problemFor(t *testing.T, ps []Problem, path string) Problem {
	t.Helper()
	for _, p := range ps {
		if p.Path == path {
			return p
		}
	}
	t.Fatalf("no problem reported for %s; problems:\n%s", path, problemsText(ps))
	return Problem{}
}

// A record name that is a symbolic link to /dev/zero is never opened: listing and claiming it
// return at once with a Problem or error saying it is a link (following it read without end).
func TestSymlinkToDevZeroIsSkipped(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := testID("zero")
	link := filepath.Join(dir, name(id)+recordExt)
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	type listed struct {
		recs     []Record
		problems []Problem
		err      error
	}
	l := within(t, "List", func() listed { r, p, err := d.List(); return listed{r, p, err} })
	if l.err != nil || len(l.recs) != 0 {
		t.Fatalf("List = %d records, %v", len(l.recs), l.err)
	}
	if p := problemFor(t, l.problems, link); !strings.Contains(p.Err.Error(), "symbolic link") {
		t.Errorf("problem for the link = %v, want it to say it is a symbolic link", p.Err)
	}
	err = within(t, "Claim", func() error { _, err := d.Claim(id); return err })
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Claim of a record that is a link = %v, want a symbolic-link error", err)
	}
	// The device itself, not through a link: the fstat of the opened file refuses it.
	if _, err := readRegular("/dev/zero", maxRecordSize); err == nil || !strings.Contains(err.Error(), "a device") {
		t.Errorf("readRegular(/dev/zero) = %v, want it refused as a device", err)
	}
}

// A FIFO named like a record (or like a lock file) never blocks: it is reported and skipped.
func TestFIFOIsSkippedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "x.json")
	id := testID("fifo")
	recordFIFO := filepath.Join(dir, name(id)+recordExt)
	lockID := testID("fifo-lock")
	lockFIFO := filepath.Join(dir, name(lockID)+lockExt)
	for _, p := range []string{fifo, recordFIFO, lockFIFO} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type listed struct {
		problems []Problem
		err      error
	}
	l := within(t, "List", func() listed { _, p, err := d.List(); return listed{p, err} })
	if l.err != nil {
		t.Fatal(l.err)
	}
	for _, p := range []string{fifo, recordFIFO, lockFIFO} {
		if pr := problemFor(t, l.problems, p); !strings.Contains(pr.Err.Error(), "named pipe (FIFO)") {
			t.Errorf("problem for %s = %v, want it named a FIFO", p, pr.Err)
		}
	}
	// The open itself must not block, whatever the directory listing said.
	err = within(t, "readRegular", func() error { _, err := readRegular(fifo, maxRecordSize); return err })
	if err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("readRegular of a FIFO = %v, want a FIFO error", err)
	}
	err = within(t, "Claim", func() error { _, err := d.Claim(id); return err })
	if err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("Claim of a record that is a FIFO = %v, want a FIFO error", err)
	}
	for _, ro := range []*Dir{d, d.ReadOnly()} {
		err = within(t, "Claim", func() error { _, err := ro.Claim(lockID); return err })
		if err == nil || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("Claim (read-only %v) with a FIFO for its lock file = %v, want a FIFO error", ro.readOnly, err)
		}
	}
}

// secret is what a file outside the journal holds: it must never show in an error.
const secret = "root:$6$SECRETSALT$SECRETHASH:19000:0:99999:7:::"

// A link to a file outside the directory is not followed, and nothing the journal says about a
// file quotes its content: not the first byte a JSON syntax error names, nor a value a type or
// validation error would show.
func TestErrorsNeverQuoteFileContent(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(outside, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	linkID := testID("link")
	link := filepath.Join(dir, name(linkID)+recordExt)
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	// The same content (and JSON carrying it in each kind of field) as regular files inside.
	hostile := map[string]string{
		"copy.json":    secret,
		"version.json": `{"version": 987654321}`,
		"string.json":  `{"version": "SECRETSTRING"}`,
		"time.json":    `{"version": 1, "created": "SECRETTIME"}`,
		"etag.json": `{"version": 1, "endpoint": "e", "bucket": "b", "key": "k", "upload_id": "u", "part_size": 1,
			"parts": [{"number": 0, "size": 1, "etag": "SECRETETAG"}]}`,
	}
	for base, content := range hostile {
		if err := os.WriteFile(filepath.Join(dir, base), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	recs, problems, err := d.List()
	if err != nil || len(recs) != 0 {
		t.Fatalf("List = %d records, %v", len(recs), err)
	}
	if len(problems) != len(hostile)+1 {
		t.Fatalf("problems:\n%s want one per hostile file (%d)", problemsText(problems), len(hostile)+1)
	}
	if p := problemFor(t, problems, link); !strings.Contains(p.Err.Error(), "symbolic link") {
		t.Errorf("problem for the link = %v, want it to say it is a symbolic link", p.Err)
	}
	_, claimErr := d.Claim(linkID)
	if claimErr == nil {
		t.Fatal("Claim through a link to a file outside succeeded")
	}
	text := strings.ReplaceAll(problemsText(problems)+claimErr.Error(), dir, "DIR")
	for _, leak := range []string{"SECRET", "root", "'r'", "987654321"} {
		if strings.Contains(text, leak) {
			t.Errorf("an error quotes file content (%q):\n%s", leak, text)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != secret {
		t.Errorf("the file outside changed: %q", got)
	}
}

// A lock file that is a symbolic link is not followed: neither a claim (read-only, as a dry run
// takes it, or not) nor a new record creates the link's target.
func TestSymlinkedLockIsNotFollowed(t *testing.T) {
	outsideDir := t.TempDir()
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := testID("locklink")
	if err := d.Begin(Record{ID: id, PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := d.Release(id); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, name(id)+lockExt)
	target := filepath.Join(outsideDir, "planted")
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, lock); err != nil {
		t.Fatal(err)
	}
	fresh := testID("fresh")
	freshTarget := filepath.Join(outsideDir, "planted-fresh")
	if err := os.Symlink(freshTarget, filepath.Join(dir, name(fresh)+lockExt)); err != nil {
		t.Fatal(err)
	}
	for _, j := range []*Dir{d.ReadOnly(), d} {
		if _, err := j.Claim(id); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Claim (read-only %v) through a linked lock file = %v, want a symbolic-link error", j.readOnly, err)
		}
	}
	if err := d.Begin(Record{ID: fresh, PartSize: 5 << 20}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Begin through a linked lock file = %v, want a symbolic-link error", err)
	}
	for _, p := range []string{target, freshTarget} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the link's target %s was created (%v)", p, err)
		}
	}
	_, problems, err := d.List()
	if err != nil {
		t.Fatal(err)
	}
	if p := problemFor(t, problems, lock); !strings.Contains(p.Err.Error(), "symbolic link") {
		t.Errorf("problem for the linked lock file = %v", p.Err)
	}
}

// A read-only view (a dry run) claims and reads a record without creating its lock file, still
// sees a claim another writer holds, and changes nothing.
func TestReadOnlyCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := testID("ro")
	if err := d.Begin(Record{ID: id, PartSize: 5 << 20}); err != nil {
		t.Fatal(err)
	}
	ro := d.ReadOnly()
	if _, err := ro.Claim(id); !errors.Is(err, ErrInUse) {
		t.Fatalf("read-only Claim of a held record = %v, want ErrInUse", err)
	}
	if err := d.Release(id); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, name(id)+lockExt)
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	rec, err := ro.Claim(id)
	if err != nil || rec.ID != id {
		t.Fatalf("read-only Claim = %+v, %v", rec, err)
	}
	if err := ro.AddPart(id, Part{Number: 1, Size: 1, ETag: "e"}); err == nil {
		t.Error("read-only AddPart succeeded")
	}
	if err := ro.Remove(id); err == nil {
		t.Error("read-only Remove succeeded")
	}
	if err := ro.Release(id); err != nil {
		t.Fatal(err)
	}
	if err := ro.Begin(Record{ID: testID("ro2"), PartSize: 1}); err == nil {
		t.Error("read-only Begin succeeded")
	}
	if _, err := ro.Claim(testID("missing")); !errors.Is(err, ErrNotFound) {
		t.Errorf("read-only Claim of a missing record = %v, want ErrNotFound", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != name(id)+recordExt {
		t.Errorf("directory after the read-only view = %v, want only the record", entries)
	}
}

// A directory another user could write to, or owned by another user, is refused by every way in,
// with an error naming the rule; one Create makes is the owner's only.
func TestUnsafeDirectoryRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o777 | os.ModeSticky, 0o770, 0o702} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "j")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, mode); err != nil {
				t.Fatal(err)
			}
			assertRefused(t, dir, "group- or world-writable")
		})
	}
	t.Run("other owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("only root can give a directory to another user")
		}
		dir := filepath.Join(t.TempDir(), "j")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		assertRefused(t, dir, "owned by uid 65534, not by this process's user")
	})
	t.Run("created", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "new", "j")
		if _, err := Create(dir); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("created directory: %v, %v; want mode 0700", fi.Mode(), err)
		}
	})
}

func assertRefused(t *testing.T, dir, rule string) {
	t.Helper()
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), rule) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s = %v, want an error naming %s and the rule %q", what, err, dir, rule)
		}
	}
	_, err := Open(dir)
	check("Open", err)
	_, err = Create(dir)
	check("Create", err)
	d := At(dir)
	_, _, err = d.List()
	check("List", err)
	check("Begin", d.Begin(Record{ID: testID("u"), PartSize: 1}))
	_, err = d.Claim(testID("u"))
	check("Claim", err)
	_, _, err = d.ReadOnly().List()
	check("read-only List", err)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files created in a refused directory: %v", entries)
	}
}

// The largest record a write can make (10,000 parts, every field at its widest) is written and
// read back; a file over the cap is refused unread, and a record that would be is not written.
func TestRecordSizeCap(t *testing.T) {
	if maxParts != store.MaxPartNumber {
		t.Fatalf("maxParts %d, store.MaxPartNumber %d", maxParts, store.MaxPartNumber)
	}
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := ID{
		Endpoint: "https://" + strings.Repeat("e", 240) + ".example.com",
		Bucket:   strings.Repeat("b", 63),
		Key:      strings.Repeat("<", 1024), // escaped as \u003c: six bytes each
		UploadID: strings.Repeat("U", 512),
	}
	rec := Record{ID: id, PartSize: 5 << 30, SourceSize: 1<<63 - 1, ChecksumAlgorithm: "SHA256", SSE: "aws:kms", SSECustomerKeyMD5: strings.Repeat("m", 24),
		Object: &Object{Size: 1<<63 - 1, ChecksumAlgorithm: "SHA256", Checksum: strings.Repeat("c", 44) + "-10000", ETag: `"` + strings.Repeat("f", 32) + `-10000"`}}
	for n := int32(1); n <= maxParts; n++ {
		rec.Parts = append(rec.Parts, Part{Number: n, Size: 1<<63 - 1, Checksum: strings.Repeat("c", 44), MD5: strings.Repeat("d", 32), ETag: `"` + strings.Repeat("f", 32) + `"`})
	}
	if err := d.Begin(rec); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, name(id)+recordExt))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("largest record: %d bytes, cap %d", fi.Size(), maxRecordSize)
	if fi.Size() > maxRecordSize/2 {
		t.Errorf("the widest 10,000-part record is %d bytes: the cap %d leaves too little room for longer ETags", fi.Size(), maxRecordSize)
	}
	recs, problems, err := d.List()
	if err != nil || len(problems) != 0 || len(recs) != 1 || len(recs[0].Parts) != maxParts {
		t.Fatalf("List of the largest record = %d records, problems %v, %v", len(recs), problems, err)
	}

	// A record over the cap is refused before it is read: a sparse file, so nothing is written.
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(maxRecordSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, problems, err = d.List()
	if err != nil {
		t.Fatal(err)
	}
	if p := problemFor(t, problems, big); !strings.Contains(p.Err.Error(), "larger than the largest journal record") {
		t.Errorf("problem for the oversized file = %v", p.Err)
	}
	// One the cap would refuse is not written: it could not be read back.
	huge := testID("huge")
	parts := make([]Part, maxParts)
	for i := range parts {
		parts[i] = Part{Number: int32(i + 1), Size: 1, ETag: strings.Repeat("f", 2<<10)}
	}
	if err := d.Begin(Record{ID: huge, PartSize: 1, Parts: parts}); err == nil || !strings.Contains(err.Error(), "more than a journal record may hold") {
		t.Errorf("Begin of an over-cap record = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, name(huge)+recordExt)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the over-cap record was written: %v", err)
	}
}
