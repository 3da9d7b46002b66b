package writer

import (
	"crypto/rand"
	"encoding/hex"
	stderrors "errors"
	"io/fs"
	"os"
	"sync"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
)

// journalDirReady makes sure the journal's directory exists before a write records in it, and,
// for Recover (create false), that it does: recovering from a mistyped path must fail, not report
// an empty journal. Either way the directory must keep the journal's rules (owned by this
// process's user, not group- or world-writable: see journal.Dir); one it creates is mode 0700.
func journalDirReady(dir string, create bool) error {
	if dir == "" {
		return nil
	}
	var err error
	if create {
		_, err = journal.Create(dir)
	} else {
		_, err = journal.Open(dir)
	}
	return err
}

// journalDirUsable is NewUploader's look at Options.JournalDir: a directory that exists must keep
// the journal's rules now, not at the first multipart write; a missing one is left for the first
// write that needs it to create.
func journalDirUsable(dir string) error {
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(dir); stderrors.Is(err, fs.ErrNotExist) {
		return nil
	}
	_, err := journal.Open(dir)
	return err
}

// journalKeeper keeps this write's record in the upload journal (Options.JournalDir), so a crash
// leaves Recover, or a later Upload of the same source, a trace to follow: a placeholder before
// the create is sent, the upload id before any part, each verified part, the object Complete is
// about to create, and at the end the record removed or kept.
//
// It owns the record's id and this writer's claim on it, the placeholder of a create whose answer
// was lost, and the parts resumed from a record (resumer). It does not own the upload (session)
// nor decide the record's fate: the decisions (decide.go: recordAtEnd, recordAfterAbort) come in
// as arguments. With no journal (or no endpoint to name records by) every method does nothing.
type journalKeeper struct {
	journal journal.Journal // nil: the write keeps no journal
	dir     string
	// record is the write's record without its upload id: where (endpoint, bucket, key) and
	// the layout (part size, source size, checksum, encryption) a resume must match.
	record journal.Record
	errs   errorSite
	log    *zap.Logger

	mu   sync.Mutex
	id   journal.ID
	held bool // this writer holds the record's claim
	// placeholder is the record of a create whose answer was lost, held until the sweep for the
	// upload it may have left has run (settleCreate); zero when none is held.
	placeholder journal.ID
	// resumed are the parts resumed from the record and their sizes: not sent again.
	resumed map[int32]int64
}

// newJournalKeeper makes k (zero, allocated with its write) keep the record of a write of bucket/key with cfg's journal, its parts of
// partSize, its checksum computed with local.
func newJournalKeeper(k *journalKeeper, cfg config, bucket, key string, partSize int64, local store.ChecksumAlgorithm, errs errorSite, log *zap.Logger) *journalKeeper {
	k.dir, k.errs, k.log = cfg.journalDir, errs, log
	if cfg.journal == nil || cfg.journalEndpoint == "" {
		return k
	}
	k.journal = cfg.journal
	k.record = journal.Record{
		ID:       journal.ID{Endpoint: cfg.journalEndpoint, Bucket: bucket, Key: key},
		PartSize: partSize, SourceSize: cfg.sizeHint, ChecksumAlgorithm: string(local),
		SSE: string(cfg.sse.Type), SSECustomerKeyMD5: cfg.customerKey().MD5(),
	}
	return k
}

func (k *journalKeeper) on() bool { return k.journal != nil }

func (k *journalKeeper) failed(what string, err error) *sperrors.Error {
	return k.errs.errorf(sperrors.Permanent, "Journal", err, "the upload journal could not record %s: the write stops rather than run unrecoverable", what)
}

// creating writes the placeholder record of an upload about to be created; the returned func
// removes it (after begin recorded the real id, or after the create failed), unless answerLost
// says an attempt's answer was lost: the store may hold an upload no record names, so the
// placeholder stays, claimed, until the sweep for it has run (settleCreate), and a crash before
// that leaves Recover the trace it follows. Hook: the create of the upload.
func (k *journalKeeper) creating(answerLost func() bool) (func(), error) {
	if !k.on() {
		return func() {}, nil
	}
	if err := journalDirReady(k.dir, true); err != nil {
		return nil, k.failed("its directory", err)
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	rec := k.record
	rec.UploadID = journal.CreatingPrefix + hex.EncodeToString(nonce[:])
	rec.Creating = true
	if err := k.journal.Begin(rec); err != nil {
		return nil, k.failed("the upload about to be created", err)
	}
	return func() {
		if answerLost() {
			k.mu.Lock()
			k.placeholder = rec.ID
			k.mu.Unlock()
			return
		}
		if err := k.journal.Remove(rec.ID); err != nil {
			k.log.Warn("journal placeholder not removed", zap.Error(err))
		}
	}, nil
}

// settleCreate ends the hold on the placeholder of a create whose answer was lost, once Close or
// Abort has swept for the upload it may have left: removed when the sweep left nothing it could
// not account for (swept), else kept (claim released) for Recover to settle. Hook: the end of
// Close and Abort.
func (k *journalKeeper) settleCreate(swept bool) {
	k.mu.Lock()
	id := k.placeholder
	k.placeholder = journal.ID{}
	k.mu.Unlock()
	if id == (journal.ID{}) {
		return
	}
	if swept {
		if err := k.journal.Remove(id); err != nil {
			k.log.Warn("journal placeholder not removed", zap.Error(err))
		}
		return
	}
	k.log.Warn("placeholder of a create whose answer was lost kept in the journal for recovery")
	if err := k.journal.Release(id); err != nil {
		k.log.Warn("journal claim not released", zap.Error(err))
	}
}

// begin records a new upload before any part is sent. Hook: the create of the upload.
func (k *journalKeeper) begin(uploadID string) error {
	if !k.on() {
		return nil
	}
	rec := k.record
	rec.UploadID = uploadID
	if err := k.journal.Begin(rec); err != nil {
		return k.failed("the new upload", err)
	}
	k.mu.Lock()
	k.id, k.held = rec.ID, true
	k.mu.Unlock()
	return nil
}

// adopt takes on the record of a journaled upload this write continues (claimed already), and
// the parts resumed from it with their sizes.
func (k *journalKeeper) adopt(id journal.ID, resumed map[int32]int64) {
	k.mu.Lock()
	k.id, k.held, k.resumed = id, true, resumed
	k.mu.Unlock()
}

// heldID is the record this writer holds, if any.
func (k *journalKeeper) heldID() (journal.ID, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.id, k.held
}

// part records a part the store acknowledged and safeput verified. Hook: a part's receipt.
func (k *journalKeeper) part(p partDone) error {
	id, held := k.heldID()
	if !held {
		return nil
	}
	jp := journal.Part{Number: p.number, Size: p.size, Checksum: p.sum, ETag: p.etag}
	if p.hasMD5 {
		jp.MD5 = hex.EncodeToString(p.md5[:])
	}
	if err := k.journal.AddPart(id, jp); err != nil {
		e := k.failed("a part", err)
		e.PartNumber = p.number
		return e
	}
	return nil
}

// intend records the object Complete is about to create. Hook: before the Complete.
func (k *journalKeeper) intend(want integrity.Expected) error {
	id, held := k.heldID()
	if !held {
		return nil
	}
	o := journal.Object{Size: want.Size, ChecksumAlgorithm: string(want.Checksum.Algorithm), Checksum: want.Checksum.Value, ETag: want.ETag}
	if err := k.journal.Intend(id, o); err != nil {
		return k.failed("the intended object", err)
	}
	return nil
}

// forget removes the record of an upload that is gone (aborted), unless step (recordAfterAbort)
// keeps it. Hook: the confirmed abort.
func (k *journalKeeper) forget(uploadID string, step recordStep) {
	if step == recordKeep {
		return
	}
	k.mu.Lock()
	id, held := k.id, k.held
	if held && id.UploadID == uploadID {
		k.held = false
	}
	k.mu.Unlock()
	if !held || id.UploadID != uploadID {
		return
	}
	if err := k.journal.Remove(id); err != nil {
		// Harmless: Recover finds the upload gone and drops the record.
		k.log.Warn("journal record of an aborted upload not removed", zap.String("upload_id", uploadID), zap.Error(err))
	}
}

// settle ends the writer's hold on its record when Close or Abort returns with err: removed or
// kept (claim released) so Recover can tell what happened, as step (recordAtEnd) says. Hook: the
// end of Close and Abort.
func (k *journalKeeper) settle(err error, step recordStep) {
	k.mu.Lock()
	id, held := k.id, k.held
	k.held = false
	k.mu.Unlock()
	if !held {
		return
	}
	if step == recordRemove {
		if rerr := k.journal.Remove(id); rerr != nil {
			k.log.Warn("journal record of a landed upload not removed", zap.String("upload_id", id.UploadID), zap.Error(rerr))
		}
		return
	}
	k.log.Warn("upload kept in the journal for recovery", zap.String("upload_id", id.UploadID), zap.Error(err))
	if rerr := k.journal.Release(id); rerr != nil {
		k.log.Warn("journal claim not released", zap.String("upload_id", id.UploadID), zap.Error(rerr))
	}
}

// resumedPart reports whether part n was resumed from the journal: the store has its bytes.
func (k *journalKeeper) resumedPart(n int32) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.resumed[n]
	return ok
}

// withResumed adds to a landed Result what was reused from the journal.
func (k *journalKeeper) withResumed(res *Result) *Result {
	if res == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, size := range k.resumed {
		res.ResumedParts++
		res.ResumedBytes += size
	}
	return res
}

// recordedETag is the ETag rec keeps for part n, unquoted ("" when it has none).
func recordedETag(rec journal.Record, n int32) string {
	for _, p := range rec.Parts {
		if p.Number == n {
			return trimQuotes(p.ETag)
		}
	}
	return ""
}

func expectedOf(o journal.Object) integrity.Expected {
	want := integrity.Expected{Size: o.Size, ETag: o.ETag}
	if o.ChecksumAlgorithm != "" {
		want.Checksum = store.Checksum{Algorithm: store.ChecksumAlgorithm(o.ChecksumAlgorithm), Value: o.Checksum}
	}
	return want
}

func trimQuotes(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
