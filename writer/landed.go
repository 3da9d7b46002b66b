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
	"sync/atomic"
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

// verifier is the step that checks a write's object before and after its commit: the layout
// check's state before the Complete (the commit runs that check, commit.go, and keeps it here),
// the create-only guard and the store's optional operations (optionalOps), and after the commit
// the HEAD (or the commit's answer, where it proves the object), a read-back when nothing else
// can, the encryption asked for, and what a create-only commit or a lost commit answer left at
// the key. Each check after the commit takes what was written (integrity.Expected) and the
// Result being built, and returns nil with the Result's verification filled in, or the
// classified error; the Writer keeps the error (sticky) or ends the write with the Result
// (Writer.conclude).
//
// It owns the checks' state (layout; lateETag, md5Skipped and createUnguarded, which the commit
// and the part senders set), and what the answers teach: the checksum caps' lessons (an ETag
// found to be an MD5, an offered checksum refused) and the endpoint's facts for later writes.
// It deletes an object only when it is this write's own and not what was written
// (removeDamaged). It does not own the upload: what it needs of it (the parts' ETags, whether a
// Complete's answer was lost, its abort) comes through uploadHooks; nor the retries
// (requester), nor the notes, which every step adds to.
type verifier struct {
	st          store.Store
	bucket, key string
	cfg         verifierConfig
	log         *zap.Logger
	req         *requester
	errs        errorSite
	events      emitter
	facts       *endpointFacts
	caps        *checksumCaps // shared with the parts and the commit, which send what it says
	notes       *notes
	optional    *optionalOps
	upload      uploadHooks

	// layout is the state of the ListParts check before the Complete.
	layout layoutCheck
	// lateETag gives the single PUT's body MD5 (hex) on demand while its buffer is held (or from
	// the ReaderAt source read again; "" when that fails or finds the source changed): the HEAD's
	// evidence may need it (evidence.go). nil for a multipart write. Set by the commit.
	lateETag func() string
	// md5Skipped: a part went without its MD5 because its receipt echoed the checksum sent
	// (caps.md5Late); if the HEAD then reports no checksum, only a read-back can prove the
	// object. Set by the part senders.
	md5Skipped atomic.Bool
	// createUnguarded: a create-only commit the store is not known to keep off a taken key
	// (createGuard.unguarded), so the object the HEAD after it finds may be another writer's.
	// Set by the commit.
	createUnguarded bool
}

// layoutCheck is the state of the check, before the Complete, that the store lists the parts
// as they were sent (commit.go runs it: ListParts, integrity.CheckLayout, decider.afterLayout).
type layoutCheck struct {
	resent bool // parts were re-sent once after a failed layout check
	// unlisted: the Complete now being sent was not preceded by ListParts (SaveRereads);
	// mustList: a Complete so sent was refused for a part, so this write lists before committing.
	unlisted, mustList bool
}

// verifierConfig is what the verifier reads of the write's options: the evidence settings
// (verifyConfig: read-back, weak acceptance, the source's replayability) and what the object was
// asked to be.
type verifierConfig struct {
	verifyConfig
	sse         store.Encryption
	customerKey store.CustomerKey       // the SSE-C key the HEAD and read-back carry (nil for none)
	checksum    store.ChecksumAlgorithm // the algorithm asked for (named when the store refuses it)
	createOnly  bool                    // Options.CreateOnly: an object at the key may be another writer's
}

// verifierConfigOf is cfg as the verifier reads it.
func verifierConfigOf(cfg config) verifierConfig {
	return verifierConfig{verifyConfig: cfg.verifyConfig, sse: cfg.sse, customerKey: cfg.customerKey(),
		checksum: cfg.checksum, createOnly: cfg.createOnly}
}

// uploadHooks is what the verifier needs of the write's multipart upload and of its clean-up,
// which the Writer holds (writerHooks: session.go, cleanup.go).
type uploadHooks interface {
	// partETags are the ETags the store gave this write's acknowledged parts, in part order.
	partETags() []string
	// fate says whether a Complete's answer was lost and its retry found the upload gone
	// (completeLost), and whether a Complete was answered NoSuchUpload (completeGone).
	fate() (completeLost, completeGone bool)
	// abort aborts this write's open upload, confirmed (nil when none is open or it is gone).
	abort() *sperrors.Error
	// committed records that the upload is committed: nothing is left to abort.
	committed()
	// deleteObject deletes the object at the key (this write's own, found not to be what was written).
	deleteObject() error
}

// decider is the decisions' view the verifier's own asks read (afterHead: readBack; judged:
// allowWeak; atKey: createOnly, completeLost, completeGone); the rest is the Writer's (decide.go).
func (v *verifier) decider() decider {
	lost, gone := v.upload.fate()
	return decider{createOnly: v.cfg.createOnly, allowWeak: v.cfg.allowWeak, readBack: v.cfg.readBack,
		completeLost: lost, completeGone: gone}
}

// precheckCreateOnly checks the key free with a HEAD before a create-only commit the store is not
// known to make conditional (createGuard.headFirst): it finds an object already there, not one
// another writer commits after it. done is true when the key exists: err is then the outcome (nil:
// the object there is this write's, res says so).
func (v *verifier) precheckCreateOnly(want integrity.Expected, res *Result) (done bool, err error) {
	herr := v.req.do("HeadObject", 0, func(ctx context.Context, _ int) error {
		_, err := v.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: v.bucket, Key: v.key, SSECustomerKey: v.cfg.customerKey})
		return err
	})
	if herr == nil {
		cause := &sperrors.Error{Kind: sperrors.Precondition, Op: "HeadObject", StatusCode: 412, Code: "PreconditionFailed", Message: "key exists (found by the HEAD before the commit)"}
		return true, v.landedAlready(cause, want, res)
	}
	var re *store.ResponseError
	if stderrors.As(herr, &re) && re.StatusCode == 404 {
		return false, nil
	}
	if v.headPlainAfterRefusal(herr) != nil {
		// The key holds an object not under this write's SSE-C key (refused with the key, there
		// without it): not ours, whatever its bytes.
		e := v.errs.errorf(sperrors.Precondition, "HeadObject", herr, "an object already exists at the key, not encrypted with this write's SSE-C key; it was left untouched")
		e.StatusCode, e.Code = 412, "PreconditionFailed"
		return true, e
	}
	return true, herr
}

// landedAlready handles a 412 on a create-only write, or NoSuchUpload on a re-sent Complete: if
// the object at the key is exactly ours, the write landed (idempotent success); else it is a
// Precondition error and the existing object is left untouched.
func (v *verifier) landedAlready(cause error, want integrity.Expected, res *Result) error {
	head, herr := v.optional.headWithChecksum()
	var j judgement
	assembledOurs := false
	if herr == nil {
		j = v.judge(want, head, res.Multipart)
		assembledOurs = res.Multipart && v.assembledFromOurParts(head)
	}
	d := v.decider()
	finding, ours := d.atKey(herr, j, res.Multipart, assembledOurs)
	switch finding {
	case keyHoldsOurs:
		if e := v.checkEncryption(head, res, ours); e != nil {
			return e
		}
		res.AlreadyExisted = true
		res.ETag, res.VersionID = head.ETag, head.VersionID
		// Our own upload, if one is open, did not commit (the object was already there): discard it.
		if aerr := v.upload.abort(); aerr != nil {
			return aerr
		}
		// Landed, perhaps ours. Unproven without create-only: the caller asked to write the key,
		// so what is there is (most likely) ours to remove; with it, it may be another writer's.
		return v.accept(j, res, ours)
	case keyEmpty:
		e := v.errs.errorf(sperrors.Transient, "Complete", cause, "the answer was lost and no object is at the key: the write did not land")
		if ce := asError(cause); ce != nil {
			e.StatusCode, e.Code, e.RequestID = ce.StatusCode, ce.Code, ce.RequestID
		}
		return e
	case keyUnchecked:
		// The retried Complete found the upload gone: most likely the first one committed it.
		return v.leftUnchecked(herr, "the CompleteMultipartUpload answer was lost and the key could not be checked: the object most likely landed and is at the key, unproven")
	case keyHeadFailed:
		return herr
	case keyGone:
		return v.errs.uploadVanished("CompleteMultipartUpload", 0, cause, goneAtCommit(cause, herr, d.completeLost))
	case keyOurCommitWrong:
		// Our own Complete landed (its answer was lost, or the 412 met it) and assembled our
		// parts as the store holds them, but that is not what was written: a part was damaged
		// on the way. The object is ours, not another writer's: remove it.
		v.upload.committed()
		return v.removeDamaged(v.errs.integrity("Verify", 0, fmt.Errorf("the object this write's Complete assembled is not what was written: %w", j.mismatch)), "corrupt")
	default: // keyTaken
		e := v.errs.errorf(sperrors.Precondition, "Complete", cause, "an object already exists at the key and is not the one written; it was left untouched")
		if ce := asError(cause); ce != nil {
			e.StatusCode, e.Code, e.RequestID = ce.StatusCode, ce.Code, ce.RequestID
		}
		return e
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
func (v *verifier) verifyLanded(want integrity.Expected, res *Result) error {
	head, err := v.optional.headWithChecksum()
	if err != nil {
		if plain := v.headPlainAfterRefusal(err); plain != nil {
			// The object is there but not under this write's customer key: not what was asked.
			if e := v.checkEncryption(plain, res, true); e != nil {
				return e
			}
		}
		if afterCommittedHeadFailed(err) == committedGone {
			return err
		}
		// Committed, not checked: the caller must know the key holds this write's object,
		// unproven (it may be damaged), and not assume the key is as it was.
		return v.leftUnchecked(err, "the object was committed but could not be checked: it is at the key, unproven")
	}
	if e := v.checkEncryption(head, res, true); e != nil {
		return e
	}
	j := v.judge(want, head, res.Multipart)
	v.events.emit(Event{Type: EventVerify, Size: want.Size, Method: j.method, Err: j.mismatch})
	ownCommit := sameETag(head.ETag, res.ETag) || (res.Multipart && v.assembledFromOurParts(head))
	if othersAtKey(v.createUnguarded, j.mismatch != nil, ownCommit) {
		// Another create-only writer's commit may have landed over or after ours: a lost race,
		// and that object is the winner's, not this write's to delete.
		return v.errs.errorf(sperrors.Precondition, "Verify", j.mismatch, "the object at the key is not the one written and was left untouched: most likely another writer's create-only commit, landed over or after this write's (the store is not known to refuse a commit onto a taken key)")
	}
	if res.ETag == "" {
		res.ETag = head.ETag
	}
	return v.accept(j, res, true)
}

// provenByAnswer ends a write whose commit's answer (op: Complete or the single PUT) proved the
// object by method: the object's checksum, equal to this write's, from a store that checked it
// (completeProves, putProves), or a single PUT's ETag equal to the MD5 of its body (etagProves).
// That is the verdict a HEAD reporting the same would give, without its round trip.
func (v *verifier) provenByAnswer(op string, method verify.Method, want integrity.Expected, res *Result) error {
	v.log.Debug("HEAD left out: the commit's answer proved the object", zap.String("op", op),
		zap.String("upload_id", res.UploadID), zap.Int64("size", want.Size), zap.String("method", string(method)))
	v.events.emit(Event{Type: EventVerify, Size: want.Size, Method: method})
	return v.accept(judgement{method: method, by: op}, res, true)
}

// accept carries out the verdict on judgement j of the object at the key: res filled in (nil), or
// the write's error after deleting the object when it is ours and not proven to be what was written.
func (v *verifier) accept(j judgement, res *Result, ours bool) error {
	switch v.decider().judged(j, ours) {
	case verdictProven:
		res.Verified, res.VerifiedStrong, res.VerifiedBy = j.method, true, j.by
	case verdictAcceptedWeak:
		res.Verified, res.VerifiedStrong, res.VerifiedBy = verify.MethodLengthOnly, false, j.by
		res.Unproven = j.missing
		v.log.Warn("accepted on length only (Options.AllowWeakVerification): the content was not proven",
			zap.Int64("size", res.Size), zap.String("upload_id", res.UploadID), zap.String("missing", strings.Join(j.missing, "; ")))
	case verdictCorrupt:
		return v.removeDamaged(v.errs.integrity("Verify", 0, j.mismatch), "corrupt")
	case verdictUnproven:
		return v.removeDamaged(v.unverifiable(j), "unproven")
	default: // verdictUnprovenLeft
		e := v.unverifiable(j)
		e.Message += "; the object at the key was left in place: it may be another writer's"
		return e
	}
	return nil
}

// readBack re-reads the whole object and compares length and CRC.
func (v *verifier) readBack(want integrity.Expected) (verify.Method, error) {
	alg := want.Checksum.Algorithm
	if alg == store.ChecksumNone || !integrity.IsCRC(alg) {
		alg = store.ChecksumCRC64NVME
	}
	var got uint64
	var n int64
	err := v.req.do("GetObject", 0, func(ctx context.Context, _ int) error {
		out, err := v.st.GetObject(ctx, &store.GetObjectInput{Bucket: v.bucket, Key: v.key, SSECustomerKey: v.cfg.customerKey})
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

// conclude ends the commit on the verifier's finding err: kept as the write's sticky error, or,
// when nil, the Result res, with the notes gathered, is the write's (finish).
func (w *Writer) conclude(res *Result, err error) error {
	if err != nil {
		return w.fail(err)
	}
	res.Notes = append(res.Notes, w.outcome.notes.all()...)
	return w.finish(res)
}

// finish makes res, landed and verified, the write's Result, with what the write counted.
func (w *Writer) finish(res *Result) error {
	stats := w.tally.statsNow()
	w.mu.Lock()
	res.BytesSent = w.tally.bytesSent.Load()
	res.Requests = stats.Attempts
	res.Failures = stats.ByKind
	res.UploadAttempts = 1
	if w.session.commitAnswerLost.Load() {
		res.CommitAnswerLost = true // kept when set already: a resume's crashed run's Complete
	}
	res.Elapsed = time.Since(w.tally.start)
	w.outcome.result = res
	w.mu.Unlock()
	w.req.events.emit(Event{Type: EventDone, Size: res.Size, Method: res.Verified, BytesDone: res.Size, Elapsed: res.Elapsed})
	if ce := w.log.Check(zap.DebugLevel, "write landed"); ce != nil { // its fields are built only to be written
		ce.Write(zap.Int64("size", res.Size), zap.Int("parts", res.Parts),
			zap.String("verified", string(res.Verified)), zap.Bool("already_existed", res.AlreadyExisted),
			zap.Int64("md5_bytes", w.tally.md5Bytes.Load()))
	}
	return nil
}

// leftUnchecked is the error of a write whose committed object is at the key but whose check
// (the HEAD) failed with headErr: the HEAD's kind and status, and ObjectLeft.
func (v *verifier) leftUnchecked(headErr error, message string) *sperrors.Error {
	e := v.errs.errorf(sperrors.KindOf(headErr), "HeadObject", headErr, "%s", message)
	if he := asError(headErr); he != nil {
		e.StatusCode, e.Code, e.RequestID, e.Attempts = he.StatusCode, he.Code, he.RequestID, he.Attempts
	}
	e.ObjectLeft = true
	return e
}

// removeDamaged deletes this write's own committed object, which e says is not what was written
// (what: "corrupt" or "unproven"), and says in e whether it is gone or still at the key.
func (v *verifier) removeDamaged(e *sperrors.Error, what string) *sperrors.Error {
	if derr := v.upload.deleteObject(); derr != nil {
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
func (v *verifier) assembledFromOurParts(head *store.HeadObjectOutput) bool {
	return isAssembledFrom(head.ETag, v.upload.partETags())
}

// etagsInOrder are the ETags of parts, in part order.
func etagsInOrder(parts map[int32]partDone) []string {
	sorted := make([]partDone, 0, len(parts))
	for _, p := range parts {
		sorted = append(sorted, p)
	}
	slices.SortFunc(sorted, func(a, b partDone) int { return cmp.Compare(a.number, b.number) })
	etags := make([]string, len(sorted))
	for i, p := range sorted {
		etags[i] = p.etag
	}
	return etags
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
