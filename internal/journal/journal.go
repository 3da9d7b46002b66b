// Package journal keeps, on local disk, what a process needs to finish or clean up a multipart
// upload after it dies: the upload id, each part the store acknowledged and safeput verified,
// and the object Complete is about to make. A restarted process reads it back to learn whether a
// Complete sent just before the crash landed (writer.Recover), to abort uploads nobody will
// finish, or to resume a large upload without sending its parts again.
//
// Dir is the directory-backed implementation: one JSON file per upload, replaced atomically
// (temp file, fsync, rename, fsync of the directory) on every change, so a crash at any instant
// leaves either the previous or the next version of a record, never a torn one. A writer claims
// its record with an flock held until it removes or releases it, so two processes (or two
// writers in one process) never drive the same upload, and recovery leaves alone an upload a
// live writer still owns. The kernel drops the claim of a killed process.
package journal

import (
	"errors"
	"time"
)

// formatVersion is the version of the record format this package writes and reads.
const formatVersion = 1

// ID names one upload: the endpoint it was started on (an identity string chosen by the caller,
// the endpoint URL in the CLI), bucket, key and upload id.
type ID struct {
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	UploadID string `json:"upload_id"`
}

// Part is one part the store acknowledged and safeput verified.
type Part struct {
	Number int32 `json:"number"`
	Size   int64 `json:"size"`
	// Checksum is the part's checksum (base64, of Record.ChecksumAlgorithm), "" when none.
	Checksum string `json:"checksum,omitempty"`
	// MD5 is the part's MD5 (hex) when it was computed, "" otherwise.
	MD5  string `json:"md5,omitempty"`
	ETag string `json:"etag"`
}

// Object is the object a Complete is about to create at the key: what recovery compares the key
// with to decide whether that Complete landed.
type Object struct {
	Size int64 `json:"size"`
	// ChecksumAlgorithm and Checksum are the full-object checksum ("" when none was computed).
	ChecksumAlgorithm string `json:"checksum_algorithm,omitempty"`
	Checksum          string `json:"checksum,omitempty"`
	// ETag is the expected multipart ETag (md5-of-md5s-N) on stores that make one, else "".
	ETag string `json:"etag,omitempty"`
}

// Record is everything journaled about one upload.
type Record struct {
	Version int `json:"version"`
	ID
	// PartSize is the plan's part size: part n starts at (n-1)×PartSize in the source.
	PartSize int64 `json:"part_size"`
	// SourceSize is the whole object's size when known before the upload, else -1.
	SourceSize        int64     `json:"source_size"`
	ChecksumAlgorithm string    `json:"checksum_algorithm,omitempty"`
	Created           time.Time `json:"created"`
	Updated           time.Time `json:"updated"`
	Parts             []Part    `json:"parts"`
	// Object is set just before Complete is sent; nil until then.
	Object *Object `json:"object,omitempty"`
	// Creating marks a placeholder written just before CreateMultipartUpload is sent: its
	// UploadID is a placeholder (CreatingPrefix...), because the store has not named the upload
	// yet. A process killed before it journals the real id leaves only this; recovery then looks
	// for an empty upload of exactly this key started around Created that no record names.
	Creating bool `json:"creating,omitempty"`
	// SSE is the server-side encryption the upload was created with ("AES256", "aws:kms",
	// "SSE-C"; "" for none), and SSECustomerKeyMD5 the base64 MD5 of its SSE-C key: what a later
	// process needs to pick the key that HEADs and completes the object. The key itself is never
	// journaled; Recover is given it.
	SSE               string `json:"sse,omitempty"`
	SSECustomerKeyMD5 string `json:"sse_customer_key_md5,omitempty"`
}

// CreatingPrefix starts the placeholder upload id of a Creating record.
const CreatingPrefix = "creating-"

// Journal records uploads so a later process can recover or resume them. Implementations must
// be safe for concurrent use.
type Journal interface {
	// Begin records a new upload (r.UploadID set) and claims it for the caller.
	Begin(r Record) error
	// AddPart adds (or replaces, by number) a verified part of a claimed upload.
	AddPart(id ID, p Part) error
	// Intend records the object Complete is about to create.
	Intend(id ID, o Object) error
	// Remove deletes the record (the object landed, or the upload was aborted) and its claim.
	Remove(id ID) error
	// Claim takes the claim on an existing record, to resume or recover it. It returns an error
	// wrapping ErrInUse when another writer, in this process or another, holds it.
	Claim(id ID) (Record, error)
	// Release drops the caller's claim and keeps the record (for recovery later).
	Release(id ID) error
	// List returns every valid record, and a Problem for every file it could not use.
	List() ([]Record, []Problem, error)
}

// Problem is a file in the journal that is not a usable record: unreadable, truncated, of
// another format, or not a journal file at all. It is skipped, never acted on.
type Problem struct {
	Path string
	Err  error
}

// Errors callers branch on.
var (
	// ErrInUse: another writer holds the record's claim.
	ErrInUse = errors.New("journal record is in use by another writer")
	// ErrNotFound: no record for that upload.
	ErrNotFound = errors.New("no journal record for that upload")
	// ErrNotClaimed: the caller changes a record it does not hold.
	ErrNotClaimed = errors.New("journal record is not claimed by this writer")
)
