package frontend

import (
	stderrors "errors"
	"strings"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/writer"
)

// JSONResult is writer.Result for machines: the CLI's `put --json` output and the C ABI's
// close result.
type JSONResult struct {
	Status         string         `json:"status"`
	Bucket         string         `json:"bucket"`
	Key            string         `json:"key"`
	Size           int64          `json:"size"`
	ETag           string         `json:"etag"`
	VersionID      string         `json:"version_id,omitempty"`
	ChecksumAlg    string         `json:"checksum_algorithm,omitempty"`
	Checksum       string         `json:"checksum,omitempty"`
	Multipart      bool           `json:"multipart"`
	Parts          int            `json:"parts"`
	PartSize       int64          `json:"part_size"`
	UploadID       string         `json:"upload_id,omitempty"`
	BytesSent      int64          `json:"bytes_sent"`
	Requests       int            `json:"requests"`
	Failures       map[string]int `json:"failures"`
	Verified       string         `json:"verified"`
	VerifiedStrong bool           `json:"verified_strong"`
	// VerifiedBy: the request whose answer gave that evidence: "PutObject" or
	// "CompleteMultipartUpload" (the commit's own answer; no HEAD was sent), "HeadObject",
	// "GetObject" (a read-back).
	VerifiedBy string `json:"verified_by"`
	// Encryption is the server-side encryption the store reported after commit ("AES256",
	// "aws:kms", "SSE-C"), with the KMS key or the SSE-C key's MD5 (never the key).
	Encryption        string `json:"encryption,omitempty"`
	KMSKeyID          string `json:"kms_key_id,omitempty"`
	SSECustomerKeyMD5 string `json:"sse_customer_key_md5,omitempty"`
	// AllowLengthOnly: the caller accepted weak evidence; Unproven says what was missing.
	AllowLengthOnly bool     `json:"allow_length_only,omitempty"`
	Unproven        []string `json:"unproven,omitempty"`
	// Notes: facts about the store's answers, e.g. an empty ETag in a 200 Complete.
	Notes          []string `json:"notes,omitempty"`
	AlreadyExisted bool     `json:"already_existed"`
	// CommitAnswerLost: a commit attempt may have landed unanswered (Result.CommitAnswerLost).
	CommitAnswerLost bool `json:"commit_answer_lost,omitempty"`
	// LeftBehind: incomplete uploads safeput caused but could not abort; a sweep removes them.
	LeftBehind []string `json:"left_behind,omitempty"`
	// MaybeLeftBehind: a lost create's upload may remain that no id names (notes says why).
	MaybeLeftBehind bool  `json:"maybe_left_behind,omitempty"`
	UploadAttempts  int   `json:"upload_attempts"`
	ElapsedMS       int64 `json:"elapsed_ms"`
	// Warnings: choices of the caller's that weaken the transport (certificate verification
	// off, SSE-C over plain HTTP); set by the front end (warn.go), not by the Result.
	Warnings []string `json:"warnings,omitempty"`
}

// ResultJSON converts a Result.
func ResultJSON(r *writer.Result) JSONResult {
	j := JSONResult{
		Status: "landed", Bucket: r.Bucket, Key: r.Key, Size: r.Size, ETag: r.ETag, VersionID: r.VersionID,
		ChecksumAlg: string(r.Checksum.Algorithm), Checksum: r.Checksum.Value, Multipart: r.Multipart,
		Parts: r.Parts, PartSize: r.PartSize, UploadID: r.UploadID, BytesSent: r.BytesSent, Requests: r.Requests,
		Failures: map[string]int{}, Verified: string(r.Verified), VerifiedStrong: r.VerifiedStrong, VerifiedBy: r.VerifiedBy,
		AlreadyExisted: r.AlreadyExisted, CommitAnswerLost: r.CommitAnswerLost, LeftBehind: r.LeftBehind, MaybeLeftBehind: r.MaybeLeftBehind, UploadAttempts: r.UploadAttempts,
		ElapsedMS: r.Elapsed.Milliseconds(), AllowLengthOnly: len(r.Unproven) > 0, Unproven: redactAll(r.Unproven), Notes: redactAll(r.Notes),
		Encryption: string(r.Encryption.Type), KMSKeyID: r.Encryption.KMSKeyID, SSECustomerKeyMD5: r.Encryption.CustomerKeyMD5,
	}
	for k, n := range r.Failures {
		j.Failures[k.String()] = n
	}
	return j
}

// JSONError is the machine form of a failure.
type JSONError struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Kind     string `json:"kind,omitempty"`
	Code     string `json:"code,omitempty"`
	HTTP     int    `json:"http_status,omitempty"`
	UploadID string `json:"upload_id,omitempty"`
	// AbortFailed: the upload could not be aborted; sweep will find it.
	AbortFailed bool `json:"abort_failed,omitempty"`
	// ObjectLeft: an object of this write, not proven to be the source, is at the key.
	ObjectLeft bool   `json:"object_left,omitempty"`
	Error      string `json:"error"`
	// Warnings: as JSONResult's.
	Warnings []string `json:"warnings,omitempty"`
}

// ErrorJSON describes err, which the front end has mapped to exit code; the classified fields
// come from the *errors.Error inside it, if any.
func ErrorJSON(code int, err error) JSONError {
	je := JSONError{Status: "failed", ExitCode: code, Error: OneLine(err)}
	var se *sperrors.Error
	if stderrors.As(err, &se) {
		je.Kind, je.Code, je.HTTP, je.UploadID, je.AbortFailed = se.Kind.String(), se.Code, se.StatusCode, se.UploadID, se.AbortFailed
		je.ObjectLeft = se.ObjectLeft
	}
	if code == ExitCanceled {
		je.Kind = sperrors.Canceled.String()
	}
	if je.Kind == "" || je.Kind == sperrors.Unknown.String() {
		// Every failure carries a kind, also one that never reached the library (bad input).
		je.Kind = exitKind(code).String()
	}
	return je
}

// exitKind is the kind an exit code stands for when the error itself has none: bad input
// (ExitUsage) is permanent, as errors.Permanent documents: retrying it cannot help.
func exitKind(code int) sperrors.Kind {
	switch code {
	case ExitTransient:
		return sperrors.Transient
	case ExitIntegrity:
		return sperrors.Integrity
	case ExitCompatibility:
		return sperrors.Compatibility
	case ExitPrecondition:
		return sperrors.Precondition
	case ExitCanceled:
		return sperrors.Canceled
	case ExitUsage, ExitPermanent:
		return sperrors.Permanent
	default:
		return sperrors.Internal
	}
}

// OneLine renders err on one line, without the library's "safeput: " prefix, redacted as
// errors.Redact does whatever err's type: not every error that reaches the CLI's stderr line or
// a JSON answer is an *errors.Error, which redacts itself.
func OneLine(err error) string {
	s := sperrors.Redact(err.Error())
	s = strings.TrimPrefix(s, "safeput: ")
	return strings.NewReplacer("\r\n", " ", "\n", " ").Replace(s)
}

// redactAll returns ss redacted as errors.Redact does (nil for nil).
func redactAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = sperrors.Redact(s)
	}
	return out
}
