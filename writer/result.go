package writer

import (
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// Result is what a successful write did, as checked against the store.
type Result struct {
	Bucket    string
	Key       string
	Size      int64
	ETag      string
	VersionID string
	// Checksum is the full-object checksum sent and compared (zero when none was used).
	Checksum store.Checksum
	// Encryption is the server-side encryption the store reported for the object after commit
	// (zero when it reported none, or when no encryption was asked for and the commit's answer
	// stood for the HEAD: SaveRereads). For SSE-C it carries the key's MD5, never the key.
	Encryption store.Encryption
	// Multipart is true when the object was assembled from Parts parts of PartSize bytes.
	Multipart bool
	Parts     int
	PartSize  int64
	UploadID  string
	// BytesSent counts every body byte sent, retries included.
	BytesSent int64
	// Requests counts every request sent; Failures counts the failed ones by kind. They and
	// BytesSent leave out the checksum probe's, which go to an upload of its own (SaveProbe).
	Requests int
	Failures map[sperrors.Kind]int
	// Verified names what was compared after commit; VerifiedStrong is false for length-only.
	Verified       verify.Method
	VerifiedStrong bool
	// VerifiedBy names the request whose answer gave that evidence: "PutObject" or
	// "CompleteMultipartUpload" when the commit's own answer proved the object and no HEAD was
	// sent (SaveRereads: a single PUT's ETag equal to the MD5 of its body, or a checksum echoed
	// by a store known to check it), "HeadObject" for the HEAD after commit (also the one that
	// found an earlier attempt's object at the key), "GetObject" for a read-back.
	VerifiedBy string
	// Unproven lists what evidence was missing when a write was accepted on length alone
	// (Options.AllowWeakVerification); empty otherwise.
	Unproven []string
	// Notes lists what the store did that the caller may want to know: a Complete or PutObject
	// answer without an ETag, a checksum header it refused, each check that could not run because
	// the store lacks an optional operation (ListParts, ListMultipartUploads, HEAD's checksum
	// mode) and why, an abort it took but could not confirm.
	Notes []string
	// AlreadyExisted is true when a create-only write found this exact object already at the key
	// (a retry after a lost response): nothing new was written, and that is success.
	AlreadyExisted bool
	// CommitAnswerLost is true when an attempt of the commit may have landed without this write
	// hearing so: a PutObject or CompleteMultipartUpload sent whole whose answer was lost, a
	// Complete answered that its upload is gone (an attempt of it may have committed it, whatever
	// it answered), or, after a resume, the crashed run's Complete. With AlreadyExisted it says
	// the object found may be this write's own; without it, that object was at the key before
	// this write's commit reached the store, which a create-only caller may need to tell apart.
	CommitAnswerLost bool
	// LeftBehind lists incomplete uploads of this key that safeput knows it caused but could not
	// abort (a lost CreateMultipartUpload answer, an earlier Upload attempt, or the checksum
	// probe's own upload, then a failed abort): a sweep must remove them.
	LeftBehind []string
	// MaybeLeftBehind is true when a CreateMultipartUpload answer was lost and the look for the
	// upload it may have left failed (Notes says how): an empty incomplete upload of this key that
	// no id names may remain. A sweep of the key finds it; with Options.JournalDir, so does Recover.
	MaybeLeftBehind bool
	// UploadAttempts counts whole-upload attempts (above 1 after an integrity retry of a
	// replayable source, or after the store dropped the upload, aborted elsewhere, and a new
	// upload sent the source again: Notes then names the dropped upload).
	UploadAttempts int
	// ResumedParts and ResumedBytes count the parts of a journaled upload a dead process had
	// sent that this write reused instead of sending again (Options.JournalDir).
	ResumedParts int
	ResumedBytes int64
	Elapsed      time.Duration
}

// EventType names a step of a write.
type EventType string

// The events an observer sees.
const (
	EventPartStarted EventType = "part-started"
	EventPartDone    EventType = "part-done"
	EventRetry       EventType = "retry"
	EventVerify      EventType = "verify"
	EventAbort       EventType = "abort"
	EventDone        EventType = "done"
	EventFailed      EventType = "failed"
	// EventBudgetWait: a part buffer waited Elapsed for room in the memory budget (Size bytes;
	// Err set when the write ended while waiting). Only instrumented writes (Options.Instrumentation)
	// time the wait; an observer of such a write sees it too.
	EventBudgetWait EventType = "budget-wait"
)

// Event is one step of a write, for progress bars and metrics.
type Event struct {
	Type       EventType
	Bucket     string
	Key        string
	UploadID   string
	PartNumber int32
	// Size is the part's size for part events, the object's size for verify and done.
	Size    int64
	Attempt int
	// Kind and Err are set for retry, abort and failed events.
	Kind   sperrors.Kind
	Err    error
	Method verify.Method
	// BytesDone is the number of bytes acknowledged by the store so far.
	BytesDone int64
	// Elapsed is the write's time so far for done and failed, the wait for budget-wait, and for
	// retry the time since the previous attempt failed (the backoff or throttling wait).
	Elapsed time.Duration
}
