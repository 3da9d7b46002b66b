package flushsync

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/writer"
)

// File is one file of a segment: its key relative to the segment and its bytes.
type File struct {
	Name string
	Data []byte
}

// Manifest is what Commit publishes: the segment's files as they landed.
type Manifest struct {
	Channel string          `json:"channel"`
	Segment int64           `json:"segment"`
	Files   []ManifestEntry `json:"files"`
}

// ManifestEntry is one landed, verified file.
type ManifestEntry struct {
	Key      string `json:"key"`
	Size     int64  `json:"size"`
	ETag     string `json:"etag"`
	Checksum string `json:"checksum,omitempty"` // "<ALG>:<base64>" as safeput sent and compared it
	Verified string `json:"verified"`
}

// SegmentTask writes one segment's files (Prepare) and its manifest (Commit) through safeput.
//
// Keys are deterministic (<channel>/segments/<id>/<file>, <channel>/manifests/<id>.json) and
// every write is create-only, so a re-run after a lost answer finds its own object and reports
// it as landed (Result.AlreadyExisted) instead of writing a second copy under a new name, which
// is what leaves orphans behind when each attempt allocates new keys.
type SegmentTask struct {
	// Uploader is shared by every task writing to the store (one retry budget, one memory
	// budget, one journal, what its writes learned about the store).
	Uploader *writer.Uploader
	Bucket   string
	Chan     string
	Segment  int64
	// Files is the task's own buffer: it is kept until the task finishes, so a re-drive resends
	// exactly the same bytes.
	Files []File
	// Options are added to the Uploader's for every write of this task.
	Options []func(*writer.Options)

	mu      sync.Mutex
	results map[string]*writer.Result
	// AlreadyExisted counts writes that found their own object already landed.
	alreadyExisted int
}

// Channel implements Task.
func (t *SegmentTask) Channel() string { return t.Chan }

// Name implements Task.
func (t *SegmentTask) Name() string { return fmt.Sprintf("%s/segment-%d", t.Chan, t.Segment) }

// FileKey is where file name of this segment lands.
func (t *SegmentTask) FileKey(name string) string {
	return fmt.Sprintf("%s/segments/%d/%s", t.Chan, t.Segment, name)
}

// ManifestKey is where the segment's manifest lands.
func (t *SegmentTask) ManifestKey() string {
	return fmt.Sprintf("%s/manifests/%d.json", t.Chan, t.Segment)
}

// AlreadyExisted returns how many writes of this task found their object already landed.
func (t *SegmentTask) AlreadyExisted() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.alreadyExisted
}

func (t *SegmentTask) options() []func(*writer.Options) {
	return append(append([]func(*writer.Options){}, t.Options...), func(o *writer.Options) { o.CreateOnly = true })
}

// Prepare writes every file. It writes them all on every run, even those a previous run
// landed: a lost answer means the task cannot know, and create-only turns the second write of
// the same bytes into AlreadyExisted. It stops at the first failure (the error is classified;
// the manager decides).
func (t *SegmentTask) Prepare(ctx context.Context) error {
	results := make(map[string]*writer.Result, len(t.Files))
	for _, f := range t.Files {
		key := t.FileKey(f.Name)
		// bytes.Reader is an io.ReaderAt of known size: parts are sent straight from the task's
		// buffer, and it is replayable, so an integrity failure is retried from clean bytes.
		res, err := t.Uploader.Upload(ctx, t.Bucket, key, bytes.NewReader(f.Data), t.options()...)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", t.Name(), err)
		}
		results[key] = res
	}
	t.mu.Lock()
	for _, r := range results {
		if r.AlreadyExisted {
			t.alreadyExisted++
		}
	}
	t.results = results
	t.mu.Unlock()
	return nil
}

// Commit publishes the manifest. Every file must have landed verified by a content check (not
// length-only): a manifest that names a file is a promise the file is readable as written.
func (t *SegmentTask) Commit(ctx context.Context) error {
	t.mu.Lock()
	results := t.results
	t.mu.Unlock()
	m := Manifest{Channel: t.Chan, Segment: t.Segment}
	for _, f := range t.Files {
		key := t.FileKey(f.Name)
		r := results[key]
		if r == nil || r.Size != int64(len(f.Data)) {
			return &sperrors.Error{Kind: sperrors.Internal, Op: "Commit", Bucket: t.Bucket, Key: key, Message: "commit before the file landed"}
		}
		if !r.VerifiedStrong {
			return &sperrors.Error{Kind: sperrors.Integrity, Op: "Commit", Bucket: t.Bucket, Key: key,
				Message: fmt.Sprintf("verified only by %s; refusing to publish it", r.Verified)}
		}
		e := ManifestEntry{Key: key, Size: r.Size, ETag: r.ETag, Verified: string(r.Verified)}
		if !r.Checksum.IsZero() {
			e.Checksum = string(r.Checksum.Algorithm) + ":" + r.Checksum.Value
		}
		m.Files = append(m.Files, e)
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return &sperrors.Error{Kind: sperrors.Internal, Op: "Commit", Err: err}
	}
	opts := append(t.options(), func(o *writer.Options) { o.ContentType = "application/json" })
	res, err := t.Uploader.Upload(ctx, t.Bucket, t.ManifestKey(), bytes.NewReader(body), opts...)
	if err != nil {
		return fmt.Errorf("commit %s: %w", t.Name(), err)
	}
	if res.AlreadyExisted {
		t.mu.Lock()
		t.alreadyExisted++
		t.mu.Unlock()
	}
	return nil
}
