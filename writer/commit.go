package writer

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"sort"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// commit finishes the write; any error it returns is cleaned up by Close.
func (w *Writer) commit() error {
	if err := w.firstErr(); err != nil {
		w.wg.Wait()
		return err
	}
	if err := w.ctx.Err(); err != nil {
		w.wg.Wait()
		return w.fail(w.errs.canceled("Close", err))
	}
	if w.cfg.sizeHint >= 0 && w.intake.size != w.cfg.sizeHint {
		w.wg.Wait()
		return w.fail(w.errs.errorf(sperrors.Permanent, "Close", nil, "source ended at %d bytes, shorter than the declared size %d", w.intake.size, w.cfg.sizeHint))
	}
	if atClose(w.intake.section != nil, w.session.upload.current() != "", w.intake.size, w.plan.Threshold) == closeSinglePut {
		return w.putSingle()
	}
	// The held data is the tail: send it as the final part.
	if w.intake.section == nil {
		switch closingTail(w.intake.buf != nil, w.intake.fill, w.intake.pending != nil) {
		case tailPendingThenFill, tailFillFinal:
			if w.intake.pending != nil {
				full := w.intake.pending
				w.intake.pending = nil // dispatch owns it now, even on error
				if err := w.dispatch(partBody{buf: full, crc: w.intake.pendingCRC}, false); err != nil {
					return err
				}
			}
			tail := w.intake.buf[:w.intake.fill]
			w.intake.buf = nil
			if err := w.dispatch(partBody{buf: tail, crc: w.intake.fillCRC}, true); err != nil {
				return err
			}
		case tailPendingFinal:
			if w.intake.buf != nil {
				w.intake.release(w.intake.buf)
				w.intake.buf = nil
			}
			full := w.intake.pending
			w.intake.pending = nil
			if err := w.dispatch(partBody{buf: full, crc: w.intake.pendingCRC}, true); err != nil {
				return err
			}
		case tailDropEmpty:
			w.intake.release(w.intake.buf)
			w.intake.buf = nil
		case tailNone:
		}
	}
	w.wg.Wait()
	if err := w.firstErr(); err != nil {
		return err
	}
	return w.complete(&committer{st: w.st, req: w.req, bucket: w.bucket, key: w.key, local: w.caps.local, log: w.log,
		answerLost: &w.session.commitAnswerLost})
}

// single-PUT path: the object is in one buffer, or (Upload of a small ReaderAt) in the source.
func (w *Writer) putSingle() error {
	var rec partDone
	var early *earlyMD5
	checking := w.facts.checking()
	fence := new(bodyFence)
	body := w.intake.singleBody()
	if body.section != nil {
		if !w.intake.singleInFile { // a file's bytes are the kernel's to read: sent bare, by sendfile
			body.fence = fence
		}
		defer w.parts.endReads(body, "") // a single PUT has no upload
		// The source is read once before the request, for the checksum header, as a section
		// part's is (prepareBody), with the MD5 in the same read when the header carries it too.
		// The request's own read of the source is checked against them (by the store's checksum
		// check, or the receipt's ETag against the MD5).
		var err error
		if rec, err = w.parts.sumSection(0, io.NewSectionReader(body.section.Outer()), sums{
			local: w.caps.local, md5: w.caps.md5,
		}); err != nil {
			return w.fail(err)
		}
	} else {
		body.fence = fence
		defer w.intake.releaseHeldLent(fence, "") // a single PUT has no upload
		w.parts.checksumFilled(&rec, body.buf, body.crc)
	}
	// The answer proves the bytes without their MD5 only on an endpoint known to check checksums;
	// elsewhere the MD5 is needed right after it (its ETag, or the HEAD's, is compared with it),
	// so it is taken while the bytes are on the wire (md5Beside: from the buffer, or from the
	// source read again with the CRC sent), not before the request nor after its answer. What
	// the endpoint was known to check as the PUT went decides what its answer can prove: a probe
	// that answers meanwhile (prober.startBesidePut) serves the later writes, so that this one's
	// evidence does not depend on which answer came first.
	if w.decider().md5Early(rec.hasMD5, checking) {
		early = w.parts.md5Beside(rec, body)
		body.early = early
		defer early.wait() // the bytes are read until then: before they are given back
	}
	size := body.size()
	// The bytes are held (or the source is read again) until the check is done: their MD5 is
	// taken only if the evidence needs it.
	w.verifier.lateETag = func() string {
		if !rec.hasMD5 {
			if err := w.parts.partMD5(0, body, &rec); err != nil {
				// The evidence is then what the HEAD and a read-back show without it.
				w.log.Warn("could not take the MD5 of the source again for the check", zap.Error(err))
				return ""
			}
		}
		return fmt.Sprintf("%x", rec.md5)
	}
	defer func() { w.verifier.lateETag = nil }()
	in := &store.PutObjectInput{
		Bucket: w.bucket, Key: w.key, ContentLength: size,
		ContentType: w.cfg.contentType, Metadata: w.cfg.metadata, Headers: w.cfg.headers,
		Encryption: w.cfg.sse,
	}
	guard := w.verifier.optional.guardCreate(w.cfg.rules.ConditionalPut, optCondPut)
	in.IfNoneMatch, w.verifier.createUnguarded = guard.header, guard.unguarded
	if w.caps.alg != store.ChecksumNone {
		in.Checksum = store.Checksum{Algorithm: w.caps.alg, Value: rec.sum}
	}
	if w.caps.sendMD5 {
		in.ContentMD5 = md5Header(rec.md5)
	}
	want := integrity.Expected{Size: size}
	if w.caps.local != store.ChecksumNone {
		want.Checksum = store.Checksum{Algorithm: w.caps.local, Value: rec.sum}
	}
	if rec.hasMD5 {
		want.ETag = fmt.Sprintf("%x", rec.md5)
	}
	res := &Result{Bucket: w.bucket, Key: w.key, Size: size, Checksum: want.Checksum}
	if guard.headFirst {
		if done, err := w.verifier.precheckCreateOnly(want, res); done {
			return w.conclude(res, err)
		}
	}
	var out *store.PutObjectOutput
	var damagedLeft error // why this write's own damaged create-only object could not be removed
	removeStored := func() {
		damagedLeft = nil
		if derr := w.session.upload.deleteObject(w.ctx); derr != nil {
			w.log.Error("could not delete the damaged object this PUT stored", zap.Error(derr))
			damagedLeft = derr
		}
	}
	put := func(ctx context.Context, _ int) error {
		in.Body = body.reader()
		w.tally.bytesSent.Add(size)
		sendCtx, lostAfterSent := sentWhole(ctx)
		o, err := w.st.PutObject(sendCtx, in)
		if lostAfterSent(err) {
			w.session.commitAnswerLost.Store(true) // it may have landed
			w.facts.requestTaken()                 // the HEAD that judges it rides out an outage
		}
		// A "not supported" answer to a request with both headers is taken for If-None-Match's
		// first (the conditionRefused below): the commit sent again without it tells whether the
		// offered checksum is refused too.
		conditionFirst := in.IfNoneMatch && store.Unsupported(err)
		if err != nil && w.caps.probing && headerRefused(err) && !conditionFirst {
			w.verifier.dropOfferedChecksum("PutObject", err)
			in.Checksum = store.Checksum{}
			in.Body = body.reader()
			w.tally.bytesSent.Add(size)
			o, err = w.st.PutObject(ctx, in)
		}
		if err != nil {
			if in.IfNoneMatch && store.Unsupported(err) {
				return &conditionRefused{err: err}
			}
			return err
		}
		if err := w.parts.lateMD5(0, body, &rec, in.Checksum, o.Checksums, w.decider()); err != nil {
			// The source could not be read again for the MD5, or changed since it was sent: the
			// object this request stored is unproven, and removed as a damaged one is.
			removeStored()
			return err
		}
		if !rec.hasMD5 && early != nil {
			// Taken for the answer's ETag (md5Early): it checks the receipt too.
			sum, err := early.result()
			if err != nil {
				removeStored() // the source changed (or failed) since it was sent: unproven
				return err
			}
			rec.md5, rec.hasMD5 = sum, true
		}
		if !rec.hasMD5 && checking == yes && (in.Checksum.IsZero() || o.Checksums.Get(in.Checksum.Algorithm) == "") {
			// The MD5 was left out for an echo this answer does not carry: taken now, from the
			// bytes still held, it checks the receipt's ETag and may stand for the HEAD.
			w.verifier.lateETag()
		}
		receipt := integrity.Receipt{Size: size, Checksum: in.Checksum, MD5: rec.md5, HasMD5: rec.hasMD5}
		if _, err := integrity.CheckReceipt(receipt, o.ETag, o.Checksums, w.verifier.putReceiptTrusted()); err != nil {
			// The store answered 200 for bytes other than those sent, so the object at the key is
			// this request's damaged copy: remove it now. A retry would replace it, but one that
			// then fails would leave it there under a Transient error; and a create-only retry
			// would meet it as a 412.
			removeStored()
			return w.errs.integrity("PutObject", 0, err)
		}
		out = o
		return nil
	}
	if !w.caps.probing {
		// Beside the PUT: the store is known to take the checksum header. One only offered
		// waits for the PUT's answer, as the multipart probe waits for the create's, so that a
		// store refusing it is sent it once.
		w.session.probe.startBesidePut(w.ctx, in, w.decider().probesBesidePut(w.facts.checking()), w.caps.fullObject)
	}
	err := w.req.doSized("PutObject", 0, size, put)
	if refused := conditionRefusal(err); refused != nil && w.decider().afterCommit(err, false) == commitWithoutCondition {
		// The store stored nothing; write again without the header, the key checked by a HEAD.
		w.verifier.optional.conditionUnsupported(optCondPut, refused.err)
		in.IfNoneMatch, w.verifier.createUnguarded = false, true
		if done, err := w.verifier.precheckCreateOnly(want, res); done {
			return w.conclude(res, err)
		}
		err = w.req.doSized("PutObject", 0, size, put)
	}
	if rec.hasMD5 && want.ETag == "" {
		want.ETag = fmt.Sprintf("%x", rec.md5)
	}
	switch w.decider().afterCommit(err, damagedLeft != nil) {
	case commitLanded:
	case commitOwnDamagedLeft:
		// The retry met this write's own damaged object, not another writer's.
		e := w.errs.integrity("PutObject", 0, err)
		e.Message = "the store kept a damaged copy of the body (the receipt did not match) and it could not be deleted: " + damagedLeft.Error()
		e.ObjectLeft = true
		return w.fail(e)
	case commitKeyTaken:
		return w.conclude(res, w.verifier.landedAlready(err, want, res))
	default:
		if damagedLeft != nil {
			err = annotated(err, func(e *sperrors.Error) {
				e.ObjectLeft = true
				e.Message = joinMessage(e.Message, "an attempt left a damaged copy of the body at the key (the receipt did not match) and it could not be deleted: "+damagedLeft.Error())
			})
		} else if e := asError(err); w.session.commitAnswerLost.Load() && e != nil && (e.Kind == sperrors.Transient || e.Kind == sperrors.Throttled) {
			return w.afterLostPut(err, want, res)
		}
		return w.fail(err)
	}
	res.ETag, res.VersionID = out.ETag, out.VersionID
	if w.caps.probing {
		w.session.probe.startBesidePut(w.ctx, in, w.decider().probesBesidePut(w.facts.checking()), w.caps.fullObject) // the header was taken (a refusal dropped it from in and caps)
	}
	if out.ETag == "" {
		w.outcome.notes.add("the store's PutObject answer carried no ETag; the HEAD decided")
	}
	// An unguarded create-only commit keeps its HEAD whatever its answer proves: only the HEAD can
	// see another writer's object committed over or right after ours (othersAtKey).
	if w.verifier.createUnguarded {
		return w.conclude(res, w.verifier.verifyLanded(want, res))
	}
	d := w.decider()
	if d.putProves(out.Checksums, out.ETag, in.Checksum, want.Checksum, checking) {
		return w.conclude(res, w.verifier.provenByAnswer("PutObject", integrity.MethodFor(want.Checksum.Algorithm), want, res))
	}
	if d.etagProves(out.ETag, rec.md5, rec.hasMD5, in.ContentMD5 != "", w.cfg.rules.ContentMD5) {
		w.facts.update(func(f *endpointFacts) { f.putAnswerMD5 = true })
		return w.conclude(res, w.verifier.provenByAnswer("PutObject", verify.MethodETagMD5, want, res))
	}
	return w.conclude(res, w.verifier.verifyLanded(want, res))
}

// singleBody is what the single PUT sends: the section of a ReaderAt source (Upload), else the
// held buffer, with its CRC taken as it was filled.
func (in *intake) singleBody() partBody {
	if in.single != nil {
		return partBody{section: in.single}
	}
	if in.pending != nil {
		return partBody{buf: in.pending, crc: in.pendingCRC}
	}
	if in.buf != nil {
		return partBody{buf: in.buf[:in.fill], crc: in.fillCRC}
	}
	return partBody{}
}

// reader is one request's reader over b: a fresh one for every attempt, since an earlier
// attempt's request may still be reading its own.
func (b partBody) reader() io.ReadSeeker {
	if b.section == nil {
		return newFencedReader(b.buf, b.fence)
	}
	return b.fenced(io.NewSectionReader(b.section.Outer()))
}

// fenced is s, a reader over b's section, guarded by b's fence; bare when b has none (a file's
// section: its bytes are the kernel's to read, not the caller's memory, and go by sendfile).
func (b partBody) fenced(s *io.SectionReader) io.ReadSeeker {
	if b.fence != nil {
		return &fencedSection{s: s, f: b.fence}
	}
	return s
}

// complete checks the layout with ListParts, commits, and verifies; c sends the commit and checks
// the layout (it keeps, across the re-checks, which parts the store listed twice).
func (w *Writer) complete(c *committer) error {
	uploadID := w.session.upload.current()
	w.mu.Lock()
	parts := make([]partDone, 0, len(w.session.parts))
	for _, p := range w.session.parts {
		parts = append(parts, p)
	}
	w.mu.Unlock()
	sort.Slice(parts, func(i, j int) bool { return parts[i].number < parts[j].number })
	if len(parts) != int(w.intake.nextPart) {
		return w.fail(w.errs.errorf(sperrors.Internal, "Complete", nil, "%d of %d parts recorded", len(parts), w.intake.nextPart))
	}

	// Before commit: the store must list exactly what was sent (when it can list parts), unless
	// every receipt already proved its part.
	var listed []store.Part
	canList := false
	var err error
	w.verifier.layout.unlisted = !w.decider().listsBeforeComplete(parts, w.facts.checking())
	if !w.verifier.layout.unlisted {
		if listed, canList, err = w.verifier.optional.listPartsForCheck(uploadID); err != nil {
			if isNoSuchUpload(err) {
				err = w.errs.uploadVanished("ListParts", 0, err, "")
			}
			return w.fail(err)
		}
	} else {
		w.log.Debug("ListParts left out: every part's receipt echoed its checksum from a store that checks it",
			zap.String("upload_id", uploadID), zap.Int("parts", len(parts)), zap.Int64("size", w.intake.size))
	}
	pc := c.commitParts(parts, w.intake.size, w.caps.alg)
	want := pc.want
	// Without a listing there is nothing to compare: the receipts were checked as parts were sent.
	if canList {
		bad, notes, err := c.checkLayout(pc, listed, uploadID)
		for _, n := range notes {
			w.outcome.notes.add(n)
		}
		switch w.decider().afterLayout(err, bad) {
		case layoutCommit:
		case layoutResend:
			if !w.resend(bad, parts) {
				return w.fail(w.errs.integrity("ListParts", 0, err))
			}
			return w.complete(c)
		default:
			return w.fail(w.errs.integrity("ListParts", 0, err))
		}
	}

	in := &store.CompleteMultipartUploadInput{
		Bucket: w.bucket, Key: w.key, UploadID: uploadID, Parts: pc.completed,
		ObjectSize: w.intake.size, SSECustomerKey: w.cfg.customerKey(),
	}
	guard := w.verifier.optional.guardCreate(w.cfg.rules.ConditionalComplete, optCondComplete)
	in.IfNoneMatch, w.verifier.createUnguarded = guard.header, guard.unguarded
	if w.caps.alg != store.ChecksumNone {
		in.ChecksumType = store.ChecksumTypeComposite
		if w.caps.fullObject {
			in.FullObjectChecksum = want.Checksum
			in.ChecksumType = store.ChecksumTypeFullObject
		}
	}
	res := &Result{
		Bucket: w.bucket, Key: w.key, Size: w.intake.size, Checksum: want.Checksum, Multipart: true,
		Parts: len(parts), PartSize: w.plan.PartSize, UploadID: uploadID,
	}
	if guard.headFirst {
		if done, err := w.verifier.precheckCreateOnly(want, res); done {
			return w.conclude(res, err)
		}
	}
	// Journal hook: what Complete is about to create, so recovery can tell whether it landed.
	if err := w.session.journal.intend(want); err != nil {
		return w.fail(err)
	}
	out, err := c.complete(in)
	if refused := conditionRefusal(err); refused != nil && w.decider().afterCommit(err, false) == commitWithoutCondition {
		// Nothing was committed; complete again without the header, the key checked by a HEAD.
		w.verifier.optional.conditionUnsupported(optCondComplete, refused.err)
		in.IfNoneMatch, w.verifier.createUnguarded = false, true
		if done, err := w.verifier.precheckCreateOnly(want, res); done {
			return w.conclude(res, err)
		}
		out, err = c.complete(in)
	}
	switch w.decider().afterCommit(err, false) {
	case commitLanded:
	case commitAnswerLost:
		lost := (*lostResponse)(nil)
		stderrors.As(err, &lost)
		w.mu.Lock()
		w.session.completeLost, w.session.completeGone = lost.retried, true
		w.mu.Unlock()
		// The upload is gone: an attempt of this Complete may have committed it, whatever it
		// answered (MinIO answers a committed one NoSuchUpload).
		w.session.commitAnswerLost.Store(true)
		return w.conclude(res, w.verifier.landedAlready(lost.err, want, res))
	case commitKeyTaken:
		return w.conclude(res, w.verifier.landedAlready(err, want, res))
	case commitListFirst:
		w.log.Warn("Complete refused a part whose receipt echoed its checksum; listing the parts to find it",
			zap.String("upload_id", uploadID), zap.Error(err))
		w.verifier.layout.unlisted, w.verifier.layout.mustList = false, true
		return w.complete(c)
	default:
		if in.ChecksumType != store.ChecksumTypeNone && recreatedWithoutChecksum(err) {
			// The upload this write created is gone; the one the store holds under its id is not it.
			return w.fail(w.errs.uploadVanished("CompleteMultipartUpload", 0, err,
				"a part in flight when it was aborted re-created it without its checksum mode (Versity's posix backend does), and the store refused the Complete: nothing landed"))
		}
		if e := asError(err); e != nil && e.Kind == sperrors.Transient {
			// Its retries spent: the upload may have been aborted under it, which some stores
			// never say to a Complete (Ceph RGW answers 500 "completion already in progress").
			// Judged like a Complete answered NoSuchUpload: by what is at the key.
			if gone := w.parts.uploadGone(w.session.upload.current()); gone != nil {
				w.mu.Lock()
				w.session.completeGone = true
				w.mu.Unlock()
				return w.conclude(res, w.verifier.landedAlready(gone, want, res))
			}
		}
		return w.fail(err)
	}
	w.mu.Lock()
	w.session.upload.committed() // nothing to abort any more
	w.mu.Unlock()
	res.ETag, res.VersionID = out.ETag, out.VersionID
	if out.ETag == "" {
		w.outcome.notes.add("the store's CompleteMultipartUpload answer carried no ETag; the HEAD decided")
	}
	if !w.verifier.createUnguarded && w.decider().completeProves(out.Checksums, out.ETag, want.Checksum) {
		return w.conclude(res, w.verifier.provenByAnswer("CompleteMultipartUpload", integrity.MethodFor(want.Checksum.Algorithm), want, res))
	}
	return w.conclude(res, w.verifier.verifyLanded(want, res))
}

// afterLostPut judges a single PUT whose retries failed (err) after an attempt sent whole went
// unanswered: that attempt may have stored the object. A HEAD decides: this write's object at
// the key, proven, is a landing; nothing there, or an object that is not proven to be this
// write's (an older one is left untouched), leaves the failure as it was; a HEAD that fails
// leaves the key unchecked, and the error says the object may be there.
func (w *Writer) afterLostPut(err error, want integrity.Expected, res *Result) error {
	head, herr := w.verifier.optional.headWithChecksum()
	switch {
	case herr == nil:
		j := w.verifier.judge(want, head, false)
		if w.decider().judged(j, false) != verdictProven {
			return w.fail(annotated(err, func(e *sperrors.Error) {
				e.Message = joinMessage(e.Message, "an attempt's answer was lost, and the object at the key is not proven to be this write's: it was left untouched")
			}))
		}
		w.outcome.notes.add("an attempt of PutObject went unanswered and the retries failed; the HEAD found this write's object at the key")
		res.ETag, res.VersionID = head.ETag, head.VersionID
		return w.conclude(res, w.verifier.accept(j, res, true))
	case isNotFound(herr):
		return w.fail(err)
	default:
		return w.fail(annotated(err, func(e *sperrors.Error) {
			e.ObjectLeft = true
			e.Message = joinMessage(e.Message, "an attempt's answer was lost and the key could not be checked ("+brief(herr)+"): this write's object may be at the key, unproven")
		}))
	}
}

// resend uploads the listed parts again from the ReaderAt source (once per write: afterLayout
// decides it). It reports whether every part went out again; complete then re-checks the layout
// from scratch.
func (w *Writer) resend(bad []int32, parts []partDone) bool {
	w.verifier.layout.resent = true
	// The layout check found the store keeping something other than what was sent: count it.
	w.tally.countFailed(sperrors.Integrity, len(bad))
	sizes := make(map[int32]int64, len(parts))
	for _, p := range parts {
		sizes[p.number] = p.size
	}
	for _, n := range bad {
		size, ok := sizes[n]
		if !ok {
			return false // a part we never sent: nothing to re-send
		}
		off := int64(n-1) * w.plan.PartSize
		w.log.Warn("re-sending a part the store did not keep as sent", zap.Int32("part", n), zap.Int64("size", size),
			zap.String("upload_id", w.session.upload.current()))
		w.sendPart(n, w.intake.sectionPart(off, size), w.session.upload.current())
		if w.firstErr() != nil {
			return false
		}
	}
	return true
}
