// Package journaltest lets tests outside the library's module read and plant the records of the
// upload journal that writer.Options.JournalDir keeps: a crash test checks what a killed process
// left, a recovery test plants the record a crash would have left.
//
// It knows the journal's files on its own (format version 1: one JSON record per upload, named by
// a hash of the upload's identity, beside the writers' lock files and the temp files of a write),
// not through the library's internal/journal, which other modules may not import. The library's
// TestJournaltestAgrees (internal/journal) checks that each reads what the other writes, field for
// field, so a change to the format shows there first; a journal a killed process left must be
// readable by the next safeput installed anyway.
//
// Test support, outside safeput's compatibility promise (see package storetest).
package journaltest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// formatVersion is the record format this package reads and writes.
const formatVersion = 1

// The files of a journal directory besides its records, which List skips.
const (
	recordExt = ".json"
	lockExt   = ".lock"
	tmpPrefix = ".tmp-"
)

// ID names one upload: the endpoint identity it was started on (writer.Options.JournalEndpoint,
// the endpoint URL in the CLI), bucket, key and upload id.
type ID struct {
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	UploadID string `json:"upload_id"`
}

// Part is one part the store acknowledged and safeput verified.
type Part struct {
	Number   int32  `json:"number"`
	Size     int64  `json:"size"`
	Checksum string `json:"checksum,omitempty"` // base64, of Record.ChecksumAlgorithm
	MD5      string `json:"md5,omitempty"`      // hex
	ETag     string `json:"etag"`
}

// Object is the object a Complete was about to create at the key.
type Object struct {
	Size              int64  `json:"size"`
	ChecksumAlgorithm string `json:"checksum_algorithm,omitempty"`
	Checksum          string `json:"checksum,omitempty"`
	ETag              string `json:"etag,omitempty"`
}

// Record is everything journaled about one upload.
type Record struct {
	Version int `json:"version"`
	ID
	PartSize          int64     `json:"part_size"`
	SourceSize        int64     `json:"source_size"` // -1 when unknown before the upload
	ChecksumAlgorithm string    `json:"checksum_algorithm,omitempty"`
	Created           time.Time `json:"created"`
	Updated           time.Time `json:"updated"`
	Parts             []Part    `json:"parts"`
	// Object is set just before Complete is sent; nil until then.
	Object *Object `json:"object,omitempty"`
	// Creating marks the placeholder written just before CreateMultipartUpload is sent (its
	// UploadID is not the store's yet).
	Creating          bool   `json:"creating,omitempty"`
	SSE               string `json:"sse,omitempty"`
	SSECustomerKeyMD5 string `json:"sse_customer_key_md5,omitempty"`
}

// Problem is a file in the journal that is not a usable record.
type Problem struct {
	Path string
	Err  error
}

// Dir is a journal directory.
type Dir struct{ path string }

// Open returns the journal in path, an existing directory.
func Open(path string) (*Dir, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("journal %s: not a directory", path)
	}
	return &Dir{path: path}, nil
}

// fileName is the name of id's record file in a journal directory.
func fileName(id ID) string {
	h := sha256.New()
	for _, s := range []string{id.Endpoint, id.Bucket, id.Key, id.UploadID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16]) + recordExt
}

// List returns every record in the journal, oldest first, and a Problem for every other file
// except lock files and temp files: one that is not a regular file, has no .json suffix, is not
// a record of this format, or whose content names another file than its own.
func (d *Dir) List() ([]Record, []Problem, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, nil, fmt.Errorf("journal %s: %w", d.path, err)
	}
	var recs []Record
	var problems []Problem
	for _, e := range entries {
		base, full := e.Name(), filepath.Join(d.path, e.Name())
		switch {
		case !e.Type().IsRegular():
			problems = append(problems, Problem{Path: full, Err: errors.New("not a regular file")})
			continue
		case strings.HasPrefix(base, tmpPrefix) || strings.HasSuffix(base, lockExt):
			continue
		case !strings.HasSuffix(base, recordExt):
			problems = append(problems, Problem{Path: full, Err: errors.New("not a journal record (no .json suffix)")})
			continue
		}
		rec, err := read(full)
		if err != nil {
			problems = append(problems, Problem{Path: full, Err: err})
			continue
		}
		recs = append(recs, rec)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Created.Before(recs[j].Created) })
	return recs, problems, nil
}

func read(path string) (Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return Record{}, fmt.Errorf("not a journal record: %w", err)
	}
	if rec.Version != formatVersion {
		return Record{}, fmt.Errorf("format version %d, not %d", rec.Version, formatVersion)
	}
	if want := fileName(rec.ID); want != filepath.Base(path) {
		return Record{}, fmt.Errorf("its content names another file (%s)", want)
	}
	return rec, nil
}

// Plant writes r into the journal as a writer that died left it: no writer holds it, so recovery
// or a resumed put may claim it. Version is set; Created and Updated, when zero, are now; nil
// Parts are none. It replaces a record of the same ID.
func (d *Dir) Plant(r Record) error {
	r.Version = formatVersion
	if r.Created.IsZero() {
		r.Created = time.Now().UTC()
	}
	if r.Updated.IsZero() {
		r.Updated = r.Created
	}
	if r.Parts == nil {
		r.Parts = []Part{}
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// Through a temp file and a rename, as the writer does: a reader never sees half a record.
	tmp, err := os.CreateTemp(d.path, tmpPrefix+"plant-")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(d.path, fileName(r.ID))); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
