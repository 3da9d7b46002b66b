package writer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	stderrors "errors"
	"io/fs"
	"os"

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

// journalRun is a writer's link to its journal record.
type journalRun struct {
	id   journal.ID
	held bool // this writer holds the record's claim
	// creating is the placeholder of a create whose answer was lost, held until the sweep for
	// the upload it may have left has run (journalSettleCreate); zero when none is held.
	creating journal.ID
	reused   map[int32]bool  // parts resumed from the record: not sent again
	source   map[int32]int64 // sizes of the reused parts
}

func (w *Writer) journalOn() bool { return w.cfg.journal != nil && w.cfg.journalEndpoint != "" }

func (w *Writer) journalError(what string, err error) *sperrors.Error {
	return w.errs.errorf(sperrors.Permanent, "Journal", err, "the upload journal could not record %s: the write stops rather than run unrecoverable", what)
}

// journalCreating writes the placeholder record of an upload about to be created; the returned
// func removes it (after journalBegin recorded the real id, or after the create failed), unless
// an attempt's answer was lost: the store may hold an upload no record names, so the placeholder
// stays, claimed, until the sweep for it has run (journalSettleCreate), and a crash before that
// leaves Recover the trace it follows. Hook: ensureUpload.
func (w *Writer) journalCreating() (func(), error) {
	if !w.journalOn() {
		return func() {}, nil
	}
	if err := journalDirReady(w.cfg.journalDir, true); err != nil {
		return nil, w.journalError("its directory", err)
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	id := journal.ID{Endpoint: w.cfg.journalEndpoint, Bucket: w.bucket, Key: w.key, UploadID: journal.CreatingPrefix + hex.EncodeToString(nonce[:])}
	err := w.cfg.journal.Begin(journal.Record{
		ID: id, PartSize: w.plan.PartSize, SourceSize: w.cfg.sizeHint, ChecksumAlgorithm: string(w.caps.local), Creating: true,
		SSE: string(w.cfg.sse.Type), SSECustomerKeyMD5: w.cfg.customerKey().MD5(),
	})
	if err != nil {
		return nil, w.journalError("the upload about to be created", err)
	}
	return func() {
		w.mu.Lock()
		keep := w.session.upload.createLost()
		if keep {
			w.session.jr.creating = id
		}
		w.mu.Unlock()
		if keep {
			return
		}
		if err := w.cfg.journal.Remove(id); err != nil {
			w.log.Warn("journal placeholder not removed", zap.Error(err))
		}
	}, nil
}

// journalSettleCreate ends the hold on the placeholder of a create whose answer was lost, once
// Close or Abort has swept for the upload it may have left: removed when the sweep left nothing
// it could not account for, else kept (claim released) for Recover to settle. Hook: the end of
// Close and Abort.
func (w *Writer) journalSettleCreate(swept bool) {
	w.mu.Lock()
	id := w.session.jr.creating
	w.session.jr.creating = journal.ID{}
	w.mu.Unlock()
	if id == (journal.ID{}) {
		return
	}
	if swept {
		if err := w.cfg.journal.Remove(id); err != nil {
			w.log.Warn("journal placeholder not removed", zap.Error(err))
		}
		return
	}
	w.log.Warn("placeholder of a create whose answer was lost kept in the journal for recovery")
	if err := w.cfg.journal.Release(id); err != nil {
		w.log.Warn("journal claim not released", zap.Error(err))
	}
}

// journalBegin records a new upload before any part is sent. Hook: ensureUpload.
func (w *Writer) journalBegin(uploadID string) error {
	if !w.journalOn() {
		return nil
	}
	id := journal.ID{Endpoint: w.cfg.journalEndpoint, Bucket: w.bucket, Key: w.key, UploadID: uploadID}
	err := w.cfg.journal.Begin(journal.Record{
		ID: id, PartSize: w.plan.PartSize, SourceSize: w.cfg.sizeHint, ChecksumAlgorithm: string(w.caps.local),
		SSE: string(w.cfg.sse.Type), SSECustomerKeyMD5: w.cfg.customerKey().MD5(),
	})
	if err != nil {
		return w.journalError("the new upload", err)
	}
	w.mu.Lock()
	w.session.jr.id, w.session.jr.held = id, true
	w.mu.Unlock()
	return nil
}

// journalPart records a part the store acknowledged and safeput verified. Hook: uploadPart.
func (w *Writer) journalPart(p partDone) error {
	w.mu.Lock()
	id, held := w.session.jr.id, w.session.jr.held
	w.mu.Unlock()
	if !held {
		return nil
	}
	jp := journal.Part{Number: p.number, Size: p.size, Checksum: p.sum, ETag: p.etag}
	if p.hasMD5 {
		jp.MD5 = hex.EncodeToString(p.md5[:])
	}
	if err := w.cfg.journal.AddPart(id, jp); err != nil {
		e := w.journalError("a part", err)
		e.PartNumber = p.number
		return e
	}
	return nil
}

// journalIntend records the object Complete is about to create. Hook: complete.
func (w *Writer) journalIntend(want integrity.Expected) error {
	w.mu.Lock()
	id, held := w.session.jr.id, w.session.jr.held
	w.mu.Unlock()
	if !held {
		return nil
	}
	o := journal.Object{Size: want.Size, ChecksumAlgorithm: string(want.Checksum.Algorithm), Checksum: want.Checksum.Value, ETag: want.ETag}
	if err := w.cfg.journal.Intend(id, o); err != nil {
		return w.journalError("the intended object", err)
	}
	return nil
}

// journalForget removes the record of an upload that is gone (aborted). Hook: abortUpload.
func (w *Writer) journalForget(uploadID string) {
	if w.decider().recordAfterAbort() == recordKeep {
		return
	}
	w.mu.Lock()
	id, held := w.session.jr.id, w.session.jr.held
	if held && id.UploadID == uploadID {
		w.session.jr.held = false
	}
	w.mu.Unlock()
	if !held || id.UploadID != uploadID {
		return
	}
	if err := w.cfg.journal.Remove(id); err != nil {
		// Harmless: Recover finds the upload gone and drops the record.
		w.log.Warn("journal record of an aborted upload not removed", zap.String("upload_id", uploadID), zap.Error(err))
	}
}

// journalSettle ends the writer's hold on its record when Close or Abort returns: removed after
// a verified landing, else kept (claim released) so Recover can tell what happened. Hook: the
// end of Close and Abort.
func (w *Writer) journalSettle(err error) {
	w.mu.Lock()
	id, held := w.session.jr.id, w.session.jr.held
	w.session.jr.held = false
	w.mu.Unlock()
	if !held {
		return
	}
	if w.decider().recordAtEnd(err != nil) == recordRemove {
		if rerr := w.cfg.journal.Remove(id); rerr != nil {
			w.log.Warn("journal record of a landed upload not removed", zap.String("upload_id", id.UploadID), zap.Error(rerr))
		}
		return
	}
	w.log.Warn("upload kept in the journal for recovery", zap.String("upload_id", id.UploadID), zap.Error(err))
	if rerr := w.cfg.journal.Release(id); rerr != nil {
		w.log.Warn("journal claim not released", zap.String("upload_id", id.UploadID), zap.Error(rerr))
	}
}

// skipResumedPart reports whether the next part was resumed from the journal, and accounts for
// it as dispatched. Hook: sendSections.
func (w *Writer) skipResumedPart() bool {
	if !w.session.jr.reused[w.intake.nextPart+1] {
		return false
	}
	w.intake.nextPart++
	return true
}

// resumeFromJournal looks for an upload of this source to this key that a dead process left in
// the journal and continues it. landed is non-nil when that upload's Complete had already landed
// the exact object: nothing is left to send. Errors are store or journal failures.
func (w *Writer) resumeFromJournal() (landed *Result, err error) {
	if !w.journalOn() || w.intake.section == nil || w.cfg.sizeHint <= w.plan.Threshold {
		return nil, nil
	}
	err = journalDirReady(w.cfg.journalDir, true) // a first write finds an empty journal, not an error
	recs := []journal.Record(nil)
	if err == nil {
		recs, _, err = w.cfg.journal.List()
	}
	if err != nil {
		w.log.Warn("journal not readable: starting a new upload", zap.Error(err))
		return nil, nil
	}
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		r := recs[i]
		if r.Creating || r.Endpoint != w.cfg.journalEndpoint || r.Bucket != w.bucket || r.Key != w.key || r.PartSize != w.plan.PartSize ||
			r.SourceSize != w.cfg.sizeHint || r.ChecksumAlgorithm != string(w.caps.local) ||
			// An upload created with other encryption (or another SSE-C key) cannot be finished
			// as this write: its parts are encrypted as asked then.
			r.SSE != string(w.cfg.sse.Type) || r.SSECustomerKeyMD5 != w.cfg.customerKey().MD5() {
			continue
		}
		if why := w.facts.lacking(optListParts); why != "" {
			w.verifier.optional.skipped("resuming journaled upload "+r.UploadID, optListParts, why, "a new upload is started and the record is kept for Recover")
			return nil, nil
		}
		rec, cerr := w.cfg.journal.Claim(r.ID)
		if cerr != nil {
			continue // a live writer owns it, or it just went away
		}
		res, resumed, rerr := w.resumeRecord(rec)
		switch {
		case rerr != nil && store.Unsupported(rerr):
			// The parts the store holds cannot be listed, so nothing can be reused; the record
			// (and its upload) stays for Recover rather than being forgotten.
			_ = w.cfg.journal.Release(rec.ID)
			w.verifier.optional.skipped("resuming journaled upload "+rec.UploadID, optListParts, w.verifier.optional.lacksOp(optListParts, rerr),
				"a new upload is started and the record is kept for Recover")
			return nil, nil
		case rerr != nil:
			_ = w.cfg.journal.Release(rec.ID)
			return nil, w.fail(rerr)
		case res != nil:
			_ = w.cfg.journal.Remove(rec.ID)
			return res, nil
		case resumed:
			return nil, nil
		}
		// Nothing to resume from that record: it is gone with its upload.
		_ = w.cfg.journal.Remove(rec.ID)
	}
	return nil, nil
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

// resumeRecord continues the claimed record's upload. It returns a Result when the object had
// landed, resumed=true when the writer now continues the upload, neither when the upload is gone.
func (w *Writer) resumeRecord(rec journal.Record) (res *Result, resumed bool, err error) {
	log := w.log.With(zap.String("upload_id", rec.UploadID))
	var listed []store.Part
	gone := false
	lerr := w.req.do("ListParts", 0, func(ctx context.Context, _ int) error {
		out, err := w.st.ListParts(ctx, &store.ListPartsInput{Bucket: w.bucket, Key: w.key, UploadID: rec.UploadID})
		if isNoSuchUpload(err) {
			gone = true
			return nil
		}
		if err != nil {
			return err
		}
		listed = out.Parts
		return nil
	})
	if lerr != nil {
		return nil, false, lerr
	}
	if gone {
		// The upload is gone: completed (did it land this source?) or aborted.
		if rec.Object != nil {
			if res, err := w.landedFromRecord(rec); res != nil || err != nil {
				return res, false, err
			}
		}
		log.Info("journaled upload is gone: starting a new one")
		return nil, false, nil
	}
	// A store may list a re-sent part once per attempt: the entry with the recorded ETag is the
	// attempt the record kept (the checks below still decide whether it is reused).
	byNumber := make(map[int32]store.Part, len(listed))
	for _, p := range listed {
		if _, seen := byNumber[p.PartNumber]; !seen || trimQuotes(p.ETag) == recordedETag(rec, p.PartNumber) {
			byNumber[p.PartNumber] = p
		}
	}
	reused := map[int32]bool{}
	sizes := map[int32]int64{}
	parts := map[int32]partDone{}
	var reusedBytes int64
	planned := (w.cfg.sizeHint + w.plan.PartSize - 1) / w.plan.PartSize
	damaged := damagedParts(rec)
	for _, p := range rec.Parts {
		lp, ok := byNumber[p.Number]
		// Only a part this plan would send, at its place and of its size: a corrupt or edited
		// record must not splice in a part of another layout. Nor one the store got damaged.
		if !ok || int64(p.Number) > planned || damaged[p.Number] {
			continue
		}
		off := int64(p.Number-1) * w.plan.PartSize
		if p.Size != min(w.plan.PartSize, w.cfg.sizeHint-off) || lp.Size != p.Size || trimQuotes(lp.ETag) != trimQuotes(p.ETag) {
			continue
		}
		if got := lp.Checksums.Get(store.ChecksumAlgorithm(rec.ChecksumAlgorithm)); got != "" && got != p.Checksum {
			continue
		}
		// The source must still hold these bytes: recompute, compare with the record.
		section := w.intake.sectionPart(off, p.Size)
		_, src, perr := w.parts.prepareBody(p.Number, section, false)
		if perr == nil && p.MD5 != "" && !src.hasMD5 {
			perr = w.parts.partMD5(p.Number, section, &src) // the record holds one (caps.md5Late): compare it too
		}
		if perr != nil {
			return nil, false, perr
		}
		switch {
		case p.Checksum == "" && p.MD5 == "":
			continue // nothing to compare the source with: send it again
		case p.Checksum != "" && src.sum != p.Checksum:
			continue // the source changed there
		case p.MD5 != "" && (!src.hasMD5 || hex.EncodeToString(src.md5[:]) != p.MD5):
			continue
		}
		src.etag = p.ETag
		parts[p.Number] = src
		reused[p.Number], sizes[p.Number] = true, p.Size
		reusedBytes += p.Size
	}
	w.mu.Lock()
	w.session.upload.adopt(rec.UploadID)
	w.session.jr.id, w.session.jr.held = rec.ID, true
	w.session.jr.reused, w.session.jr.source = reused, sizes
	for n, p := range parts {
		w.session.parts[n] = p
	}
	w.mu.Unlock()
	w.tally.bytesDone.Add(reusedBytes)
	log.Info("resuming a journaled upload", zap.Int("parts_reused", len(reused)), zap.Int64("bytes_reused", reusedBytes),
		zap.Int("parts_recorded", len(rec.Parts)), zap.Int("parts_listed", len(listed)))
	return nil, true, nil
}

// landedFromRecord checks whether the record's intended object is at the key and is this
// source: the store's answer must match the record, and the record must match the source.
func (w *Writer) landedFromRecord(rec journal.Record) (*Result, error) {
	want := expectedOf(*rec.Object)
	var head *store.HeadObjectOutput
	herr := w.req.do("HeadObject", 0, func(ctx context.Context, _ int) error {
		h, err := w.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: w.bucket, Key: w.key, ChecksumMode: true, SSECustomerKey: w.cfg.customerKey()})
		head = h
		return err
	})
	if herr != nil {
		var re *store.ResponseError
		if stderrors.As(herr, &re) && re.StatusCode == 404 {
			return nil, nil
		}
		return nil, herr
	}
	method, verr := integrity.CheckHead(want, head)
	sameObject := verr == nil && method.Strong()
	if !sameObject || want.Checksum.Algorithm != w.caps.local || !integrity.IsCRC(w.caps.local) {
		return nil, nil // not the recorded object, or nothing to compare the source with
	}
	// Combine the source's part checksums: the object must be this file, not just the record's.
	crc, _ := integrity.NewCRC(w.caps.local)
	n := int32(0)
	for off := int64(0); off < w.cfg.sizeHint; off += w.plan.PartSize {
		n++
		size := min(w.plan.PartSize, w.cfg.sizeHint-off)
		_, src, perr := w.parts.prepareBody(n, w.intake.sectionPart(off, size), false)
		if perr != nil {
			return nil, perr
		}
		crc.Append(src.crc, size)
	}
	if crc.String() != want.Checksum.Value {
		return nil, nil
	}
	w.tally.bytesDone.Add(w.cfg.sizeHint)
	w.log.Info("journaled upload had landed before the crash", zap.String("upload_id", rec.UploadID))
	return &Result{
		Bucket: w.bucket, Key: w.key, Size: want.Size, ETag: head.ETag, VersionID: head.VersionID, Checksum: want.Checksum,
		Multipart: true, Parts: int(n), PartSize: w.plan.PartSize, UploadID: rec.UploadID,
		Verified: method, VerifiedStrong: true, VerifiedBy: "HeadObject", AlreadyExisted: true, ResumedParts: int(n), ResumedBytes: want.Size,
	}, nil
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

// closeLanded ends a write whose journaled upload had already landed this source.
func (w *Writer) closeLanded(res *Result) (*Result, error) {
	w.mu.Lock()
	w.outcome.closed = true
	w.mu.Unlock()
	_ = w.finish(res)
	w.cancel()
	return w.Result(), nil
}

// withResumed adds to a landed Result what was reused from the journal.
func (w *Writer) withResumed(res *Result) *Result {
	if res == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, size := range w.session.jr.source {
		res.ResumedParts++
		res.ResumedBytes += size
	}
	return res
}
