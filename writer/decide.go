package writer

import (
	stderrors "errors"
	"fmt"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
)

// The decisions of one write after its parts went out, apart from the I/O that gathers their
// inputs and carries them out. Each method takes what the store answered (a layout check's
// result, a commit's error, a HEAD's outcome, a judgement of the evidence, an abort's result)
// and says what the write does next; none sends a request, takes a lock or logs, so each is
// tested by table (decide_test.go). commit.go, landed.go, evidence.go and cleanup.go ask the
// store and execute the step returned. The decisions before the commit (single PUT or
// multipart, part sizes and the final part, the tail at Close, when a part's MD5 is taken, the
// checksum probe) are in decide_parts.go, in the same style.

// decider is what the decisions depend on besides the store's answers: the write's options and
// what happened to it so far. Writer.decider takes it afresh before each decision.
type decider struct {
	createOnly bool // Options.CreateOnly: an object already at the key may be another writer's
	allowWeak  bool // Options.AllowWeakVerification: a length-only check may end the write
	readBack   bool // Options.ReadBack: read the object back even when the HEAD proved it
	// replayable: the parts come from a ReaderAt (Upload), so a part the store kept wrong can
	// be sent again; a streamed part's buffer is gone once it is acknowledged.
	replayable bool
	resent     bool // the parts were re-sent once already after a failed layout check
	unlisted   bool // the Complete answered went without the ListParts check (SaveRereads)
	// completeLost: a Complete's answer was lost and its retry found the upload gone, so a HEAD
	// that fails cannot say the object is not there.
	completeLost bool
	// completeGone: a Complete was answered NoSuchUpload (first attempt or retry): the upload is
	// gone, aborted elsewhere unless this write's object is found at the key.
	completeGone bool

	// What the write hashes and asks before its commit (checksumCaps, WithSavings: decide_parts.go).
	md5Upfront   bool // caps.md5: every MD5 is wanted, taken as the bytes arrive or at the receipt
	md5Late      bool // caps.md5Late: MD5s wait for the receipt, whose echo may spare them
	checksumSent bool // caps.alg: a checksum header goes with each part
	echoTrust    bool // SaveEchoTrust: a trusted echo may spare an MD5
	probeSaving  bool // SaveProbe: the probe may be sent
	lateSaving   bool // SaveLateMD5: an MD5 may wait for the receipt, whose echo may spare it
	laterWrite   bool // the write is not its Uploader's first: what it learns may serve a later write
	rereadSaving bool // SaveRereads: proven receipts may stand for the listing, the commit's answer for the HEAD
	encrypted    bool // server-side encryption was asked for: only the HEAD reports what the store applied
	// etagsNotMD5: a HEAD of this endpoint proved an object by its checksum and its single-PUT
	// ETag was not the MD5 (endpointFacts.etagMD5 no): an MD5 cannot prove a PUT's answer there.
	etagsNotMD5 bool
}

// decider returns the decisions' view of w now.
func (w *Writer) decider() decider {
	w.mu.Lock()
	completeLost, completeGone := w.session.completeLost, w.session.completeGone
	w.mu.Unlock()
	_, _, etagMD5, _ := w.facts.get()
	return decider{
		createOnly: w.cfg.createOnly, allowWeak: w.cfg.allowWeak, readBack: w.cfg.readBack,
		replayable: w.intake.section != nil, resent: w.verifier.layout.resent, unlisted: w.verifier.layout.unlisted, completeLost: completeLost, completeGone: completeGone,
		md5Upfront: w.caps.md5, md5Late: w.caps.md5Late, checksumSent: w.caps.alg != store.ChecksumNone,
		echoTrust: w.cfg.saves(SaveEchoTrust), probeSaving: w.cfg.saves(SaveProbe), lateSaving: w.cfg.saves(SaveLateMD5),
		laterWrite: w.cfg.laterWrite, rereadSaving: w.cfg.saves(SaveRereads) && !w.verifier.layout.mustList, encrypted: w.cfg.sse.Type != "",
		etagsNotMD5: etagMD5 == no,
	}
}

// layoutStep is what follows the ListParts check before Complete.
type layoutStep uint8

const (
	layoutCommit layoutStep = iota // the store lists what was sent (or cannot list): Complete
	layoutResend                   // re-send the parts it kept wrong from the source, check again
	layoutFail                     // fail Integrity: a part the store holds is not what was sent
)

// afterLayout decides on the layout check's result: layoutErr from integrity.CheckLayout and
// bad, the parts it found lost or wrong. A part is re-sent at most once per write, and only
// from a source that can be re-read.
func (d decider) afterLayout(layoutErr error, bad []int32) layoutStep {
	switch {
	case layoutErr == nil:
		return layoutCommit
	case !d.replayable || d.resent || len(bad) == 0:
		return layoutFail
	default:
		return layoutResend
	}
}

// commitStep is what follows the answer to the request that commits the object (PutObject or
// CompleteMultipartUpload).
type commitStep uint8

const (
	commitLanded           commitStep = iota // committed: HEAD the key and judge what landed
	commitWithoutCondition                   // If-None-Match refused, nothing stored: HEAD-check the key, commit again without it
	commitAnswerLost                         // NoSuchUpload (first attempt or a retry): the HEAD says whether ours landed
	commitKeyTaken                           // create-only and the key is taken: the HEAD says whether it is ours
	commitOwnDamagedLeft                     // the retry met this write's own damaged object, which could not be deleted
	commitListFirst                          // a part was refused by a Complete sent without ListParts: list, check, complete again
	commitFailed                             // fail with the commit's error
)

// afterCommit decides on the commit request's outcome err (after its retries). ownDamagedLeft:
// a create-only PUT stored a damaged copy of the body and it could not be deleted, so a 412 on
// the retry is that copy, not another writer's object.
func (d decider) afterCommit(err error, ownDamagedLeft bool) commitStep {
	if err == nil {
		return commitLanded // before the targets below, which the heap holds
	}
	var refused *conditionRefused
	var lost *lostResponse
	switch {
	case stderrors.As(err, &refused):
		return commitWithoutCondition
	case stderrors.As(err, &lost):
		return commitAnswerLost
	case d.unlisted && hasCode(err, "InvalidPart"):
		// The store holds a part other than its receipt said: the layout check finds which, and
		// re-sends it or fails Integrity, as it would have before this Complete.
		return commitListFirst
	case ownDamagedLeft && isPrecondition(err):
		return commitOwnDamagedLeft
	case d.createOnly && isPrecondition(err):
		return commitKeyTaken
	default:
		return commitFailed
	}
}

// committedHeadStep is what follows a failed HEAD of the object this write committed.
type committedHeadStep uint8

const (
	committedGone      committedHeadStep = iota // 404: fail with the HEAD's error; nothing is at the key
	committedUnchecked                          // fail with ObjectLeft: the object is at the key, unproven
)

// afterCommittedHeadFailed decides on a HEAD of a committed object that failed with headErr.
func afterCommittedHeadFailed(headErr error) committedHeadStep {
	if isNotFound(headErr) {
		return committedGone
	}
	return committedUnchecked
}

// evidenceStep is what the HEAD's evidence leaves to do before a judgement.
type evidenceStep uint8

const (
	evidenceMismatch evidenceStep = iota // the HEAD proves a different object
	evidenceEnough                       // the HEAD proves the object
	evidenceReadBack                     // read the object back to prove it
	evidenceShort                        // nothing strong, and no read-back may be tried
)

// afterHead decides whether the HEAD's evidence ev suffices. mayReadBack says whether this
// object may be read back (its size, the source, what the write skipped: readBackAllowed).
func (d decider) afterHead(ev integrity.Evidence, mayReadBack bool) evidenceStep {
	switch {
	case ev.Mismatch != nil:
		return evidenceMismatch
	case ev.Strong() && !d.readBack:
		return evidenceEnough
	case !ev.Strong() && !mayReadBack:
		return evidenceShort
	default:
		return evidenceReadBack
	}
}

// verdict is the outcome of the evidence about an object at the key.
type verdict uint8

const (
	verdictProven       verdict = iota // strong evidence: the write landed
	verdictAcceptedWeak                // nothing strong, accepted on length (Options.AllowWeakVerification)
	verdictUnproven                    // nothing strong: fail Unverifiable and delete the object (ours)
	verdictUnprovenLeft                // nothing strong: fail Unverifiable, the object left (it may be another writer's)
	verdictCorrupt                     // a mismatch: fail Integrity and delete the object (ours)
)

// judged decides on the judgement j of the object this write committed, or found at the key
// (ours: it is this write's to delete when unproven).
func (d decider) judged(j judgement, ours bool) verdict {
	switch {
	case j.mismatch != nil:
		return verdictCorrupt
	case j.method.Strong():
		return verdictProven
	case d.allowWeak:
		return verdictAcceptedWeak
	case ours:
		return verdictUnproven
	default:
		return verdictUnprovenLeft
	}
}

// keyFinding is what a HEAD found at the key after a lost Complete answer or a 412.
type keyFinding uint8

const (
	keyHoldsOurs      keyFinding = iota // the object written is at the key: landed, judged by the evidence
	keyEmpty                            // HEAD 404: the write did not land (Transient)
	keyUnchecked                        // the HEAD failed after a lost Complete: most likely landed, unproven (ObjectLeft)
	keyHeadFailed                       // the HEAD failed: fail with its error
	keyOurCommitWrong                   // our Complete assembled our parts, not what was written: delete it (Integrity)
	keyTaken                            // another object: Precondition, left untouched
	// keyGone: the Complete found the upload gone (NoSuchUpload) and this write's object is not
	// at the key: the upload was aborted elsewhere (or a lost Complete landed and the object was
	// removed or replaced since). The write did not land; UploadGone, so Upload of a source it
	// can read again starts a new upload (uploadAnew).
	keyGone
)

// atKey decides what the object at the key is after a lost answer or a 412: headErr is the
// HEAD's failure (j is then unused), j the judgement of what it found, assembledOurs whether
// that object is the one a Complete of this write's own parts makes (isAssembledFrom). ours
// says whether an unproven object there is this write's to delete.
//
// After a Complete answered NoSuchUpload (completeGone) the HEAD is the evidence: this write's
// object there is a landing; nothing there, or (not create-only) an object that is not this
// write's (the one the write meant to replace), means the upload was dropped before it
// committed. A HEAD that fails decides nothing only when an earlier Complete of this write may
// have committed (completeLost); at a first attempt none had.
func (d decider) atKey(headErr error, j judgement, multipart, assembledOurs bool) (finding keyFinding, ours bool) {
	ours = !d.createOnly || (multipart && assembledOurs)
	switch {
	case headErr != nil && isNotFound(headErr) && d.completeGone:
		return keyGone, ours
	case headErr != nil && isNotFound(headErr):
		return keyEmpty, ours
	case headErr != nil && d.completeLost:
		return keyUnchecked, ours
	case headErr != nil && d.completeGone:
		return keyGone, ours
	case headErr != nil:
		return keyHeadFailed, ours
	case j.mismatch == nil:
		return keyHoldsOurs, ours
	case multipart && assembledOurs:
		return keyOurCommitWrong, ours
	case d.completeGone && !d.createOnly:
		return keyGone, ours
	default:
		return keyTaken, ours
	}
}

// afterAbort is the failed write's error err once the clean-up's abort ended: abortErr when the
// upload could not be aborted (it is then left behind, named by its id), else unconfirmed, the
// note of an abort the store took but could not show done ("" when none). err is not changed in
// place: it may be the sticky error a Write already returned.
func afterAbort(err error, abortErr *sperrors.Error, unconfirmed string) error {
	switch {
	case abortErr != nil:
		return annotated(err, func(e *sperrors.Error) {
			e.AbortFailed = true
			e.UploadID = abortErr.UploadID
			if store.Unsupported(abortErr) {
				e.Message = joinMessage(e.Message, fmt.Sprintf("the store does not support AbortMultipartUpload (%s): upload %s stays until the store itself removes it",
					unsupportedWhy(abortErr), abortErr.UploadID))
			}
		})
	case unconfirmed != "":
		// Not "left behind": the store took the abort, it just cannot show the upload gone.
		return annotated(err, func(e *sperrors.Error) { e.Message = joinMessage(e.Message, unconfirmed) })
	default:
		return err
	}
}

// abortStep is what follows one abort attempt and the listing that checks it.
type abortStep uint8

const (
	abortDone          abortStep = iota // the upload is gone
	abortUnconfirmable                  // the store took the abort but cannot list parts to show it gone
	abortAgain                          // the upload is still listed: abort again (Transient, paced by the policy)
)

// afterAbortListed decides on an abort answered abortErr (nil, or NoSuchUpload: gone already)
// whose ListParts then listed the upload still (listed) or could not be asked (cannotList, why).
func afterAbortListed(abortErr error, listed bool, cannotList string) abortStep {
	switch {
	case cannotList != "" && abortErr == nil:
		return abortUnconfirmable
	case cannotList != "":
		return abortDone // NoSuchUpload already said gone
	case listed:
		return abortAgain
	default:
		return abortDone
	}
}

// clockSkew is how far the store's clock may be from ours when it dates an upload.
const clockSkew = time.Minute

// mayBeLostCreate reports whether upload u, listed after a CreateMultipartUpload answer was lost,
// may be the one that create left: same key, an id this write was never given (ours), started
// while the creates were out (from, to; a store that dates no upload cannot rule it out). The
// caller still checks that it has no parts: a concurrent writer's upload of the key would.
func mayBeLostCreate(u store.Upload, key string, ours map[string]bool, from, to time.Time) bool {
	if u.Key != key || ours[u.UploadID] {
		return false
	}
	return u.Initiated.IsZero() || (!u.Initiated.Before(from.Add(-clockSkew)) && !u.Initiated.After(to.Add(clockSkew)))
}

// isNotFound reports a store's 404 answer.
func isNotFound(err error) bool {
	var re *store.ResponseError
	return stderrors.As(err, &re) && re.StatusCode == 404
}

// uploadAgain decides, after a whole Upload attempt failed with err, whether Upload sends the
// object again from its replayable source (at most retry.Options.IntegrityRetries times): only
// after an Integrity failure, since the bytes did not land as sent and a clean re-send may make
// them; not when no evidence could be had (Unverifiable: sending again proves no more), not once
// the caller gave up, and not for a create-only write whose own bad object is at the key (a
// retry would meet it and take it for another writer's).
func (d decider) uploadAgain(err error, callerDone bool) bool {
	switch se := asError(err); {
	case !stderrors.Is(err, sperrors.Integrity) || isUnverifiable(err) || callerDone:
		return false
	case d.createOnly && se != nil && se.ObjectLeft:
		return false
	}
	return true
}

// uploadAnew decides, after a whole Upload attempt failed with err, whether Upload starts one new
// multipart upload and sends the source again: only when the store dropped the attempt's upload
// (UploadGone: NoSuchUpload to a part, to the ListParts check or to a Complete whose object is
// not at the key: aborted elsewhere), the source can be read again (replayable), no attempt of
// this Upload did so already (once: a store that drops every upload fails the write rather than
// loop), the caller is still waiting, and the attempt left no object of its own at the key.
func (d decider) uploadAnew(err error, replayable, anewAlready, callerDone bool) bool {
	se := asError(err)
	return se != nil && se.UploadGone && !se.ObjectLeft && replayable && !anewAlready && !callerDone
}

// recordStep is what happens to the write's journal record.
type recordStep uint8

const (
	recordKeep   recordStep = iota // kept, its claim released: Recover settles what it names
	recordRemove                   // removed: nothing is left for Recover to do
)

// recordAtEnd decides the record's fate when Close or Abort returns: removed only after the
// object landed verified; after any failure it is kept, so that Recover can tell an upload to
// abort from a Complete that may have landed.
func (d decider) recordAtEnd(failed bool) recordStep {
	if failed {
		return recordKeep
	}
	return recordRemove
}

// recordAfterAbort decides the record's fate once its upload's abort is confirmed: removed, since
// nothing is left to settle; but not after a lost Complete answer (completeLost), when the upload
// is gone because the object may have landed and the record's intended object is what tells
// Recover which (recordAtEnd removes it if the write proves it landed).
func (d decider) recordAfterAbort() recordStep {
	if d.completeLost {
		return recordKeep
	}
	return recordRemove
}
