package writer

import (
	"context"
	stderrors "errors"
	"io"
	"sync/atomic"
	"time"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/progress"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"go.uber.org/zap"
)

type partDone struct {
	number int32
	size   int64
	etag   string
	crc    uint64
	sum    string
	md5    [16]byte
	hasMD5 bool
	// echoed: its receipt echoed the checksum sent, so on a store known to check it the receipt
	// is the store's checked record of the part (listsBeforeComplete).
	echoed bool
}

// partBody is one part's bytes: a pooled buffer the writer filled, or a section of the caller's
// io.ReaderAt source, sent with no copy. Either way it holds one of the writer's slots, which
// releaseBody gives back, so one dispatch path serves both sources.
type partBody struct {
	buf     []byte            // a part buffer from the budget; nil for a section
	section *io.SectionReader // a section of the ReaderAt source; nil for a buffer
	crc     uint64            // buf's CRC, computed as it was filled (fillCRC)
	fence   *bodyFence        // guards the bytes against requests that outlive the part (dispatch sets it)
	part    int32             // its part number, once dispatched (for the log)
	early   *earlyMD5         // buf's MD5, being taken beside its request; nil when none is
	hand    *handoff          // whether a section gave its slot away before its answer (handoff.go)
}

func (b partBody) size() int64 {
	if b.section != nil {
		return b.section.Size()
	}
	return int64(len(b.buf))
}

// releaseBody gives back what b holds: the buffer (with its slot) to the budget, or the slot.
// A buffer a finished request still reads is not recycled (releaseLent); a read of the caller's
// source still under way is waited for, briefly, since the caller may reuse it once Upload returns.
func (w *Writer) releaseBody(b partBody) {
	if b.section != nil {
		if b.fence != nil && !b.fence.closeAndWait(lateReadWait) {
			w.log.Warn("a request that has returned still reads the source", zap.Int32("part", b.part), zap.Int64("size", b.section.Size()),
				zap.String("upload_id", w.session.upload.current()), zap.Duration("waited", lateReadWait))
		}
		w.slotBack(b.hand)
		return
	}
	w.releaseLent(b.fence, b.part, b.buf)
}

// dispatch sends body as the next part in the background, starting the multipart upload first
// if needed. What body holds is released when the part is done, or at once when it cannot go.
func (w *Writer) dispatch(body partBody, final bool) error {
	if err := w.ensureUpload(); err != nil {
		w.releaseBody(body)
		return err
	}
	w.intake.nextPart++
	n := w.intake.nextPart
	if err := w.plan.CheckPart(int(n), body.size(), final); err != nil {
		w.releaseBody(body)
		return w.fail(classifyRule("UploadPart", w.bucket, w.key, err))
	}
	body.part = n
	if body.buf != nil || (body.section != nil && !w.intake.sectionInFile) {
		body.fence = new(bodyFence)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.releaseBody(body)
		defer w.recoverTo("UploadPart", n)
		w.uploadPart(n, body)
	}()
	return nil
}

// dispatchSection sends [off, off+size) of the ReaderAt source as the next part once a slot is
// free: parts in flight stay within the concurrency, as with buffers.
func (w *Writer) dispatchSection(off, size int64, final bool) error {
	select {
	case w.intake.slots <- struct{}{}:
	case <-w.ctx.Done():
		return w.fail(w.errs.canceled("UploadPart", w.ctx.Err()))
	}
	body := w.sectionPart(off, size)
	body.hand = w.newHandoff()
	return w.dispatch(body, final)
}

// sectionPart is [off, off+size) of the object in the ReaderAt source.
func (w *Writer) sectionPart(off, size int64) partBody {
	return partBody{section: io.NewSectionReader(w.intake.section, w.intake.sectionBase+off, size)}
}

// uploadPart sends one part with retries. The body of every attempt is a fresh reader over the
// same held bytes. A buffer's first attempt sends the CRC taken as the bytes arrived; every retry
// recomputes it from the held bytes and must agree, so a retry can never carry a stale checksum
// and bytes changed in memory since they were written are caught.
func (w *Writer) uploadPart(n int32, part partBody) {
	size := part.size()
	uploadID := w.session.upload.current()
	w.req.events.emit(Event{Type: EventPartStarted, UploadID: uploadID, PartNumber: n, Size: size})
	var done partDone
	first := true
	err := w.req.doSized("UploadPart", n, size, func(ctx context.Context, attempt int) error {
		body, rec, err := w.prepareBody(n, part, first)
		if err != nil {
			return err
		}
		if !first && rec.crc != done.crc {
			return w.errs.errorf(sperrors.Internal, "UploadPart", nil, "part %d bytes changed between attempts (checksum %s then %s)", n, done.sum, rec.sum)
		}
		if first {
			done = rec
			first = false
		}
		in := &store.UploadPartInput{
			Bucket: w.bucket, Key: w.key, UploadID: uploadID, PartNumber: n,
			Body: body, ContentLength: size, SSECustomerKey: w.cfg.customerKey(),
		}
		if w.caps.alg != store.ChecksumNone {
			in.Checksum = store.Checksum{Algorithm: w.caps.alg, Value: rec.sum}
		}
		if w.caps.sendMD5 && rec.hasMD5 {
			in.ContentMD5 = md5Header(rec.md5)
		}
		w.tally.bytesSent.Add(size)
		sendCtx, sent := w.bodySent(ctx, n, part)
		sendCtx, lostAfterSent := sentWhole(sendCtx)
		out, err := w.st.UploadPart(sendCtx, in)
		sent()
		if err != nil {
			if lostAfterSent(err) {
				w.session.upload.partWentUnanswered()
			}
			if attempt > 1 && ctx.Err() == nil && unanswered(err) {
				// Unanswered again: an outage, or a store that drops the connection on a part
				// of an upload it no longer has; only the latter ends the part's retries.
				if gone := w.uploadGone(); gone != nil {
					return gone
				}
			}
			return err
		}
		if err := w.lateMD5(n, part, &rec, in.Checksum, out.Checksums); err != nil {
			return err
		}
		receipt := integrity.Receipt{PartNumber: n, Size: size, Checksum: in.Checksum, MD5: rec.md5, HasMD5: rec.hasMD5}
		// A store whose multipart ETags are MD5-of-part-MD5s makes part ETags that are MD5s.
		if _, err := integrity.CheckReceipt(receipt, out.ETag, out.Checksums, w.caps.etagTrusted(false) || w.caps.etagTrusted(true)); err != nil {
			return w.errs.integrity("UploadPart", n, err)
		}
		done.etag, done.md5, done.hasMD5 = out.ETag, rec.md5, rec.hasMD5
		done.echoed = in.Checksum.Value != "" && out.Checksums.Get(in.Checksum.Algorithm) == in.Checksum.Value
		return nil
	})
	if err == nil && w.decider().md5Spared(done.hasMD5) {
		w.verifier.md5Skipped.Store(true)
	}
	if err != nil {
		_ = w.fail(w.partFailed(n, err))
		return
	}
	// Journal hook: the verified part's receipt, for resume and recovery.
	if err := w.session.journal.part(done); err != nil {
		_ = w.fail(err)
		return
	}
	w.mu.Lock()
	w.session.parts[n] = done
	w.mu.Unlock()
	w.paced(n, size, part.hand)
	total := w.tally.bytesDone.Add(size)
	w.req.events.emit(Event{Type: EventPartDone, UploadID: uploadID, PartNumber: n, Size: size, BytesDone: total})
}

// partFailed is the write's error for part n, whose request failed with err after its retries:
// the vanished upload's when the store answered NoSuchUpload, or when the part's requests ended
// without an answer (a reset, a timeout) and ListParts, asked once, finds the upload gone. A store
// may close the connection on a request for an upload it no longer has before the client has read
// its answer (Versity answers before it reads the body), so the part itself never hears why.
func (w *Writer) partFailed(n int32, err error) error {
	if isNoSuchUpload(err) {
		return w.errs.uploadVanished("UploadPart", n, err, "")
	}
	if e := asError(err); e == nil || e.Kind != sperrors.Transient || !unanswered(err) {
		return err
	}
	gone := w.uploadGone()
	if gone == nil {
		return err
	}
	w.log.Warn("a part's requests ended without an answer and ListParts found the upload gone",
		zap.Int32("part", n), zap.String("upload_id", w.session.upload.current()), zap.Error(err))
	return w.errs.uploadVanished("UploadPart", n, gone, "")
}

// sentWhole returns ctx with a hook that notes the request written out whole, and a function
// telling whether the call's error then came without an answer from the store (no HTTP status):
// the store took the request and may have carried it out.
func sentWhole(ctx context.Context) (context.Context, func(err error) bool) {
	var written atomic.Bool
	ctx = progress.OnWritten(ctx, func(err error) { written.Store(err == nil) })
	return ctx, func(err error) bool {
		var re *store.ResponseError
		return err != nil && written.Load() && (!stderrors.As(err, &re) || re.StatusCode == 0)
	}
}

// writeEnded reports whether the write's context ended (it failed, or the caller stopped it).
func (w *Writer) writeEnded() bool { return w.ctx.Err() != nil }

// unanswered reports a request whose connection ended without the store's answer (reset,
// closed); not one cut for a stall or a timeout, which the stall window already bounds and
// whose store a ListParts would wait on as long.
func unanswered(err error) bool {
	var re *store.ResponseError
	if stderrors.As(err, &re) && re.StatusCode != 0 {
		return false
	}
	return !sperrors.IsTimeout(err) && !stderrors.Is(err, context.Canceled)
}

// uploadGone asks ListParts, once (under the stall window), whether the write's upload is still
// there, and returns the store's NoSuchUpload answer when it is gone; nil when it is there, or
// when the store cannot say (it lacks ListParts, or does not answer either).
func (w *Writer) uploadGone() error {
	if w.writeEnded() || w.facts.lacking(optListParts) != "" {
		return nil
	}
	id := w.session.upload.current()
	stats, err := w.cfg.policy.With(sendOnce).Do(w.ctx, retry.Op{Name: "ListParts", Bucket: w.bucket, Key: w.key, UploadID: id},
		func(ctx context.Context, _ int) error {
			_, err := w.st.ListParts(ctx, &store.ListPartsInput{Bucket: w.bucket, Key: w.key, UploadID: id})
			return err
		})
	w.tally.addStats(stats)
	if isNoSuchUpload(err) {
		return err
	}
	return nil
}

// lateMD5 takes the body's MD5 after its receipt, while its bytes are still held, when the write
// left MD5s for later (caps.md5Late, or a single PUT whose offered header was refused after its
// MD5 was skipped). The MD5 is skipped only when the receipt echoes the checksum sent and the
// endpoint is known to check that checksum (the probe's answer, waited for while one is out:
// probe.go): then the store took the bytes as sent. An echo alone never decides it: a store
// that checks nothing may parrot the header, and the part's ETag, against its MD5, is then what
// catches a part damaged on the way before Complete. A receipt without the echo makes the
// endpoint's receipts useless for this: later parts and writes (and, through the endpoint cache,
// later processes) take their MD5s without asking again.
func (w *Writer) lateMD5(n int32, part partBody, rec *partDone, sent store.Checksum, echoed store.Checksums) error {
	d := w.decider()
	switch d.afterReceipt(rec.hasMD5, sent) {
	case md5Held:
		return nil
	case md5AskEcho:
		if part.early == nil {
			// Whether the store checks is the probe's answer. A single PUT whose MD5 is being
			// taken beside it has it anyway: it does not wait for a probe out meanwhile.
			w.facts.awaitAnswer(w.ctx)
		}
		switch d.afterEcho(sent, echoed.Get(sent.Algorithm), w.facts.checking()) {
		case echoTrusted:
			return nil
		case echoMissing:
			w.facts.update(func(f *endpointFacts) { f.checksParts = no })
		case echoUntrusted:
		}
	case md5Take:
	}
	return w.partMD5(n, part, rec)
}

// partMD5 sets rec's MD5 from the part's bytes: its buffer, or its section of the source re-read.
func (w *Writer) partMD5(n int32, part partBody, rec *partDone) error {
	if part.early != nil {
		rec.md5, rec.hasMD5 = part.early.wait(), true
		w.tally.md5Bytes.Add(int64(len(part.buf)))
		return nil
	}
	if part.section == nil {
		_, rec.md5 = integrity.MD5Base64(part.buf)
		rec.hasMD5 = true
		w.tally.md5Bytes.Add(int64(len(part.buf)))
		return nil
	}
	h := newMD5()
	section := io.NewSectionReader(part.section.Outer())
	chunkBuf := sectionChunks.Get()
	defer sectionChunks.Put(chunkBuf)
	m, err := io.CopyBuffer(h, io.LimitReader(section, part.size()), *chunkBuf)
	if err != nil {
		return w.errs.sourceError("UploadPart", n, err)
	}
	if m != part.size() {
		return w.errs.errorf(sperrors.Permanent, "UploadPart", nil, "source ended at %d of part %d's %d bytes: it is shorter than its declared size %d", m, n, part.size(), w.cfg.sizeHint)
	}
	copy(rec.md5[:], h.Sum(nil))
	rec.hasMD5 = true
	w.tally.md5Bytes.Add(m)
	return nil
}

// sums names what a pass over a part's bytes takes: the CRC of algorithm local (none for ""),
// and the MD5. A pass ahead of the create is given them (the create may still change the caps),
// and stops early, with errAheadStopped, once the write has failed.
type sums struct {
	local store.ChecksumAlgorithm
	md5   bool
	ahead bool
}

var errAheadStopped = stderrors.New("the write failed before its part was sent")

// sumSection reads section once and returns its part's record with the sums s asks for.
func (w *Writer) sumSection(n int32, section *io.SectionReader, s sums) (partDone, error) {
	size := section.Size()
	rec := partDone{number: n, size: size}
	crc := integrity.ChecksumOf(s.local, nil)
	var md5h md5Hasher
	if s.md5 {
		md5h = newMD5()
	}
	chunkBuf := sectionChunks.Get()
	defer sectionChunks.Put(chunkBuf)
	chunk := *chunkBuf
	var read int64
	for read < size {
		if s.ahead && (w.firstErr() != nil || w.ctx.Err() != nil) {
			return rec, errAheadStopped
		}
		m, err := section.Read(chunk)
		if m > 0 {
			if s.local != store.ChecksumNone {
				crc = integrity.Update(s.local, crc, chunk[:m])
			}
			if md5h != nil {
				_, _ = md5h.Write(chunk[:m])
			}
			read += int64(m)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return rec, w.errs.sourceError("UploadPart", n, err)
		}
	}
	if read != size {
		return rec, w.errs.errorf(sperrors.Permanent, "UploadPart", nil, "source ended at %d of part %d's %d bytes: it is shorter than its declared size %d", read, n, size, w.cfg.sizeHint)
	}
	if s.local != store.ChecksumNone {
		rec.crc, rec.sum = crc, integrity.EncodeCRCValue(s.local, crc)
	}
	if md5h != nil {
		copy(rec.md5[:], md5h.Sum(nil))
		rec.hasMD5 = true
		w.tally.md5Bytes.Add(read)
	}
	return rec, nil
}

// prepareBody returns a fresh reader over the part and its checksums. fillCRC takes a buffer's
// CRC from when it was filled instead of another pass over the bytes (which, by now, have left
// the CPU's caches).
func (w *Writer) prepareBody(n int32, part partBody, fillCRC bool) (io.ReadSeeker, partDone, error) {
	size := part.size()
	rec := partDone{number: n, size: size}
	if part.section == nil {
		if fillCRC {
			w.checksumFilled(&rec, part.buf, part.crc)
		} else {
			w.checksum(&rec, part.buf)
		}
		return newFencedReader(part.buf, part.fence), rec, nil
	}
	// A ReaderAt source is read twice (checksum, then send) instead of being copied; the send of
	// a file's section goes by sendfile where the connection allows (bufpool.WriteN). Each
	// attempt gets its own reader: an earlier attempt's request may still be reading its own.
	section := io.NewSectionReader(part.section.Outer())
	ahead, ok := partDone{}, false
	if fillCRC {
		ahead, ok = w.takeAhead(section) // hashed while the create was on the wire (ahead.go)
	}
	if ok {
		ahead.number = n
		rec = ahead
	} else {
		var err error
		if rec, err = w.sumSection(n, section, sums{local: w.caps.local, md5: w.caps.md5}); err != nil {
			return nil, rec, err
		}
	}
	if _, err := section.Seek(0, io.SeekStart); err != nil {
		return nil, rec, err
	}
	if part.fence != nil {
		return &fencedSection{s: section, f: part.fence}, rec, nil
	}
	return section, rec, nil
}

// lateReadWait bounds how long a part's end waits for a read of the caller's source that a
// returned request still has under way (one ReadAt of at most 32 KiB: fencedSection).
const lateReadWait = 5 * time.Second

// sectionChunks are the read buffers prepareBody checksums a ReaderAt part through, shared by
// all writers so a part costs no allocation.
var sectionChunks = bufpool.New(256 << 10)

func (w *Writer) checksum(rec *partDone, data []byte) {
	crc := uint64(0)
	if w.caps.local != store.ChecksumNone {
		crc = integrity.ChecksumOf(w.caps.local, data)
	}
	w.checksumFilled(rec, data, crc)
}

// checksumFilled is checksum with data's CRC already known (taken as the data arrived).
func (w *Writer) checksumFilled(rec *partDone, data []byte, crc uint64) {
	if w.caps.local != store.ChecksumNone {
		rec.crc = crc
		rec.sum = integrity.EncodeCRCValue(w.caps.local, rec.crc)
	}
	if w.caps.md5 {
		_, rec.md5 = integrity.MD5Base64(data)
		rec.hasMD5 = true
		w.tally.md5Bytes.Add(int64(len(data)))
	}
}
