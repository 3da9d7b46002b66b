package writer

import (
	"context"
	"encoding/hex"
	stderrors "errors"

	"go.uber.org/zap"

	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/store"
)

// resumer looks in the journal for an upload of this write's source to its key that a dead
// process left, claims its record, and judges what of it the write can take over: the parts the
// store still holds as recorded and the source still holds as sent, or the whole object, when
// that upload's Complete had landed it already.
//
// It owns nothing past one call of find: a record it claims it hands on (resumeFound.resumed),
// or releases, or removes. It does not own the upload the write continues (the Writer takes it
// into its session), the record afterwards (journalKeeper.adopt), nor the reading of the source:
// a part's sums come from sumSource, the part sender's.
type resumer struct {
	st      store.Store
	req     *requester
	journal journal.Journal
	dir     string
	// record is the record this write would begin, without an upload id (journalKeeper.record):
	// a record to resume must match it.
	record      journal.Record
	customerKey store.CustomerKey
	facts       *endpointFacts // whether the endpoint is known to lack ListParts
	log         *zap.Logger
	// sumSource sums part n of the source (size bytes from off) as a part sent now would be
	// summed: its checksum and CRC, and its MD5 too when withMD5.
	sumSource func(n int32, off, size int64, withMD5 bool) (partDone, error)
}

// resumeFound is what the resumer found in the journal: at most one of landed, resumed and
// skipped; none when a new upload is to be started.
type resumeFound struct {
	// landed: the journaled upload's Complete had landed this source; nothing is left to send.
	landed *Result
	// resumed: the journaled upload the write continues, its record claimed.
	resumed *resumedUpload
	// skipped is the id of a journaled upload not resumed because the store does not list parts;
	// its record is kept for Recover. lacking is the store's answer that said so, or nil when the
	// endpoint was known to lack ListParts already (why).
	skipped string
	lacking error
	why     string
}

// resumedUpload is a journaled upload the write continues.
type resumedUpload struct {
	record journal.ID         // its record, claimed
	parts  map[int32]partDone // the parts reused: the store holds them as recorded, the source as sent
	sizes  map[int32]int64
	bytes  int64 // their bytes, all together
}

// find looks for a journaled upload to continue, newest record first. Errors are store or source
// failures; a journal that cannot be read starts a new upload.
func (r *resumer) find() (resumeFound, error) {
	err := journalDirReady(r.dir, true) // a first write finds an empty journal, not an error
	recs := []journal.Record(nil)
	if err == nil {
		recs, _, err = r.journal.List()
	}
	if err != nil {
		r.log.Warn("journal not readable: starting a new upload", zap.Error(err))
		return resumeFound{}, nil
	}
	for i := len(recs) - 1; i >= 0; i-- { // newest first
		if !r.matches(recs[i]) {
			continue
		}
		if why := r.facts.lacking(optListParts); why != "" {
			return resumeFound{skipped: recs[i].UploadID, why: why}, nil
		}
		rec, cerr := r.journal.Claim(recs[i].ID)
		if cerr != nil {
			continue // a live writer owns it, or it just went away
		}
		found, rerr := r.resume(rec)
		switch {
		case rerr != nil && store.Unsupported(rerr):
			// The parts the store holds cannot be listed, so nothing can be reused; the record
			// (and its upload) stays for Recover rather than being forgotten.
			_ = r.journal.Release(rec.ID)
			return resumeFound{skipped: rec.UploadID, lacking: rerr}, nil
		case rerr != nil:
			_ = r.journal.Release(rec.ID)
			return resumeFound{}, rerr
		case found.landed != nil:
			_ = r.journal.Remove(rec.ID)
			return found, nil
		case found.resumed != nil:
			return found, nil
		}
		// Nothing to resume from that record: it is gone with its upload.
		_ = r.journal.Remove(rec.ID)
	}
	return resumeFound{}, nil
}

// matches reports whether rec is an upload this write could continue: of this key, laid out as
// this write lays out its source, and encrypted as it asks. An upload created with other
// encryption (or another SSE-C key) cannot be finished as this write: its parts are encrypted as
// asked then.
func (r *resumer) matches(rec journal.Record) bool {
	this := r.record
	return !rec.Creating && rec.Endpoint == this.Endpoint && rec.Bucket == this.Bucket && rec.Key == this.Key &&
		rec.PartSize == this.PartSize && rec.SourceSize == this.SourceSize && rec.ChecksumAlgorithm == this.ChecksumAlgorithm &&
		rec.SSE == this.SSE && rec.SSECustomerKeyMD5 == this.SSECustomerKeyMD5
}

// resume judges the claimed record's upload: found.landed when the object had landed,
// found.resumed when the write can continue the upload, neither when the upload is gone.
func (r *resumer) resume(rec journal.Record) (found resumeFound, err error) {
	log := r.log.With(zap.String("upload_id", rec.UploadID))
	var listed []store.Part
	gone := false
	lerr := r.req.do("ListParts", 0, func(ctx context.Context, _ int) error {
		out, err := r.st.ListParts(ctx, &store.ListPartsInput{Bucket: r.record.Bucket, Key: r.record.Key, UploadID: rec.UploadID})
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
		return resumeFound{}, lerr
	}
	if gone {
		// The upload is gone: completed (did it land this source?) or aborted.
		if rec.Object != nil {
			if res, err := r.landed(rec); res != nil || err != nil {
				return resumeFound{landed: res}, err
			}
		}
		log.Info("journaled upload is gone: starting a new one")
		return resumeFound{}, nil
	}
	// A store may list a re-sent part once per attempt: the entry with the recorded ETag is the
	// attempt the record kept (the checks below still decide whether it is reused).
	byNumber := make(map[int32]store.Part, len(listed))
	for _, p := range listed {
		if _, seen := byNumber[p.PartNumber]; !seen || trimQuotes(p.ETag) == recordedETag(rec, p.PartNumber) {
			byNumber[p.PartNumber] = p
		}
	}
	u := &resumedUpload{record: rec.ID, parts: map[int32]partDone{}, sizes: map[int32]int64{}}
	partSize, sourceSize := r.record.PartSize, r.record.SourceSize
	planned := (sourceSize + partSize - 1) / partSize
	damaged := damagedParts(rec)
	for _, p := range rec.Parts {
		lp, ok := byNumber[p.Number]
		// Only a part this plan would send, at its place and of its size: a corrupt or edited
		// record must not splice in a part of another layout. Nor one the store got damaged.
		if !ok || int64(p.Number) > planned || damaged[p.Number] {
			continue
		}
		off := int64(p.Number-1) * partSize
		if p.Size != min(partSize, sourceSize-off) || lp.Size != p.Size || trimQuotes(lp.ETag) != trimQuotes(p.ETag) {
			continue
		}
		if got := lp.Checksums.Get(store.ChecksumAlgorithm(rec.ChecksumAlgorithm)); got != "" && got != p.Checksum {
			continue
		}
		// The source must still hold these bytes: recompute, compare with the record. A record
		// that holds an MD5 (caps.md5Late) has it compared too.
		src, perr := r.sumSource(p.Number, off, p.Size, p.MD5 != "")
		if perr != nil {
			return resumeFound{}, perr
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
		u.parts[p.Number] = src
		u.sizes[p.Number] = p.Size
		u.bytes += p.Size
	}
	log.Info("resuming a journaled upload", zap.Int("parts_reused", len(u.parts)), zap.Int64("bytes_reused", u.bytes),
		zap.Int("parts_recorded", len(rec.Parts)), zap.Int("parts_listed", len(listed)))
	return resumeFound{resumed: u}, nil
}

// landed checks whether the record's intended object is at the key and is this source: the
// store's answer must match the record, and the record must match the source.
func (r *resumer) landed(rec journal.Record) (*Result, error) {
	want := expectedOf(*rec.Object)
	local := store.ChecksumAlgorithm(r.record.ChecksumAlgorithm)
	var head *store.HeadObjectOutput
	herr := r.req.do("HeadObject", 0, func(ctx context.Context, _ int) error {
		h, err := r.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: r.record.Bucket, Key: r.record.Key, ChecksumMode: true, SSECustomerKey: r.customerKey})
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
	if !sameObject || want.Checksum.Algorithm != local || !integrity.IsCRC(local) {
		return nil, nil // not the recorded object, or nothing to compare the source with
	}
	// Combine the source's part checksums: the object must be this file, not just the record's.
	partSize, sourceSize := r.record.PartSize, r.record.SourceSize
	crc, _ := integrity.NewCRC(local)
	n := int32(0)
	for off := int64(0); off < sourceSize; off += partSize {
		n++
		size := min(partSize, sourceSize-off)
		src, perr := r.sumSource(n, off, size, false)
		if perr != nil {
			return nil, perr
		}
		crc.Append(src.crc, size)
	}
	if crc.String() != want.Checksum.Value {
		return nil, nil
	}
	r.log.Info("journaled upload had landed before the crash", zap.String("upload_id", rec.UploadID))
	return &Result{
		Bucket: r.record.Bucket, Key: r.record.Key, Size: want.Size, ETag: head.ETag, VersionID: head.VersionID, Checksum: want.Checksum,
		Multipart: true, Parts: int(n), PartSize: partSize, UploadID: rec.UploadID,
		Verified: method, VerifiedStrong: true, VerifiedBy: "HeadObject", AlreadyExisted: true, CommitAnswerLost: true, ResumedParts: int(n), ResumedBytes: want.Size,
	}, nil
}

// resumeFromJournal continues an upload of this source to this key that a dead process left in
// the journal (the resumer finds it): landed is non-nil when that upload's Complete had already
// landed the exact object, so nothing is left to send. Errors are store or source failures. It
// stays on the Writer because what is found becomes the write's own: the upload id and parts
// (session), the bytes done (tally), a note when a resume was skipped (outcome).
func (w *Writer) resumeFromJournal() (landed *Result, err error) {
	if !w.session.journal.on() || w.intake.section == nil || w.cfg.sizeHint <= w.plan.Threshold {
		return nil, nil
	}
	r := resumer{
		st: w.st, req: w.req, journal: w.session.journal.journal, dir: w.session.journal.dir, record: w.session.journal.record,
		customerKey: w.cfg.customerKey(), facts: w.facts, log: w.log,
		sumSource: func(n int32, off, size int64, withMD5 bool) (partDone, error) {
			section := w.intake.sectionPart(off, size)
			_, src, err := w.parts.prepareBody(n, section, false)
			if err == nil && withMD5 && !src.hasMD5 {
				err = w.parts.partMD5(n, section, &src)
			}
			return src, err
		},
	}
	found, err := r.find()
	switch {
	case err != nil:
		return nil, w.fail(err)
	case found.skipped != "":
		why := found.why
		if found.lacking != nil {
			why = w.verifier.optional.lacksOp(optListParts, found.lacking)
		}
		w.verifier.optional.skipped("resuming journaled upload "+found.skipped, optListParts, why, "a new upload is started and the record is kept for Recover")
	case found.landed != nil:
		w.tally.bytesDone.Add(w.cfg.sizeHint)
		return found.landed, nil
	case found.resumed != nil:
		u := found.resumed
		w.mu.Lock()
		w.session.upload.adopt(u.record.UploadID)
		for n, p := range u.parts {
			w.session.record(n, p)
		}
		w.mu.Unlock()
		w.session.journal.adopt(u.record, u.sizes)
		w.tally.bytesDone.Add(u.bytes)
	}
	return nil, nil
}

// closeLanded ends a write whose journaled upload had already landed this source. On the Writer:
// it ends the write (outcome, its context).
func (w *Writer) closeLanded(res *Result) (*Result, error) {
	w.mu.Lock()
	w.outcome.closed = true
	w.mu.Unlock()
	_ = w.finish(res)
	w.cancel()
	return w.Result(), nil
}
