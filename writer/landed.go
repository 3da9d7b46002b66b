package writer

import (
	"cmp"
	"context"
	"encoding/hex"
	stderrors "errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// lostResponse marks a Complete answered NoSuchUpload (or, at a retry, Versity's InvalidPart):
// not retryable, check the key instead. retried: an earlier attempt of it went unanswered, so it
// may have committed (completeLost); at the first attempt nothing of this write had.
type lostResponse struct {
	err     error
	retried bool
}

func (l *lostResponse) Error() string { return "response lost: " + l.err.Error() }

func (l *lostResponse) Unwrap() error { return l.err }

// precheckCreateOnly checks the key free with a HEAD before a create-only commit the store is not
// known to make conditional (createGuard.headFirst): it finds an object already there, not one
// another writer commits after it. done is true when the key exists: err is then the outcome.
func (w *Writer) precheckCreateOnly(want integrity.Expected, res *Result) (done bool, err error) {
	herr := w.req.do("HeadObject", 0, func(ctx context.Context, _ int) error {
		_, err := w.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: w.bucket, Key: w.key, SSECustomerKey: w.customerKey()})
		return err
	})
	if herr == nil {
		cause := &sperrors.Error{Kind: sperrors.Precondition, Op: "HeadObject", StatusCode: 412, Code: "PreconditionFailed", Message: "key exists (found by the HEAD before the commit)"}
		return true, w.landedAlready(cause, want, res)
	}
	var re *store.ResponseError
	if stderrors.As(herr, &re) && re.StatusCode == 404 {
		return false, nil
	}
	if w.headPlainAfterRefusal(herr) != nil {
		// The key holds an object not under this write's SSE-C key (refused with the key, there
		// without it): not ours, whatever its bytes.
		e := w.errs.errorf(sperrors.Precondition, "HeadObject", herr, "an object already exists at the key, not encrypted with this write's SSE-C key; it was left untouched")
		e.StatusCode, e.Code = 412, "PreconditionFailed"
		return true, w.fail(e)
	}
	return true, w.fail(herr)
}

// landedAlready handles a 412 on a create-only write, or NoSuchUpload on a re-sent Complete: if
// the object at the key is exactly ours, the write landed (idempotent success); else it is a
// Precondition error and the existing object is left untouched.
func (w *Writer) landedAlready(cause error, want integrity.Expected, res *Result) error {
	head, herr := w.headWithChecksum()
	var j judgement
	assembledOurs := false
	if herr == nil {
		j = w.judge(want, head, res.Multipart)
		assembledOurs = res.Multipart && w.assembledFromOurParts(head)
	}
	finding, ours := w.decider().atKey(herr, j, res.Multipart, assembledOurs)
	switch finding {
	case keyHoldsOurs:
		if e := w.checkEncryption(head, res, ours); e != nil {
			return w.fail(e)
		}
		res.AlreadyExisted = true
		res.ETag, res.VersionID = head.ETag, head.VersionID
		if w.session.upload.current() != "" {
			// Our own upload did not commit (the object was already there): discard it.
			if aerr := w.abortUpload(w.ctx); aerr != nil {
				return aerr
			}
		}
		// Landed, perhaps ours. Unproven without create-only: the caller asked to write the key,
		// so what is there is (most likely) ours to remove; with it, it may be another writer's.
		return w.accept(j, res, ours)
	case keyEmpty:
		e := w.errs.errorf(sperrors.Transient, "Complete", cause, "the answer was lost and no object is at the key: the write did not land")
		if ce := asError(cause); ce != nil {
			e.StatusCode, e.Code, e.RequestID = ce.StatusCode, ce.Code, ce.RequestID
		}
		return w.fail(e)
	case keyUnchecked:
		// The retried Complete found the upload gone: most likely the first one committed it.
		return w.fail(w.leftUnchecked(herr, "the CompleteMultipartUpload answer was lost and the key could not be checked: the object most likely landed and is at the key, unproven"))
	case keyHeadFailed:
		return w.fail(herr)
	case keyGone:
		return w.fail(w.errs.uploadVanished("CompleteMultipartUpload", 0, cause, goneAtCommit(cause, herr, w.decider().completeLost)))
	case keyOurCommitWrong:
		// Our own Complete landed (its answer was lost, or the 412 met it) and assembled our
		// parts as the store holds them, but that is not what was written: a part was damaged
		// on the way. The object is ours, not another writer's: remove it.
		w.mu.Lock()
		w.session.upload.committed() // nothing to abort any more
		w.mu.Unlock()
		return w.fail(w.removeDamaged(w.errs.integrity("Verify", 0, fmt.Errorf("the object this write's Complete assembled is not what was written: %w", j.mismatch)), "corrupt"))
	default: // keyTaken
		e := w.errs.errorf(sperrors.Precondition, "Complete", cause, "an object already exists at the key and is not the one written; it was left untouched")
		if ce := asError(cause); ce != nil {
			e.StatusCode, e.Code, e.RequestID = ce.StatusCode, ce.Code, ce.RequestID
		}
		return w.fail(e)
	}
}

// goneAtCommit says what the HEAD found after a Complete answered NoSuchUpload, or failed and
// ListParts then answered it (gone is that answer) (keyGone): headErr is its failure, nil when it
// found an object that is not this write's. lost: an earlier attempt of the Complete went
// unanswered.
func goneAtCommit(gone, headErr error, lost bool) string {
	var found string
	switch {
	case headErr == nil:
		found = "the object at the key is not the one written (it was left untouched)"
	case isNotFound(headErr):
		found = "no object is at the key"
	default:
		found = "the key could not be checked (" + brief(headErr) + "), but no Complete of this write had been sent before"
	}
	if re := (*store.ResponseError)(nil); stderrors.As(gone, &re) && re.Op == "ListParts" {
		return "CompleteMultipartUpload failed and ListParts then found the upload gone, and " + found + ": the write did not land"
	}
	if lost {
		return "CompleteMultipartUpload was answered NoSuchUpload after an attempt whose answer was lost, and " + found +
			": the write did not land (or it landed and was removed or replaced since)"
	}
	return "CompleteMultipartUpload was answered NoSuchUpload and " + found + ": the write did not land"
}

// verifyLanded compares the committed object with what was written. A mismatch is an Integrity
// error, and the bad object is deleted (it is ours, and must not be read as good data).
func (w *Writer) verifyLanded(want integrity.Expected, res *Result) error {
	head, err := w.headWithChecksum()
	if err != nil {
		if plain := w.headPlainAfterRefusal(err); plain != nil {
			// The object is there but not under this write's customer key: not what was asked.
			if e := w.checkEncryption(plain, res, true); e != nil {
				return w.fail(e)
			}
		}
		if afterCommittedHeadFailed(err) == committedGone {
			return w.fail(err)
		}
		// Committed, not checked: the caller must know the key holds this write's object,
		// unproven (it may be damaged), and not assume the key is as it was.
		return w.fail(w.leftUnchecked(err, "the object was committed but could not be checked: it is at the key, unproven"))
	}
	if e := w.checkEncryption(head, res, true); e != nil {
		return w.fail(e)
	}
	j := w.judge(want, head, res.Multipart)
	w.req.events.emit(Event{Type: EventVerify, Size: want.Size, Method: j.method, Err: j.mismatch})
	ownCommit := sameETag(head.ETag, res.ETag) || (res.Multipart && w.assembledFromOurParts(head))
	if othersAtKey(w.verifying.createUnguarded, j.mismatch != nil, ownCommit) {
		// Another create-only writer's commit may have landed over or after ours: a lost race,
		// and that object is the winner's, not this write's to delete.
		e := w.errs.errorf(sperrors.Precondition, "Verify", j.mismatch, "the object at the key is not the one written and was left untouched: most likely another writer's create-only commit, landed over or after this write's (the store is not known to refuse a commit onto a taken key)")
		return w.fail(e)
	}
	if res.ETag == "" {
		res.ETag = head.ETag
	}
	return w.accept(j, res, true)
}

// provenByAnswer ends a write whose commit's answer (op: Complete or the single PUT) proved the
// object by method: the object's checksum, equal to this write's, from a store that checked it
// (completeProves, putProves), or a single PUT's ETag equal to the MD5 of its body (etagProves).
// That is the verdict a HEAD reporting the same would give, without its round trip.
func (w *Writer) provenByAnswer(op string, method verify.Method, want integrity.Expected, res *Result) error {
	w.log.Debug("HEAD left out: the commit's answer proved the object", zap.String("op", op),
		zap.String("upload_id", res.UploadID), zap.Int64("size", want.Size), zap.String("method", string(method)))
	w.req.events.emit(Event{Type: EventVerify, Size: want.Size, Method: method})
	return w.accept(judgement{method: method, by: op}, res, true)
}

// accept carries out the verdict on judgement j of the object at the key: the write's Result, or
// its error after deleting the object when it is ours and not proven to be what was written.
func (w *Writer) accept(j judgement, res *Result, ours bool) error {
	switch w.decider().judged(j, ours) {
	case verdictProven:
		res.Verified, res.VerifiedStrong, res.VerifiedBy = j.method, true, j.by
	case verdictAcceptedWeak:
		res.Verified, res.VerifiedStrong, res.VerifiedBy = verify.MethodLengthOnly, false, j.by
		res.Unproven = j.missing
		w.log.Warn("accepted on length only (Options.AllowWeakVerification): the content was not proven",
			zap.Int64("size", res.Size), zap.String("upload_id", res.UploadID), zap.String("missing", strings.Join(j.missing, "; ")))
	case verdictCorrupt:
		return w.fail(w.removeDamaged(w.errs.integrity("Verify", 0, j.mismatch), "corrupt"))
	case verdictUnproven:
		return w.fail(w.removeDamaged(w.unverifiable(j), "unproven"))
	default: // verdictUnprovenLeft
		e := w.unverifiable(j)
		e.Message += "; the object at the key was left in place: it may be another writer's"
		return w.fail(e)
	}
	w.takeNotes(res)
	return w.finish(res)
}

// readBack re-reads the whole object and compares length and CRC.
func (w *Writer) readBack(want integrity.Expected) (verify.Method, error) {
	alg := want.Checksum.Algorithm
	if alg == store.ChecksumNone || !integrity.IsCRC(alg) {
		alg = store.ChecksumCRC64NVME
	}
	var got uint64
	var n int64
	err := w.req.do("GetObject", 0, func(ctx context.Context, _ int) error {
		out, err := w.st.GetObject(ctx, &store.GetObjectInput{Bucket: w.bucket, Key: w.key, SSECustomerKey: w.customerKey()})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		c, _ := integrity.NewCRC(alg)
		buf := make([]byte, 256<<10)
		for {
			m, rerr := out.Body.Read(buf)
			c.Update(buf[:m])
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return rerr
			}
		}
		got, n = c.Value(), c.Size()
		return nil
	})
	if err != nil {
		return "", err
	}
	if n != want.Size {
		return "", &integrity.Mismatch{What: "read-back length", Want: fmt.Sprint(want.Size), Got: fmt.Sprint(n)}
	}
	if want.Checksum.Algorithm == alg && integrity.EncodeCRCValue(alg, got) != want.Checksum.Value {
		return "", &integrity.Mismatch{What: "read-back " + string(alg), Want: want.Checksum.Value, Got: integrity.EncodeCRCValue(alg, got)}
	}
	if want.Checksum.Algorithm != alg {
		// No checksum was computed while writing; compare with the parts' combined value.
		return verify.MethodLengthOnly, nil
	}
	return verify.MethodReadBack, nil
}

func (w *Writer) finish(res *Result) error {
	stats := w.tally.statsNow()
	w.mu.Lock()
	res.BytesSent = w.tally.bytesSent.Load()
	res.Requests = stats.Attempts
	res.Failures = stats.ByKind
	res.UploadAttempts = 1
	res.Elapsed = time.Since(w.tally.start)
	w.outcome.result = res
	w.mu.Unlock()
	w.req.events.emit(Event{Type: EventDone, Size: res.Size, Method: res.Verified, BytesDone: res.Size, Elapsed: res.Elapsed})
	w.log.Debug("write landed", zap.Int64("size", res.Size), zap.Int("parts", res.Parts),
		zap.String("verified", string(res.Verified)), zap.Bool("already_existed", res.AlreadyExisted),
		zap.Int64("md5_bytes", w.tally.md5Bytes.Load()))
	return nil
}

// leftUnchecked is the error of a write whose committed object is at the key but whose check
// (the HEAD) failed with headErr: the HEAD's kind and status, and ObjectLeft.
func (w *Writer) leftUnchecked(headErr error, message string) *sperrors.Error {
	e := w.errs.errorf(sperrors.KindOf(headErr), "HeadObject", headErr, "%s", message)
	if he := asError(headErr); he != nil {
		e.StatusCode, e.Code, e.RequestID, e.Attempts = he.StatusCode, he.Code, he.RequestID, he.Attempts
	}
	e.ObjectLeft = true
	return e
}

// removeDamaged deletes this write's own committed object, which e says is not what was written
// (what: "corrupt" or "unproven"), and says in e whether it is gone or still at the key.
func (w *Writer) removeDamaged(e *sperrors.Error, what string) *sperrors.Error {
	if derr := w.session.upload.deleteObject(w.ctx); derr != nil {
		e.Message += "; the " + what + " object could not be deleted: " + derr.Error()
		e.ObjectLeft = true
	} else {
		e.Message += "; the " + what + " object was deleted"
	}
	return e
}

// assembledFromOurParts reports whether head is the object a Complete of this writer's upload
// made from its parts as the store holds them (isAssembledFrom the ETags the store gave our
// parts). That tells our own commit (even a damaged one) from another writer's object where the
// content cannot.
func (w *Writer) assembledFromOurParts(head *store.HeadObjectOutput) bool {
	w.mu.Lock()
	parts := make([]partDone, 0, len(w.session.parts))
	for _, p := range w.session.parts {
		parts = append(parts, p)
	}
	w.mu.Unlock()
	slices.SortFunc(parts, func(a, b partDone) int { return cmp.Compare(a.number, b.number) })
	etags := make([]string, len(parts))
	for i, p := range parts {
		etags[i] = p.etag
	}
	return isAssembledFrom(head.ETag, etags)
}

// isAssembledFrom reports whether an object's ETag is the one S3-style stores give the object
// they assemble from parts with these ETags, in part order: the MD5 of the parts' MD5s, "-n".
// Stores whose ETags are not MD5-based never match.
func isAssembledFrom(objectETag string, partETags []string) bool {
	got, ok := integrity.ParseETag(objectETag)
	if !ok || len(partETags) == 0 || got.Parts != len(partETags) {
		return false
	}
	md5s := make([][16]byte, len(partETags))
	for i, etag := range partETags {
		e, ok := integrity.ParseETag(etag)
		if !ok || !e.IsMD5() {
			return false
		}
		if _, err := hex.Decode(md5s[i][:], []byte(e.Hex)); err != nil {
			return false
		}
	}
	return integrity.MultipartETag(md5s) == got.Hex+"-"+strconv.Itoa(got.Parts)
}
