package writer

import (
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s; not for security.
	"encoding/hex"
	stderrors "errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// The decisions of decide.go by table: given these answers, the write does this. The cases are
// the situations the writer's behaviour tests reach through a store (named beside each).

var (
	errLayout     = &integrity.Mismatch{What: "part 2 ETag", Want: "a", Got: "b"}
	errNotFound   = &store.ResponseError{Op: "HeadObject", StatusCode: 404, Code: "NoSuchKey"}
	errHeadDenied = &store.ResponseError{Op: "HeadObject", StatusCode: 403, Code: "AccessDenied"}
	errHeadReset  = stderrors.New("connection reset by peer")
	errTaken      = &sperrors.Error{Kind: sperrors.Precondition, Op: "PutObject", StatusCode: 412, Code: "PreconditionFailed"}
	errThrottled  = &sperrors.Error{Kind: sperrors.Throttled, Op: "CompleteMultipartUpload", StatusCode: 503, Code: "SlowDown"}
	errMismatch   = &integrity.Mismatch{What: "checksum", Want: "x", Got: "y"}
)

func TestDecideAfterLayout(t *testing.T) {
	for _, c := range []struct {
		name string
		d    decider
		err  error
		bad  []int32
		want layoutStep
	}{
		{"listed as sent", decider{}, nil, nil, layoutCommit},
		{"streamed part kept wrong: its buffer is gone (TestLostCompleteJudgedOnEvidence)", decider{}, errLayout, []int32{2}, layoutFail},
		{"ReaderAt part kept wrong: sent again (TestLostCompleteJudgedOnEvidence, TestPartListedTwiceNoneMatches)", decider{replayable: true}, errLayout, []int32{2}, layoutResend},
		{"ReaderAt part kept wrong after the one re-send", decider{replayable: true, resent: true}, errLayout, []int32{2}, layoutFail},
		{"a layout error naming no part", decider{replayable: true}, errLayout, nil, layoutFail},
	} {
		if got := c.d.afterLayout(c.err, c.bad); got != c.want {
			t.Errorf("%s: afterLayout = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideAfterCommit(t *testing.T) {
	refused := fmt.Errorf("policy: %w", &conditionRefused{err: &store.ResponseError{StatusCode: 501, Code: "NotImplemented"}})
	lost := fmt.Errorf("policy: %w", &lostResponse{err: &store.ResponseError{StatusCode: 404, Code: "NoSuchUpload"}})
	for _, c := range []struct {
		name          string
		d             decider
		err           error
		ownDamageLeft bool
		want          commitStep
	}{
		{"answered", decider{}, nil, false, commitLanded},
		{"If-None-Match not implemented (TestConditionalCreateNotImplemented)", decider{createOnly: true}, refused, false, commitWithoutCondition},
		{"retried Complete finds the upload gone (TestRealServerLostCompleteLanded)", decider{}, lost, false, commitAnswerLost},
		{"create-only and the key is taken (TestCreateOnly)", decider{createOnly: true}, errTaken, false, commitKeyTaken},
		{"a 412 without create-only is the store's error", decider{}, errTaken, false, commitFailed},
		{"a 412 meets this write's own damaged copy (TestCreateOnlyDamagedBodyWhereChecksumsAreIgnored)", decider{createOnly: true}, errTaken, true, commitOwnDamagedLeft},
		{"retries exhausted", decider{createOnly: true}, errThrottled, false, commitFailed},
		{"own damaged copy left, then a failure other than 412", decider{createOnly: true}, errThrottled, true, commitFailed},
	} {
		if got := c.d.afterCommit(c.err, c.ownDamageLeft); got != c.want {
			t.Errorf("%s: afterCommit = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideAfterCommittedHeadFailed(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want committedHeadStep
	}{
		{"404: nothing at the key", fmt.Errorf("policy: %w", errNotFound), committedGone},
		{"403: committed, unproven", errHeadDenied, committedUnchecked},
		{"no answer: committed, unproven", errHeadReset, committedUnchecked},
	} {
		if got := afterCommittedHeadFailed(c.err); got != c.want {
			t.Errorf("%s: afterCommittedHeadFailed = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideAfterHead(t *testing.T) {
	strong := integrity.Evidence{Method: verify.MethodCRC64NVME}
	weak := integrity.Evidence{Method: verify.MethodLengthOnly, Missing: []string{"no checksum reported"}}
	wrong := integrity.Evidence{Mismatch: errMismatch}
	for _, c := range []struct {
		name        string
		d           decider
		ev          integrity.Evidence
		mayReadBack bool
		want        evidenceStep
	}{
		{"checksum matched", decider{}, strong, true, evidenceEnough},
		{"checksum matched, read-back asked for", decider{readBack: true}, strong, true, evidenceReadBack},
		{"mismatch: no read-back can help", decider{readBack: true}, wrong, true, evidenceMismatch},
		{"length only, replayable: read back (TestReplayableReadsBackAnySize)", decider{}, weak, true, evidenceReadBack},
		{"length only, over the read-back limit (TestNothingProvesIt)", decider{}, weak, false, evidenceShort},
	} {
		if got := c.d.afterHead(c.ev, c.mayReadBack); got != c.want {
			t.Errorf("%s: afterHead = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideJudged(t *testing.T) {
	proven := judgement{method: verify.MethodCRC64NVME}
	unproven := judgement{method: verify.MethodLengthOnly, missing: []string{"no checksum reported"}}
	corrupt := judgement{mismatch: errMismatch}
	for _, c := range []struct {
		name string
		d    decider
		j    judgement
		ours bool
		want verdict
	}{
		{"proven", decider{}, proven, true, verdictProven},
		{"proven, found at a taken key", decider{createOnly: true}, proven, false, verdictProven},
		{"unproven, weak allowed (TestNothingProvesIt)", decider{allowWeak: true}, unproven, true, verdictAcceptedWeak},
		{"unproven, ours: deleted (TestNothingProvesIt)", decider{}, unproven, true, verdictUnproven},
		{"unproven, maybe another writer's: left", decider{createOnly: true}, unproven, false, verdictUnprovenLeft},
		{"corrupt: deleted even when weak is allowed", decider{allowWeak: true}, corrupt, true, verdictCorrupt},
	} {
		if got := c.d.judged(c.j, c.ours); got != c.want {
			t.Errorf("%s: judged = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideAtKey(t *testing.T) {
	match := judgement{method: verify.MethodCRC64NVME}
	differs := judgement{mismatch: errMismatch}
	for _, c := range []struct {
		name          string
		d             decider
		headErr       error
		j             judgement
		multipart     bool
		assembledOurs bool
		want          keyFinding
		wantOurs      bool
	}{
		{"lost answer, HEAD 404: did not land", decider{}, errNotFound, judgement{}, true, false, keyEmpty, true},
		{"lost Complete, HEAD 404 still: did not land", decider{completeLost: true}, errNotFound, judgement{}, true, false, keyEmpty, true},
		{"lost Complete, HEAD failed: most likely landed", decider{completeLost: true}, errHeadDenied, judgement{}, true, false, keyUnchecked, true},
		{"412, HEAD failed: its error", decider{createOnly: true}, errHeadReset, judgement{}, false, false, keyHeadFailed, false},
		{"lost Complete, ours there (TestRealServerLostCompleteLanded)", decider{completeLost: true}, nil, match, true, true, keyHoldsOurs, true},
		{"create-only retry finds its own object", decider{createOnly: true}, nil, match, false, false, keyHoldsOurs, false},
		{"create-only, our parts assembled there", decider{createOnly: true}, nil, match, true, true, keyHoldsOurs, true},
		{"our Complete assembled a damaged part", decider{createOnly: true}, nil, differs, true, true, keyOurCommitWrong, true},
		{"another writer's object (TestCreateOnly)", decider{createOnly: true}, nil, differs, false, false, keyTaken, false},
		{"another writer's multipart object", decider{createOnly: true}, nil, differs, true, false, keyTaken, false},
		{"Complete NoSuchUpload, HEAD 404: dropped (TestUploadVanished)", decider{completeGone: true}, errNotFound, judgement{}, true, false, keyGone, true},
		{"lost Complete then NoSuchUpload, HEAD 404: dropped", decider{completeGone: true, completeLost: true}, errNotFound, judgement{}, true, false, keyGone, true},
		{"Complete NoSuchUpload at once, HEAD failed: none of ours had committed", decider{completeGone: true}, errHeadReset, judgement{}, true, false, keyGone, true},
		{"lost Complete then NoSuchUpload, HEAD failed: most likely landed", decider{completeGone: true, completeLost: true}, errHeadReset, judgement{}, true, false, keyUnchecked, true},
		{"Complete NoSuchUpload, the object ours", decider{completeGone: true}, nil, match, true, true, keyHoldsOurs, true},
		{"Complete NoSuchUpload, an older object at the key: dropped", decider{completeGone: true}, nil, differs, true, false, keyGone, true},
		{"create-only Complete NoSuchUpload, another writer's object", decider{completeGone: true, createOnly: true}, nil, differs, true, false, keyTaken, false},
	} {
		got, ours := c.d.atKey(c.headErr, c.j, c.multipart, c.assembledOurs)
		if got != c.want || ours != c.wantOurs {
			t.Errorf("%s: atKey = %d, ours %v; want %d, ours %v", c.name, got, ours, c.want, c.wantOurs)
		}
	}
}

func TestDecideAfterAbort(t *testing.T) {
	failed := &sperrors.Error{Kind: sperrors.Integrity, Op: "Verify", Message: "checksum mismatch"}
	aborted := &sperrors.Error{Kind: sperrors.Transient, UploadID: "u1", Err: stderrors.New("reset")}
	unsupported := &sperrors.Error{Kind: sperrors.Compatibility, UploadID: "u2", Err: &store.ResponseError{StatusCode: 501, Code: "NotImplemented"}}
	for _, c := range []struct {
		name        string
		abortErr    *sperrors.Error
		unconfirmed string
		wantFailed  bool
		wantID      string
		wantInMsg   string
	}{
		{"aborted", nil, "", false, "", ""},
		{"abort taken, not confirmable (TestLacksListPartsAbortNotConfirmable)", nil, "abort of upload u3 sent", false, "", "abort of upload u3 sent"},
		{"abort failed (TestAbortThatNeverTakesIsReported)", aborted, "", true, "u1", ""},
		{"abort unsupported (TestLacksAbortNamesTheUpload)", unsupported, "", true, "u2", "does not support AbortMultipartUpload"},
	} {
		got := asError(afterAbort(failed, c.abortErr, c.unconfirmed))
		if got == nil || got.Kind != sperrors.Integrity {
			t.Fatalf("%s: afterAbort = %v, want the write's Integrity error", c.name, got)
		}
		if got.AbortFailed != c.wantFailed || got.UploadID != c.wantID || !strings.Contains(got.Message, c.wantInMsg) {
			t.Errorf("%s: AbortFailed %v, UploadID %q, Message %q; want %v, %q, containing %q",
				c.name, got.AbortFailed, got.UploadID, got.Message, c.wantFailed, c.wantID, c.wantInMsg)
		}
	}
	if failed.AbortFailed || failed.Message != "checksum mismatch" {
		t.Errorf("afterAbort changed the sticky error in place: %+v", failed)
	}
}

func TestDecideAfterAbortListed(t *testing.T) {
	gone := &store.ResponseError{StatusCode: 404, Code: "NoSuchUpload"}
	for _, c := range []struct {
		name       string
		abortErr   error
		listed     bool
		cannotList string
		want       abortStep
	}{
		{"aborted, not listed", nil, false, "", abortDone},
		{"already gone", gone, false, "", abortDone},
		{"re-created by a late part (TestAbortRepeatedUntilGone)", nil, true, "", abortAgain},
		{"no ListParts: taken, not confirmable", nil, false, "501 NotImplemented", abortUnconfirmable},
		{"no ListParts, NoSuchUpload said gone", gone, false, "501 NotImplemented", abortDone},
	} {
		if got := afterAbortListed(c.abortErr, c.listed, c.cannotList); got != c.want {
			t.Errorf("%s: afterAbortListed = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideMayBeLostCreate(t *testing.T) {
	from := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	to := from.Add(10 * time.Second)
	ours := map[string]bool{"mine": true}
	for _, c := range []struct {
		name string
		u    store.Upload
		want bool
	}{
		{"started during the creates", store.Upload{Key: "k", UploadID: "x", Initiated: from.Add(time.Second)}, true},
		{"undated", store.Upload{Key: "k", UploadID: "x"}, true},
		{"within the clock skew", store.Upload{Key: "k", UploadID: "x", Initiated: to.Add(clockSkew)}, true},
		{"another key under the prefix", store.Upload{Key: "k2", UploadID: "x", Initiated: from}, false},
		{"this write's own upload", store.Upload{Key: "k", UploadID: "mine", Initiated: from}, false},
		{"started long before (another writer's)", store.Upload{Key: "k", UploadID: "x", Initiated: from.Add(-time.Hour)}, false},
		{"started long after", store.Upload{Key: "k", UploadID: "x", Initiated: to.Add(time.Hour)}, false},
	} {
		if got := mayBeLostCreate(c.u, "k", ours, from, to); got != c.want {
			t.Errorf("%s: mayBeLostCreate = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecideUploadAgain(t *testing.T) {
	integrityErr := &sperrors.Error{Kind: sperrors.Integrity, Op: "Verify", Message: "checksum differs"}
	unverifiable := &sperrors.Error{Kind: sperrors.Integrity, Op: "Verify", Code: sperrors.CodeUnverifiable}
	ownBadObject := &sperrors.Error{Kind: sperrors.Integrity, Op: "Verify", ObjectLeft: true}
	for _, c := range []struct {
		name       string
		d          decider
		err        error
		callerDone bool
		want       bool
	}{
		{"damaged on the way: sent again from the source (TestUploadNamesWhatEarlierAttemptsLeft)", decider{}, integrityErr, false, true},
		{"wrapped, as Close returns it", decider{}, fmt.Errorf("flush: %w", integrityErr), false, true},
		{"nothing could prove it: sending again proves no more (TestNothingProvesIt)", decider{}, unverifiable, false, false},
		{"the caller gave up", decider{}, integrityErr, true, false},
		{"throttled: the policy's retries were spent already", decider{}, errThrottled, false, false},
		{"create-only, its own bad object at the key", decider{createOnly: true}, ownBadObject, false, false},
		{"not create-only, its bad object at the key: overwritten by the next attempt", decider{}, ownBadObject, false, true},
	} {
		if got := c.d.uploadAgain(c.err, c.callerDone); got != c.want {
			t.Errorf("%s: uploadAgain = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecideUploadAnew(t *testing.T) {
	gone := &sperrors.Error{Kind: sperrors.Transient, Op: "UploadPart", Code: "NoSuchUpload", UploadGone: true}
	goneLeft := &sperrors.Error{Kind: sperrors.Transient, Op: "CompleteMultipartUpload", UploadGone: true, ObjectLeft: true}
	for _, c := range []struct {
		name                                string
		err                                 error
		replayable, anewAlready, callerDone bool
		want                                bool
	}{
		{"dropped, source readable again: one new upload (TestUploadVanished)", gone, true, false, false, true},
		{"wrapped, as Close returns it", fmt.Errorf("close: %w", gone), true, false, false, true},
		{"a stream: its bytes are gone", gone, false, false, false, false},
		{"the new upload dropped too: no loop", gone, true, true, false, false},
		{"the caller gave up", gone, true, false, true, false},
		{"an object of the attempt at the key", goneLeft, true, false, false, false},
		{"a transient failure of another kind", errThrottled, true, false, false, false},
	} {
		if got := (decider{}).uploadAnew(c.err, c.replayable, c.anewAlready, c.callerDone); got != c.want {
			t.Errorf("%s: uploadAnew = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecideJournalRecord(t *testing.T) {
	if (decider{}).recordAtEnd(false) != recordRemove {
		t.Error("a verified landing keeps its record (journal_test.go's assertClean)")
	}
	if (decider{}).recordAtEnd(true) != recordKeep {
		t.Error("a failed write drops its record: Recover could not settle it (TestUploadNamesTheUploadItCouldNotAbort)")
	}
	if (decider{}).recordAfterAbort() != recordRemove {
		t.Error("a confirmed abort keeps its record")
	}
	if (decider{completeLost: true}).recordAfterAbort() != recordKeep {
		t.Error("a lost Complete's record is dropped with its upload: Recover could not tell whether it landed")
	}
}

// The decisions before the commit (decide_parts.go).

func TestDecideSendsSections(t *testing.T) {
	for _, c := range []struct {
		name      string
		readerAt  bool
		size      int64
		threshold int64
		want      bool
	}{
		{"a file over the threshold: parts from its sections (TestUploadSources)", true, 20 << 20, 5 << 20, true},
		{"a small ReaderAt: one buffer, one PutObject (TestDefaultsVerifyAgainstStoreChecksum)", true, 100, 5 << 20, false},
		{"exactly the threshold: one buffer", true, 5 << 20, 5 << 20, false},
		{"a stream of any size: buffers (TestUploadSources)", false, 20 << 20, 5 << 20, false},
	} {
		if got := sendsSections(c.readerAt, c.size, c.threshold); got != c.want {
			t.Errorf("%s: sendsSections = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecideAtClose(t *testing.T) {
	const threshold = 5 << 20
	for _, c := range []struct {
		name          string
		fromSource    bool
		uploadStarted bool
		size          int64
		want          closingShape
	}{
		{"empty (TestWriterSizes)", false, false, 0, closeSinglePut},
		{"one byte under a part (TestWriterSizes)", false, false, threshold - 1, closeSinglePut},
		{"exactly the threshold: held back, never a part (TestWriterSizes)", false, false, threshold, closeSinglePut},
		{"a byte over: the held part and the tail (TestWriterSizes)", false, true, threshold + 1, closeMultipart},
		{"over the threshold before any part went", false, false, threshold + 1, closeMultipart},
		{"parts from a ReaderAt's sections (TestUploadSources)", true, true, 4*threshold + 12345, closeMultipart},
		{"a resumed upload of a source whose parts the store had", true, true, threshold + 1, closeMultipart},
	} {
		if got := atClose(c.fromSource, c.uploadStarted, c.size, threshold); got != c.want {
			t.Errorf("%s: atClose = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideClosingTail(t *testing.T) {
	for _, c := range []struct {
		name       string
		hasBuf     bool
		fill       int
		hasPending bool
		want       tailStep
	}{
		{"parts plus a byte: the byte is the final part (TestWriterSizes)", true, 1, false, tailFillFinal},
		{"a full part held back, the stream ended on its boundary: it is final", false, 0, true, tailPendingFinal},
		{"a full part held, an empty buffer taken after it: released, the full part final", true, 0, true, tailPendingFinal},
		{"a full part held and a partly filled one: both go, the second final", true, 7, true, tailPendingThenFill},
		{"only an empty buffer: nothing sent", true, 0, false, tailDropEmpty},
		{"nothing held", false, 0, false, tailNone},
	} {
		if got := closingTail(c.hasBuf, c.fill, c.hasPending); got != c.want {
			t.Errorf("%s: closingTail = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecidePartSizes(t *testing.T) {
	const part = 5 << 20
	for _, c := range []struct {
		name     string
		sizeHint int64
		written  int64
		want     int64
	}{
		{"no declared size: a whole part (TestStreamMemoryBound)", -1, 3 * part, part},
		{"a declared small object: its own size (TestBadInput)", 100, 0, 100},
		{"a declared object's last part: what remains", 2*part + 10, 2 * part, 10},
		{"a declared object with room for whole parts", 3 * part, part, part},
		{"a declared empty object: never an empty buffer", 0, 0, 1},
		{"past the declared size: one byte, then account refuses it", 100, 100, 1},
	} {
		if got := partBufferSize(part, c.sizeHint, c.written); got != c.want {
			t.Errorf("%s: partBufferSize = %d, want %d", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name     string
		sizeHint int64
		written  int64
		want     bool
	}{
		{"nothing declared", -1, 1 << 40, false},
		{"declared, bytes still to come", 100, 99, false},
		{"declared, all in: a byte more is too long (TestBadInput)", 100, 100, true},
		{"declared empty", 0, 0, true},
	} {
		if got := declaredAllIn(c.sizeHint, c.written); got != c.want {
			t.Errorf("%s: declaredAllIn = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name      string
		off       int64
		total     int64
		wantSize  int64
		wantFinal bool
	}{
		{"first of several (TestUploadSources)", 0, 4*part + 12345, part, false},
		{"the short last part (TestUploadSources)", 4 * part, 4*part + 12345, 12345, true},
		{"a whole last part", 2 * part, 3 * part, part, true},
		{"a part one byte short of the end", part, 2*part + 1, part, false},
	} {
		size, final := sectionSpan(c.off, c.total, part)
		if size != c.wantSize || final != c.wantFinal {
			t.Errorf("%s: sectionSpan = %d, final %v; want %d, %v", c.name, size, final, c.wantSize, c.wantFinal)
		}
	}
}

func TestDecideAfterReceiptMD5(t *testing.T) {
	sent := store.Checksum{Algorithm: store.ChecksumCRC32C, Value: "AAAAAA=="}
	for _, c := range []struct {
		name   string
		d      decider
		hasMD5 bool
		sent   store.Checksum
		want   md5Step
	}{
		{"taken as the bytes arrived (TestSavingsOffIsTheReferencePath)", decider{md5Upfront: true}, true, sent, md5Held},
		{"the HEAD known to report the checksum: no MD5 (TestDefaultsVerifyWithoutMD5OnEchoingStores)", decider{}, false, sent, md5Held},
		{"deferred, a checksum sent: the echo may spare it (TestMD5OnlyWhenNeeded)", decider{md5Late: true}, false, sent, md5AskEcho},
		{"deferred, taken beside the request already", decider{md5Late: true}, true, sent, md5Held},
		{"deferred, no checksum sent: nothing can echo", decider{md5Late: true}, false, store.Checksum{}, md5Take},
		{"a single PUT's offered header refused after its MD5 was skipped (TestSavingsOffIsTheReferencePath, refusing checksum headers)", decider{md5Upfront: true}, false, store.Checksum{}, md5Take},
	} {
		if got := c.d.afterReceipt(c.hasMD5, c.sent); got != c.want {
			t.Errorf("%s: afterReceipt = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideAfterEcho(t *testing.T) {
	sent := store.Checksum{Algorithm: store.ChecksumCRC32C, Value: "AAAAAA=="}
	trusting := decider{md5Late: true, echoTrust: true}
	for _, c := range []struct {
		name     string
		d        decider
		echoed   string
		checking tri
		want     echoStep
	}{
		{"echoed by a store known to check: no MD5 (TestMD5OnlyWhenNeeded)", trusting, sent.Value, yes, echoTrusted},
		{"echoed by a store that checks nothing: the MD5 catches damage (TestChecksumProbe)", trusting, sent.Value, no, echoUntrusted},
		{"echoed, the probe's answer not known: hashed (TestChecksumProbe)", trusting, sent.Value, unknown, echoUntrusted},
		{"echoed by a checking store, echo trust not among the savings", decider{md5Late: true}, sent.Value, yes, echoUntrusted},
		{"no echo: receipts of this endpoint spare nothing (TestMD5OnlyWhenNeeded, ignores checksum headers)", trusting, "", yes, echoMissing},
		{"an echo of another value", trusting, "BBBBBB==", yes, echoUntrusted},
	} {
		if got := c.d.afterEcho(sent, c.echoed, c.checking); got != c.want {
			t.Errorf("%s: afterEcho = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideMD5EarlyAndSpared(t *testing.T) {
	for _, c := range []struct {
		name     string
		d        decider
		hasMD5   bool
		checking tri
		want     bool
	}{
		{"a fresh endpoint's single PUT: hashed beside its request (TestMD5OnlyWhenNeeded)", decider{md5Late: true}, false, unknown, true},
		{"an endpoint known to check: the answer may prove it (TestMD5OnlyWhenNeeded)", decider{md5Late: true}, false, yes, false},
		{"an endpoint known not to check", decider{md5Late: true}, false, no, true},
		{"MD5 taken as the bytes arrived", decider{md5Upfront: true}, true, unknown, false},
		{"HEAD known to report the checksum: for the answer's ETag (TestSinglePutProvenByItsAnswer)", decider{rereadSaving: true}, false, unknown, true},
		{"HEAD known to report the checksum, endpoint known to check: the echo may prove it", decider{rereadSaving: true}, false, yes, false},
		{"HEAD known to report the checksum, saving off: the HEAD is sent anyway", decider{}, false, unknown, false},
		{"HEAD known to report the checksum, encryption asked: the HEAD is sent anyway", decider{rereadSaving: true, encrypted: true}, false, unknown, false},
		{"HEAD known to report the checksum, read-back asked", decider{rereadSaving: true, readBack: true}, false, unknown, false},
		{"HEAD known to report the checksum, ETags shown not to be MD5s", decider{rereadSaving: true, etagsNotMD5: true}, false, unknown, false},
	} {
		if got := c.d.md5Early(c.hasMD5, c.checking); got != c.want {
			t.Errorf("%s: md5Early = %v, want %v", c.name, got, c.want)
		}
	}
	if !(decider{md5Late: true}).md5Spared(false) {
		t.Error("a deferred MD5 spared by an echo is not noted (TestMD5OnlyWhenNeeded, HEAD does not report)")
	}
	if (decider{md5Late: true}).md5Spared(true) || (decider{}).md5Spared(false) {
		t.Error("a part with its MD5, or a write that defers none, noted as spared")
	}
}

func TestDecideProbe(t *testing.T) {
	asks := decider{md5Late: true, probeSaving: true, checksumSent: true}
	for _, c := range []struct {
		name     string
		d        decider
		checking tri
		want     bool
	}{
		{"a fresh endpoint, MD5s deferred (TestChecksumProbe)", asks, unknown, true},
		{"the endpoint's answer known already (TestChecksumProbe)", asks, yes, false},
		{"known not to check", asks, no, false},
		{"the probe not among the savings", decider{md5Late: true, checksumSent: true}, unknown, false},
		{"every MD5 taken as the bytes arrive: no probe (TestSavingsOffIsTheReferencePath)", decider{probeSaving: true, checksumSent: true}, unknown, false},
		{"no checksum sent: nothing to get wrong", decider{md5Late: true, probeSaving: true}, unknown, false},
	} {
		if got := c.d.probes(c.checking); got != c.want {
			t.Errorf("%s: probes = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		err  error
		want tri
	}{
		{"taken: checks nothing (TestChecksumProbe)", nil, no},
		{"BadDigest: checks (TestChecksumProbe)", &store.ResponseError{StatusCode: 400, Code: "BadDigest"}, yes},
		{"MinIO's mismatch code", &sperrors.Error{Kind: sperrors.Integrity, Code: "XAmzContentChecksumMismatch"}, yes},
		{"throttled: not known", errThrottled, unknown},
		{"access refused: not known", &sperrors.Error{Kind: sperrors.Permanent, StatusCode: 403, Code: "AccessDenied"}, unknown},
		{"no answer", errHeadReset, unknown},
	} {
		if got := probeAnswer(c.err); got != c.want {
			t.Errorf("%s: probeAnswer = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestDecideProbeBesidePut(t *testing.T) {
	asks := decider{probeSaving: true, echoTrust: true, lateSaving: true, rereadSaving: true, checksumSent: true, laterWrite: true}
	with := func(f func(*decider)) decider { d := asks; f(&d); return d }
	for _, c := range []struct {
		name     string
		d        decider
		checking tri
		want     bool
	}{
		{"a fresh endpoint (TestSinglePutsLearnTheStoreChecks)", asks, unknown, true},
		{"the endpoint's answer known already", asks, yes, false},
		{"known not to check", asks, no, false},
		{"an Uploader's first write, maybe its only one: it would wait for what serves later writes", with(func(d *decider) { d.laterWrite = false }), unknown, false},
		{"the MD5 taken up front anyway (Content-MD5, a HEAD known to need it)", with(func(d *decider) { d.md5Upfront = true }), unknown, false},
		{"encrypted: the HEAD stays, the answer proves nothing", with(func(d *decider) { d.encrypted = true }), unknown, false},
		{"ReadBack: the object is read whatever proved it", with(func(d *decider) { d.readBack = true }), unknown, false},
		{"SaveRereads off: the HEAD stays", with(func(d *decider) { d.rereadSaving = false }), unknown, false},
		{"SaveProbe off", with(func(d *decider) { d.probeSaving = false }), unknown, false},
		{"SaveEchoTrust off: no echo would spare an MD5", with(func(d *decider) { d.echoTrust = false }), unknown, false},
		{"SaveLateMD5 off: every MD5 taken as the bytes arrive", with(func(d *decider) { d.lateSaving = false }), unknown, false},
		{"no checksum sent: nothing to get wrong", with(func(d *decider) { d.checksumSent = false }), unknown, false},
	} {
		if got := c.d.probesBesidePut(c.checking); got != c.want {
			t.Errorf("%s: probesBesidePut = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecideCreatesAtStart(t *testing.T) {
	const threshold = 5 << 20
	for _, c := range []struct {
		name     string
		sizeHint int64
		want     bool
	}{
		{"no declared size: may yet be one PutObject (TestCreatesAtStart)", -1, false},
		{"declared, within the threshold: one PutObject (TestCreatesAtStart)", threshold, false},
		{"declared over the threshold: multipart whatever comes (TestCreatesAtStart)", threshold + 1, true},
		{"declared empty", 0, false},
	} {
		if got := createsAtStart(c.sizeHint, threshold); got != c.want {
			t.Errorf("%s: createsAtStart = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecideListsBeforeComplete(t *testing.T) {
	proven := []partDone{{number: 1, echoed: true}, {number: 2, echoed: true}}
	oneBare := []partDone{{number: 1, echoed: true}, {number: 2}} // a resumed part, or no echo
	saving := decider{rereadSaving: true, checksumSent: true}
	for _, c := range []struct {
		name     string
		d        decider
		parts    []partDone
		checking tri
		want     bool
	}{
		{"every receipt echoed, store checks: left out (TestListPartsLeftOutWhenReceiptsProve)", saving, proven, yes, false},
		{"a part without a proving receipt (TestListPartsLeftOutWhenReceiptsProve)", saving, oneBare, yes, true},
		{"store checks nothing: an echo may be parroted (TestListPartsLeftOutWhenReceiptsProve)", saving, proven, no, true},
		{"store not known to check", saving, proven, unknown, true},
		{"no checksum sent", decider{rereadSaving: true}, proven, yes, true},
		{"saving off, or a Complete refused a part (TestListPartsLeftOutWhenReceiptsProve)", decider{checksumSent: true}, proven, yes, true},
		{"no parts", saving, nil, yes, true},
	} {
		if got := c.d.listsBeforeComplete(c.parts, c.checking); got != c.want {
			t.Errorf("%s: listsBeforeComplete = %v, want %v", c.name, got, c.want)
		}
	}
	refused := &sperrors.Error{Op: "CompleteMultipartUpload", Code: "InvalidPart"}
	if got := (decider{unlisted: true}).afterCommit(refused, false); got != commitListFirst {
		t.Errorf("a part refused by an unlisted Complete: %v, want commitListFirst", got)
	}
	if got := (decider{}).afterCommit(refused, false); got != commitFailed {
		t.Errorf("a part refused after the listing: %v, want commitFailed", got)
	}
}

func TestDecideCompleteProves(t *testing.T) {
	want := store.Checksum{Algorithm: store.ChecksumCRC32C, Value: "roYm9w=="}
	var answer, other store.Checksums
	answer.Set(store.ChecksumCRC32C, want.Value)
	other.Set(store.ChecksumCRC32C, "AAAAAA==")
	proven := decider{unlisted: true, rereadSaving: true}
	for _, c := range []struct {
		name   string
		d      decider
		answer store.Checksums
		etag   string
		want   store.Checksum
		proves bool
	}{
		{"receipts proved every part, answer carries our sum (TestListPartsLeftOutWhenReceiptsProve)", proven, answer, "e-2", want, true},
		{"answer carries none (TestListPartsLeftOutWhenReceiptsProve)", proven, store.Checksums{}, "e-2", want, false},
		{"answer carries another (TestListPartsLeftOutWhenReceiptsProve)", proven, other, "e-2", want, false},
		{"answer without an ETag", proven, answer, "", want, false},
		{"the parts were listed: some receipt proved nothing", decider{rereadSaving: true}, answer, "e-2", want, false},
		{"saving off", decider{unlisted: true}, answer, "e-2", want, false},
		{"encryption asked: the HEAD reports what was applied", decider{unlisted: true, rereadSaving: true, encrypted: true}, answer, "e-2", want, false},
		{"read-back asked (TestListPartsLeftOutWhenReceiptsProve)", decider{unlisted: true, rereadSaving: true, readBack: true}, answer, "e-2", want, false},
		{"no checksum computed", proven, answer, "e-2", store.Checksum{}, false},
	} {
		if got := c.d.completeProves(c.answer, c.etag, c.want); got != c.proves {
			t.Errorf("%s: completeProves = %v, want %v", c.name, got, c.proves)
		}
	}
}

func TestDecidePutProves(t *testing.T) {
	want := store.Checksum{Algorithm: store.ChecksumCRC32C, Value: "roYm9w=="}
	var echo, other store.Checksums
	echo.Set(store.ChecksumCRC32C, want.Value)
	other.Set(store.ChecksumCRC32C, "AAAAAA==")
	saving := decider{rereadSaving: true}
	for _, c := range []struct {
		name     string
		d        decider
		answer   store.Checksums
		etag     string
		sent     store.Checksum
		checking tri
		proves   bool
	}{
		{"a store known to check echoes our sum (TestSinglePutProvenByItsAnswer)", saving, echo, "e", want, yes, true},
		{"a fresh Uploader: not known to check (TestSinglePutProvenByItsAnswer)", saving, echo, "e", want, unknown, false},
		{"known to check nothing", saving, echo, "e", want, no, false},
		{"no echo", saving, store.Checksums{}, "e", want, yes, false},
		{"another sum echoed", saving, other, "e", want, yes, false},
		{"the offered checksum was refused and dropped: nothing sent", saving, echo, "e", store.Checksum{}, yes, false},
		{"answer without an ETag", saving, echo, "", want, yes, false},
		{"saving off (TestSinglePutProvenByItsAnswer)", decider{}, echo, "e", want, yes, false},
		{"encryption asked", decider{rereadSaving: true, encrypted: true}, echo, "e", want, yes, false},
		{"read-back asked", decider{rereadSaving: true, readBack: true}, echo, "e", want, yes, false},
	} {
		if got := c.d.putProves(c.answer, c.etag, c.sent, want, c.checking); got != c.proves {
			t.Errorf("%s: putProves = %v, want %v", c.name, got, c.proves)
		}
	}
}

func TestDecideETagProves(t *testing.T) {
	sum := md5.Sum([]byte("the body"))
	etag := hex.EncodeToString(sum[:])
	other := md5.Sum([]byte("the body, cut"))
	saving := decider{rereadSaving: true}
	for _, c := range []struct {
		name      string
		d         decider
		etag      string
		hasMD5    bool
		md5Sent   bool
		checksMD5 bool
		proves    bool
	}{
		{"the ETag is our MD5, none sent (TestSinglePutProvenByItsAnswer)", saving, etag, true, false, false, true},
		{"quoted and upper case", saving, `"` + strings.ToUpper(etag) + `"`, true, false, false, true},
		{"another MD5: damaged, or not an MD5 store (TestSinglePutDamagedNeverLands)", saving, hex.EncodeToString(other[:]), true, false, false, false},
		{"a multipart-shaped ETag", saving, etag + "-1", true, false, false, false},
		{"not 32 hex digits", saving, etag[:30], true, false, false, false},
		{"no ETag", saving, "", true, false, false, false},
		{"no MD5 taken", saving, etag, false, false, false, false},
		{"Content-MD5 sent, the store not known to check it: it may echo it (TestSinglePutDamagedNeverLands)", saving, etag, true, true, false, false},
		{"Content-MD5 sent to a store that checks it (TestSinglePutProvenByItsAnswer)", saving, etag, true, true, true, true},
		{"saving off", decider{}, etag, true, false, false, false},
		{"encryption asked: the HEAD reports what was applied", decider{rereadSaving: true, encrypted: true}, etag, true, false, false, false},
		{"read-back asked", decider{rereadSaving: true, readBack: true}, etag, true, false, false, false},
	} {
		if got := c.d.etagProves(c.etag, sum, c.hasMD5, c.md5Sent, c.checksMD5); got != c.proves {
			t.Errorf("%s: etagProves = %v, want %v", c.name, got, c.proves)
		}
	}
}

func TestDecideWidens(t *testing.T) {
	for _, c := range []struct {
		name string
		conc int
		rtt  time.Duration
		want bool
	}{
		{"a far store (TestWideningOver200msLink)", 4, 80 * time.Millisecond, true},
		{"a near store", 4, 2 * time.Millisecond, false},
		{"no create sent (a resumed upload)", 4, 0, false},
		{"one at a time", 1, 80 * time.Millisecond, false},
	} {
		if got := widens(c.conc, c.rtt); got != c.want {
			t.Errorf("%s: widens = %v, want %v", c.name, got, c.want)
		}
	}
}

// The widening over epochs of acknowledged parts: each epoch's parts are acknowledged at once
// at its end, after the epoch's duration; the rate is what the link gives that many parts.
func TestDecideWidening(t *testing.T) {
	const part = 16 << 20
	for _, c := range []struct {
		name string
		// rate gives the link's bytes/s with n parts in flight.
		rate   func(n int) float64
		limits []int // the limit after each epoch
	}{
		{"window-bound: the rate grows with the parts in flight, up to 4× (16)",
			func(n int) float64 { return float64(n) * (20 << 20) }, []int{6, 9, 13, 16}},
		{"link-bound from the start: one widening, then it stops",
			func(int) float64 { return 119 << 20 }, []int{6, 6, 6}},
		{"full at 9: widens past it once, then stops",
			func(n int) float64 { return float64(min(n, 9)) * (13 << 20) }, []int{6, 9, 13, 13}},
		{"new connections' handshakes and idle answers: a fifth more for half more parts, it goes on",
			func(n int) float64 { return min(119<<20, 64*(1+float64(n-4)/10)*(1<<20)) }, []int{6, 9, 13, 16, 16}},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			p := newWidening(4, now)
			var got []int
			for range c.limits {
				n := p.limit
				now = now.Add(time.Duration(float64(n*part) / c.rate(n) * float64(time.Second)))
				added := 0
				for range n {
					added += p.partDone(now, time.Time{}, part)
				}
				if p.limit != n+added {
					t.Fatalf("limit %d after adding %d to %d", p.limit, added, n)
				}
				got = append(got, p.limit)
			}
			if !slices.Equal(got, c.limits) {
				t.Errorf("limits %v, want %v", got, c.limits)
			}
		})
	}
}

// TestDecideWideningCountsHandedShare: a part that went in a slot handed off before its holder's
// answer (handoff.go), and so mostly before its epoch began, lends the epoch only the share of
// its bytes its time in the epoch makes. Counted whole, its head start made the epoch's rate
// look like the link's, and the next widening, measured against it, bought too little.
func TestDecideWideningCountsHandedShare(t *testing.T) {
	const part = 16 << 20
	at := func(s float64) time.Time { return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))) }
	p := newWidening(4, at(0))
	for range 4 { // epoch 1: 64 MiB/s
		p.partDone(at(1), time.Time{}, part)
	}
	if p.limit != 6 {
		t.Fatalf("limit %d after the first epoch, want 6", p.limit)
	}
	// Epoch 2: two parts handed off at 0.6 s, half their time in the epoch, and four others:
	// 2×8 + 4×16 = 80 MiB in 1 s, against 96 if the handed parts counted whole.
	p.partDone(at(1.4), at(0.6), part)
	p.partDone(at(1.4), at(0.6), part)
	for range 4 {
		p.partDone(at(2), time.Time{}, part)
	}
	if p.limit != 9 || p.lastRate != 80<<20 {
		t.Fatalf("limit %d at %.1f MiB/s after the second epoch, want 9 at 80", p.limit, p.lastRate/(1<<20))
	}
	// Epoch 3: 9 parts in 1.4 s, 102.9 MiB/s: a quarter of the half more parts' growth over 80,
	// not over 96 (which needs 108).
	for range 9 {
		p.partDone(at(3.4), time.Time{}, part)
	}
	if p.limit != 13 {
		t.Fatalf("limit %d after the third epoch, want 13", p.limit)
	}
}
