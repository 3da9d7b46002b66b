package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
type Dir struct {
	path   string
	fsyncs atomic.Int64

	mu   sync.Mutex
	held map[string]*held // claimed by this Dir, by record name
}

type held struct {
	mu   sync.Mutex // serialises changes to one record (parts finish concurrently)
	lock *os.File
	rec  Record
}

// Open returns the journal in path, which must be an existing directory (recovery must not
// invent an empty journal out of a mistyped path).
func Open(path string) (*Dir, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("journal %s: not a directory", path)
	}
	return &Dir{path: path, held: map[string]*held{}}, nil
}

// At returns the journal in path without touching the file system: the writer creates the
// directory before its first record and Recover checks that it exists (writer.Options.JournalDir).
func At(path string) *Dir { return &Dir{path: path, held: map[string]*held{}} }

// Create returns the journal in path, creating the directory (mode 0700) when missing.
func Create(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return Open(path)
}

// Path is the journal's directory.
func (d *Dir) Path() string { return d.path }

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

func (r *Record) validate() error {
	if r.Version != formatVersion {
		return fmt.Errorf("format version %d, this safeput reads version %d", r.Version, formatVersion)
	}
	if err := r.ID.validate(); err != nil {
		return err
	}
	if r.PartSize <= 0 {
		return fmt.Errorf("part size %d", r.PartSize)
	}
	for _, p := range r.Parts {
		if p.Number < 1 || p.Size < 0 || p.ETag == "" {
			return fmt.Errorf("part %d: size %d, etag %q", p.Number, p.Size, p.ETag)
		}
	}
	return nil
}

// Begin records a new upload and claims it.
func (d *Dir) Begin(r Record) error {
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
		return Record{}, err
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
// journal's own lock files and temp files of a write a crash interrupted.
func (d *Dir) List() ([]Record, []Problem, error) {
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
		case strings.HasPrefix(base, tmpPrefix) || (strings.HasSuffix(base, lockExt) && e.Type().IsRegular()):
			continue
		case e.IsDir():
			problems = append(problems, Problem{Path: full, Err: errors.New("a directory, not a journal record: skipped")})
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
	data, err := os.ReadFile(filepath.Join(d.path, base))
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return Record{}, fmt.Errorf("not a readable journal record (truncated or not JSON): %w", err)
	}
	if err := rec.validate(); err != nil {
		return Record{}, fmt.Errorf("not a valid journal record: %w", err)
	}
	if want := name(rec.ID) + recordExt; want != base {
		return Record{}, fmt.Errorf("not a journal record of this directory: its content names another file (%s)", want)
	}
	return rec, nil
}

// write replaces a record atomically: a crash leaves the old or the new version.
func (d *Dir) write(n string, rec *Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	tmp, err := os.CreateTemp(d.path, tmpPrefix+n+"-*")
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
// file we locked.
func (d *Dir) claimLock(n string) (*os.File, error) {
	p := filepath.Join(d.path, n+lockExt)
	for range 5 {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		if err := lockFile(f); err != nil {
			_ = f.Close()
			if errors.Is(err, errWouldBlock) {
				return nil, fmt.Errorf("journal: %s: %w", n, ErrInUse)
			}
			return nil, fmt.Errorf("journal: lock %s: %w", p, err)
		}
		fi, ferr := f.Stat()
		pi, perr := os.Stat(p)
		if ferr == nil && perr == nil && os.SameFile(fi, pi) {
			return f, nil
		}
		_ = f.Close() // deleted under us: try again with the new file
	}
	return nil, fmt.Errorf("journal: %s: %w", n, ErrInUse)
}

// dropLock releases a claim; with unlink it also deletes the lock file (while still holding it).
func (d *Dir) dropLock(n string, f *os.File, unlink bool) {
	if unlink {
		_ = os.Remove(filepath.Join(d.path, n+lockExt))
	}
	_ = f.Close() // closing the descriptor releases the flock
}
