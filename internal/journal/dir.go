package journal

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Dir is a Journal in one local directory: <name>.json holds a record, <name>.lock is its claim
// (an flock), where name is derived from the record's ID. Several processes may share the
// directory.
//
// The directory is trusted only as far as these rules make it safe (a record decides which
// uploads are aborted, and the process acts on it with its own rights): on unix systems it must
// be owned by the process's effective user and not be group- or world-writable; its files are
// opened without following symbolic links and without blocking (a FIFO), and only regular files
// of at most maxRecordSize bytes are read. Anything else in it is reported as a Problem and
// skipped, and an error never quotes a file's content.
type Dir struct {
	path     string
	readOnly bool // a dry run's view: creates, changes and removes nothing
	fsyncs   atomic.Int64

	mu   sync.Mutex
	held map[string]*held // claimed by this Dir, by record name
}

type held struct {
	mu   sync.Mutex // serialises changes to one record (parts finish concurrently)
	lock *os.File
	rec  Record
}

// Open returns the journal in path, which must be an existing directory (recovery must not
// invent an empty journal out of a mistyped path) that only its owner, the process's user, can
// write to (see Dir).
func Open(path string) (*Dir, error) {
	if err := checkDir(path); err != nil {
		return nil, err
	}
	return &Dir{path: path, held: map[string]*held{}}, nil
}

// checkDir enforces Dir's rules on the directory itself. A symbolic link to a directory is
// followed: the rules apply to the directory it names.
func checkDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("journal %s: not a directory", path)
	}
	return dirSafe(path, fi)
}

// At returns the journal in path without touching the file system: the writer creates the
// directory before its first record and Recover checks that it exists (writer.Options.JournalDir).
func At(path string) *Dir { return &Dir{path: path, held: map[string]*held{}} }

// Create returns the journal in path, creating the directory (mode 0700) when missing; an
// existing directory must keep Open's rules.
func Create(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return Open(path)
}

// Path is the journal's directory.
func (d *Dir) Path() string { return d.path }

// ReadOnly returns a view of d's directory for a dry run, which must create nothing: its Claim
// takes the flock of an existing lock file (so a record a live writer holds is still in use)
// but never creates one (a record without a lock file is held by nobody: a holder keeps its lock
// file until it lets go), and Begin, AddPart, Intend and Remove fail.
func (d *Dir) ReadOnly() *Dir { return &Dir{path: d.path, readOnly: true, held: map[string]*held{}} }

var errReadOnly = errors.New("journal: a read-only view (dry run) changes nothing")

// Fsyncs counts the fsync calls this Dir made (files and directory), for measuring its cost.
func (d *Dir) Fsyncs() int64 { return d.fsyncs.Load() }

// name is the file name stem of a record: a hash, so any key is a safe, short file name.
func name(id ID) string {
	h := sha256.New()
	for _, s := range []string{id.Endpoint, id.Bucket, id.Key, id.UploadID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

const (
	recordExt = ".json"
	lockExt   = ".lock"
	tmpPrefix = ".tmp-"
)

// maxRecordSize bounds a record file: a larger one is refused unread, so a planted file cannot
// exhaust memory. The largest legitimate record has maxParts parts; one part as written (indented
// JSON) takes about 240 bytes with its widest fields (number 10000, a 19-digit size, a SHA-256
// checksum, an MD5, a quoted S3 ETag), so partBudget leaves room for ETags several hundred bytes
// long, and headerBudget holds the rest (a 1 KiB key even with every byte escaped, endpoint
// identity, upload id, times, intended object). TestRecordSizeCap writes such a record.
const (
	maxParts      = 10000 // store.MaxPartNumber: no store takes more parts
	partBudget    = 1 << 10
	headerBudget  = 64 << 10
	maxRecordSize = headerBudget + maxParts*partBudget // a little under 10 MiB
)

func (id ID) validate() error {
	switch {
	case id.Endpoint == "":
		return errors.New("empty endpoint")
	case id.Bucket == "":
		return errors.New("empty bucket")
	case id.Key == "":
		return errors.New("empty key")
	case id.UploadID == "":
		return errors.New("empty upload id")
	}
	return nil
}

// validate's errors never quote the record's values: read reports them for any file.
func (r *Record) validate() error {
	if r.Version != formatVersion {
		return fmt.Errorf("another format version than %d, the one this safeput reads", formatVersion)
	}
	if err := r.ID.validate(); err != nil {
		return err
	}
	if r.PartSize <= 0 {
		return errors.New("part size not positive")
	}
	if len(r.Parts) > maxParts {
		return fmt.Errorf("more than %d parts", maxParts)
	}
	for i, p := range r.Parts {
		if p.Number < 1 || p.Size < 0 || p.ETag == "" {
			return fmt.Errorf("part at position %d: a number below 1, a negative size or no ETag", i+1)
		}
	}
	return nil
}

// Begin records a new upload and claims it.
func (d *Dir) Begin(r Record) error {
	if d.readOnly {
		return errReadOnly
	}
	if err := checkDir(d.path); err != nil {
		return err
	}
	r.Version = formatVersion
	if r.Created.IsZero() {
		r.Created = time.Now().UTC()
	}
	r.Updated = r.Created
	if r.Parts == nil {
		r.Parts = []Part{}
	}
	if err := r.validate(); err != nil {
		return fmt.Errorf("journal: begin: %w", err)
	}
	n := name(r.ID)
	lock, err := d.claimLock(n)
	if err != nil {
		return err
	}
	h := &held{lock: lock, rec: r}
	if err := d.write(n, &h.rec); err != nil {
		d.dropLock(n, lock, true)
		return err
	}
	d.mu.Lock()
	d.held[n] = h
	d.mu.Unlock()
	return nil
}

// AddPart adds or replaces part p of a claimed record.
func (d *Dir) AddPart(id ID, p Part) error {
	return d.update(id, func(r *Record) {
		for i := range r.Parts {
			if r.Parts[i].Number == p.Number {
				r.Parts[i] = p
				return
			}
		}
		r.Parts = append(r.Parts, p)
		sort.Slice(r.Parts, func(i, j int) bool { return r.Parts[i].Number < r.Parts[j].Number })
	})
}

// Intend records the object Complete is about to create.
func (d *Dir) Intend(id ID, o Object) error {
	return d.update(id, func(r *Record) { r.Object = &o })
}

func (d *Dir) update(id ID, change func(*Record)) error {
	if d.readOnly {
		return errReadOnly
	}
	n := name(id)
	d.mu.Lock()
	h := d.held[n]
	d.mu.Unlock()
	if h == nil {
		return fmt.Errorf("journal: %s/%s upload %s: %w", id.Bucket, id.Key, id.UploadID, ErrNotClaimed)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	next := h.rec
	next.Parts = append([]Part(nil), h.rec.Parts...)
	change(&next)
	next.Updated = time.Now().UTC()
	if err := d.write(n, &next); err != nil {
		return err
	}
	h.rec = next
	return nil
}

// unhold takes id's claim out of the held set (nil when this Dir does not hold it).
func (d *Dir) unhold(id ID) (string, *held) {
	n := name(id)
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.held[n]
	delete(d.held, n)
	return n, h
}

// Remove deletes a claimed record and its claim.
func (d *Dir) Remove(id ID) error {
	if d.readOnly {
		return errReadOnly
	}
	n, h := d.unhold(id)
	if h == nil {
		return fmt.Errorf("journal: remove %s/%s upload %s: %w", id.Bucket, id.Key, id.UploadID, ErrNotClaimed)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	err := os.Remove(filepath.Join(d.path, n+recordExt))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.mu.Lock()
		d.held[n] = h // still ours: the caller may retry or release
		d.mu.Unlock()
		return fmt.Errorf("journal: remove: %w", err)
	}
	d.dropLock(n, h.lock, true)
	return d.syncDir()
}

// Release drops the claim and keeps the record.
func (d *Dir) Release(id ID) error {
	n, h := d.unhold(id)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	d.dropLock(n, h.lock, false)
	return nil
}

// Claim takes the claim on an existing record and returns it.
func (d *Dir) Claim(id ID) (Record, error) {
	if err := checkDir(d.path); err != nil {
		return Record{}, err
	}
	n := name(id)
	lock, err := d.claimLock(n)
	if err != nil {
		return Record{}, err
	}
	rec, err := d.read(n + recordExt)
	if err != nil {
		// A missing record's lock file is ours to delete: nobody else can hold it now.
		d.dropLock(n, lock, errors.Is(err, fs.ErrNotExist))
		if errors.Is(err, fs.ErrNotExist) {
			return Record{}, fmt.Errorf("journal: %s/%s upload %s: %w", id.Bucket, id.Key, id.UploadID, ErrNotFound)
		}
		return Record{}, fmt.Errorf("journal: %s: %w", filepath.Join(d.path, n+recordExt), err)
	}
	if rec.ID != id {
		d.dropLock(n, lock, false)
		return Record{}, fmt.Errorf("journal: %s holds another upload than its name says", n+recordExt)
	}
	d.mu.Lock()
	d.held[n] = &held{lock: lock, rec: rec}
	d.mu.Unlock()
	return rec, nil
}

// List returns every valid record (oldest first) and a Problem for every other file, except the
// journal's own lock files and temp files of a write a crash interrupted. A symbolic link, FIFO,
// socket, device or directory is a Problem whatever its name, and never opened.
func (d *Dir) List() ([]Record, []Problem, error) {
	if err := checkDir(d.path); err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, nil, fmt.Errorf("journal %s: %w", d.path, err)
	}
	var recs []Record
	var problems []Problem
	for _, e := range entries {
		base := e.Name()
		full := filepath.Join(d.path, base)
		switch {
		case !e.Type().IsRegular():
			problems = append(problems, Problem{Path: full, Err: fmt.Errorf("%w; skipped", notRegular(e.Type()))})
			continue
		case strings.HasPrefix(base, tmpPrefix) || strings.HasSuffix(base, lockExt):
			continue
		case !strings.HasSuffix(base, recordExt):
			problems = append(problems, Problem{Path: full, Err: errors.New("not a journal record (no .json suffix): skipped")})
			continue
		}
		rec, err := d.read(base)
		if err != nil {
			problems = append(problems, Problem{Path: full, Err: err})
			continue
		}
		recs = append(recs, rec)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Created.Before(recs[j].Created) })
	return recs, problems, nil
}

// read parses and validates one record file; the file's name must be the one its ID gives, so
// a record copied from elsewhere or edited by hand is never acted on under a wrong name.
func (d *Dir) read(base string) (Record, error) {
	data, err := readRegular(filepath.Join(d.path, base), maxRecordSize)
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return Record{}, unparsable(err)
	}
	if err := rec.validate(); err != nil {
		return Record{}, fmt.Errorf("not a valid journal record: %w", err)
	}
	if want := name(rec.ID) + recordExt; want != base {
		return Record{}, fmt.Errorf("not a journal record of this directory: its content names another file (%s)", want)
	}
	return rec, nil
}

// unparsable says why a file is not JSON of a record without its bytes: encoding/json's messages
// quote the offending character or value, and the file may be anything.
func unparsable(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("not a readable journal record (truncated or not JSON): invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("not a journal record: a value of the wrong type at byte %d", typ.Offset)
	}
	return errors.New("not a journal record: a value it holds is not of its field's kind (a time, say)")
}

// readRegular reads path, which must be a regular file of at most limit bytes. It follows no
// symbolic link and never blocks on a FIFO, and checks the file it opened (fstat), not the path,
// so nothing swapped in after a look is read.
func readRegular(path string, limit int64) ([]byte, error) {
	if err := preOpenCheck(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNoFollow|openNonBlock, 0)
	if err != nil {
		return nil, openFailed(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fi.Mode())
	}
	if fi.Size() > limit {
		return nil, tooLarge(limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit { // grew since the fstat
		return nil, tooLarge(limit)
	}
	return data, nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("larger than the largest journal record (%d bytes, for %d parts): not read", limit, maxParts)
}

// notRegular says what a file of mode m is and that the journal will not use it.
func notRegular(m fs.FileMode) error {
	what := "not a regular file"
	switch {
	case m&fs.ModeSymlink != 0:
		return errors.New("a symbolic link: the journal never follows one")
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s, not a regular file: the journal uses regular files only", what)
}

// openFailed explains a failed open: O_NOFOLLOW fails on a symbolic link (ELOOP, or EMLINK on
// some BSDs), and a socket cannot be opened at all; a look at the path says which it was.
func openFailed(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
		return notRegular(fi.Mode())
	}
	return err
}

// createTemp creates a new file for write: O_EXCL and O_NOFOLLOW, so a name planted in the
// directory is never written through.
func createTemp(dir, prefix string) (*os.File, error) {
	for range 100 {
		var r [8]byte
		_, _ = rand.Read(r[:])
		f, err := os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(r[:])), os.O_RDWR|os.O_CREATE|os.O_EXCL|openNoFollow, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, errors.New("no unused temp file name")
}

// write replaces a record atomically: a crash leaves the old or the new version.
func (d *Dir) write(n string, rec *Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if len(data) > maxRecordSize {
		return fmt.Errorf("journal: write %s: the record would be %d bytes, more than a journal record may hold (%d): it could not be read back",
			n+recordExt, len(data), maxRecordSize)
	}
	tmp, err := createTemp(d.path, tmpPrefix+n+"-")
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	fail := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("journal: write %s: %w", n+recordExt, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	d.fsyncs.Add(1)
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.path, n+recordExt)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("journal: write %s: %w", n+recordExt, err)
	}
	return d.syncDir()
}

// syncDir makes a rename or remove durable.
func (d *Dir) syncDir() error {
	f, err := os.Open(d.path)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	d.fsyncs.Add(1)
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: sync directory: %w", err)
	}
	return nil
}

// claimLock takes the flock on n's lock file. The file can be deleted by a holder that removes
// its record between our open and our lock, so the lock counts only if the path still names the
// file we locked. The lock file is never reached through a symbolic link (O_CREAT with
// O_NOFOLLOW creates nothing at a link's target) and must be a regular file. A read-only view
// creates none: without one, it returns a nil file (nobody holds the record).
func (d *Dir) claimLock(n string) (*os.File, error) {
	p := filepath.Join(d.path, n+lockExt)
	flags := os.O_RDWR | os.O_CREATE | openNoFollow | openNonBlock
	if d.readOnly {
		flags = os.O_RDONLY | openNoFollow | openNonBlock
	}
	for range 5 {
		if err := preOpenCheck(p); err != nil {
			return nil, fmt.Errorf("journal: lock file %s: %w", p, err)
		}
		f, err := os.OpenFile(p, flags, 0o600)
		if d.readOnly && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("journal: lock file %s: %w", p, openFailed(p, err))
		}
		fi, ferr := f.Stat()
		if ferr == nil && !fi.Mode().IsRegular() {
			_ = f.Close()
			return nil, fmt.Errorf("journal: lock file %s: %w", p, notRegular(fi.Mode()))
		}
		if err := lockFile(f); err != nil {
			_ = f.Close()
			if errors.Is(err, errWouldBlock) {
				return nil, fmt.Errorf("journal: %s: %w", n, ErrInUse)
			}
			return nil, fmt.Errorf("journal: lock %s: %w", p, err)
		}
		pi, perr := os.Lstat(p)
		if ferr == nil && perr == nil && os.SameFile(fi, pi) {
			return f, nil
		}
		_ = f.Close() // deleted under us: try again with the new file
	}
	return nil, fmt.Errorf("journal: %s: %w", n, ErrInUse)
}

// dropLock releases a claim; with unlink it also deletes the lock file (while still holding it).
// A read-only view deletes nothing, and may hold no file.
func (d *Dir) dropLock(n string, f *os.File, unlink bool) {
	if f == nil {
		return
	}
	if unlink && !d.readOnly {
		_ = os.Remove(filepath.Join(d.path, n+lockExt))
	}
	_ = f.Close() // closing the descriptor releases the flock
}
