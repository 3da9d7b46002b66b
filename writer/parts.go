package writer

import (
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5; not for security.
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

// partSender sends a write's parts. It takes a part (its number and its bytes, a partBody value)
// and the upload's id, and returns the part's checked receipt (partDone) or a classified error.
// It owns what sending parts needs beyond one part: the sums of the first parts of a ReaderAt
// source, taken while the create is on the wire (ahead.go); the pacing of such a source's parts
// in flight and their hand-offs of slots (pacing.go, handoff.go); the part slots. It does not own the upload (it is given its id), the
// part numbers, the record of the parts acknowledged or the journal: the Writer dispatches each
// part, records its receipt and decides what a failure means for the write. Its dependencies are
// the store, the retry runner (requester), the error constructors (errorSite), the events, the
// write's counters (tally), what the write learned of the endpoint (endpointFacts), and the
// slots and buffers the intake shares with it.
type partSender struct {
	ctx         context.Context // the write's: when it ends (a failure, the caller), every part stops
	st          store.Store
	bucket, key string
	log         *zap.Logger
	req         *requester
	errs        errorSite
	events      emitter
	policy      *retry.Policy // uploadGone's ListParts, sent once
	tally       *tally
	facts       *endpointFacts
	// caps is the write's checksum choice: only the create changes it (dropOfferedChecksum),
	// before any part goes.
	caps    *checksumCaps
	slots   partSlots      // one token per part this write holds, taken by the intake for a buffer
	buffers bufferReleaser // the intake, to which a buffer part's buffer goes back
	cfg     partsConfig

	// upload hears of a part request written out in full that got no answer: the store may
	// still be finishing it after the abort, which then looks again (uploadSession).
	upload unansweredNoter

	// Its own state.
	ahead *sumsAhead // the first parts' sums, hashed while the create was on the wire (ahead.go)
	pace  *pacing    // set when a ReaderAt source's parts in flight may widen (pacing.go)
}

// unansweredNoter is told of a part request that went out whole and got no answer
// (uploadSession.partWentUnanswered).
type unansweredNoter interface{ partWentUnanswered() }

// partsConfig is what the part sender reads of the write's options.
type partsConfig struct {
	customerKey store.CustomerKey // SSE-C: every part carries it (nil for none)
	sizeHint    int64             // the declared size (a ReaderAt source's), for the errors of a short one
	concurrency int
}

// bufferReleaser takes back a part buffer lent to requests through a fence (intake.releaseLent).
type bufferReleaser interface {
	releaseLent(f *bodyFence, part int32, uploadID string, bufs ...[]byte)
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

// releaseBody gives back what b holds: the buffer (with its slot) to the intake, or the slot.
// A buffer a finished request still reads is not recycled (releaseLent); a read of the caller's
// source still under way is waited for, briefly, since the caller may reuse it once Upload returns.
func (s *partSender) releaseBody(b partBody, uploadID string) {
	if b.section != nil {
		s.endReads(b, uploadID)
		s.slotBack(b.hand)
		return
	}
	s.buffers.releaseLent(b.fence, b.part, uploadID, b.buf)
}

// endReads ends the requests' reads of b's section of the caller's source: a read still under
// way by a request that has returned is waited for, briefly, since the caller may reuse the
// source once the write returns. A file's section (no fence) is read by the kernel alone.
func (s *partSender) endReads(b partBody, uploadID string) {
	if b.fence != nil && !b.fence.closeAndWait(lateReadWait) {
		s.log.Warn("a request that has returned still reads the source", zap.Int32("part", b.part), zap.Int64("size", b.section.Size()),
			zap.String("upload_id", uploadID), zap.Duration("waited", lateReadWait))
	}
}

// dispatch sends body as the next part in the background, starting the multipart upload first
// if needed. What body holds is released when the part is done, or at once when it cannot go.
func (w *Writer) dispatch(body partBody, final bool) error {
	if err := w.ensureUpload(); err != nil {
		w.parts.releaseBody(body, w.session.upload.current())
		return err
	}
	w.intake.nextPart++
	n := w.intake.nextPart
	uploadID := w.session.upload.current()
	if err := w.plan.CheckPart(int(n), body.size(), final); err != nil {
		w.parts.releaseBody(body, uploadID)
		return w.fail(classifyRule("UploadPart", w.bucket, w.key, err))
	}
	body.part = n
	if body.buf != nil || (body.section != nil && !w.intake.sectionInFile) {
		body.fence = new(bodyFence)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.parts.releaseBody(body, uploadID)
		defer w.recoverTo("UploadPart", n)
		w.sendPart(n, body, uploadID)
	}()
	return nil
}

// dispatchSection sends [off, off+size) of the ReaderAt source as the next part once a slot is
// free: parts in flight stay within the concurrency, as with buffers.
func (w *Writer) dispatchSection(off, size int64, final bool) error {
	body, err := w.parts.takeSection(w.intake.sectionPart(off, size))
	if err != nil {
		return w.fail(err)
	}
	return w.dispatch(body, final)
}

// takeSection waits for a slot for body, a section of the ReaderAt source, and gives it its
// hand-off record; the error is Canceled when the write ended first.
func (s *partSender) takeSection(body partBody) (partBody, error) {
	select {
	case s.slots.ch <- struct{}{}:
	case <-s.ctx.Done():
		return body, s.errs.canceled("UploadPart", s.ctx.Err())
	}
	body.hand = s.newHandoff()
	return body, nil
}

// sectionPart is [off, off+size) of the object in the ReaderAt source.
func (in *intake) sectionPart(off, size int64) partBody {
	return partBody{section: io.NewSectionReader(in.section, in.sectionBase+off, size)}
}

// sendPart sends part n of upload uploadID and records its receipt; a failure is the write's.
func (w *Writer) sendPart(n int32, body partBody, uploadID string) {
	d := w.decider()
	done, err := w.parts.send(n, body, uploadID, d)
	if err == nil && d.md5Spared(done.hasMD5) {
		w.verifier.md5Skipped.Store(true)
	}
	if err != nil {
		_ = w.fail(err)
		return
	}
	// Journal hook: the verified part's receipt, for resume and recovery.
	if err := w.session.journal.part(done); err != nil {
		_ = w.fail(err)
		return
	}
	w.mu.Lock()
	w.session.record(n, done)
	w.mu.Unlock()
	w.parts.acknowledged(n, body, uploadID)
}

// send sends part n of upload uploadID with retries and returns its receipt, checked against
// what was sent, or the part's classified error (partFailed). The body of every attempt is a
// fresh reader over the same held bytes. A buffer's first attempt sends the CRC taken as the
// bytes arrived; every retry recomputes it from the held bytes and must agree, so a retry can
// never carry a stale checksum and bytes changed in memory since they were written are caught.
// d is the write's decisions, of which the part's MD5 ones are read (lateMD5).
func (s *partSender) send(n int32, part partBody, uploadID string, d decider) (partDone, error) {
	size := part.size()
	s.events.emit(Event{Type: EventPartStarted, UploadID: uploadID, PartNumber: n, Size: size})
	var done partDone
	first := true
	err := s.req.doSized("UploadPart", n, size, func(ctx context.Context, attempt int) error {
		body, rec, err := s.prepareBody(n, part, first)
		if err != nil {
			return err
		}
		if !first && rec.crc != done.crc {
			return s.errs.errorf(sperrors.Internal, "UploadPart", nil, "part %d bytes changed between attempts (checksum %s then %s)", n, done.sum, rec.sum)
		}
		if first {
			done = rec
			first = false
		}
		in := &store.UploadPartInput{
			Bucket: s.bucket, Key: s.key, UploadID: uploadID, PartNumber: n,
			Body: body, ContentLength: size, SSECustomerKey: s.cfg.customerKey,
		}
		if s.caps.alg != store.ChecksumNone {
			in.Checksum = store.Checksum{Algorithm: s.caps.alg, Value: rec.sum}
		}
		if s.caps.sendMD5 && rec.hasMD5 {
			in.ContentMD5 = md5Header(rec.md5)
		}
		s.tally.bytesSent.Add(size)
		sendCtx, sent := s.bodySent(ctx, n, part, uploadID)
		sendCtx, lostAfterSent := sentWhole(sendCtx)
		out, err := s.st.UploadPart(sendCtx, in)
		sent()
		if err != nil {
			if lostAfterSent(err) {
				s.upload.partWentUnanswered()
			}
			if attempt > 1 && ctx.Err() == nil && unanswered(err) {
				// Unanswered again: an outage, or a store that drops the connection on a part
				// of an upload it no longer has; only the latter ends the part's retries.
				if gone := s.uploadGone(uploadID); gone != nil {
					return gone
				}
			}
			return err
		}
		if err := s.lateMD5(n, part, &rec, in.Checksum, out.Checksums, d); err != nil {
			return err
		}
		receipt := integrity.Receipt{PartNumber: n, Size: size, Checksum: in.Checksum, MD5: rec.md5, HasMD5: rec.hasMD5}
		// A store whose multipart ETags are MD5-of-part-MD5s makes part ETags that are MD5s.
		if _, err := integrity.CheckReceipt(receipt, out.ETag, out.Checksums, s.caps.etagTrusted(false) || s.caps.etagTrusted(true)); err != nil {
			return s.errs.integrity("UploadPart", n, err)
		}
		done.etag, done.md5, done.hasMD5 = out.ETag, rec.md5, rec.hasMD5
		done.echoed = in.Checksum.Value != "" && out.Checksums.Get(in.Checksum.Algorithm) == in.Checksum.Value
		return nil
	})
	if err != nil {
		return done, s.partFailed(n, err, uploadID)
	}
	return done, nil
}

// acknowledged counts part's bytes done, once the Writer has recorded its receipt, and paces
// the parts in flight by it.
func (s *partSender) acknowledged(n int32, part partBody, uploadID string) {
	size := part.size()
	s.paced(n, size, part.hand, uploadID)
	total := s.tally.bytesDone.Add(size)
	s.events.emit(Event{Type: EventPartDone, UploadID: uploadID, PartNumber: n, Size: size, BytesDone: total})
}

// partFailed is the write's error for part n, whose request failed with err after its retries:
// the vanished upload's when the store answered NoSuchUpload, or when the part's requests ended
// without an answer (a reset, a timeout) and ListParts, asked once, finds the upload gone. A store
// may close the connection on a request for an upload it no longer has before the client has read
// its answer (Versity answers before it reads the body), so the part itself never hears why.
func (s *partSender) partFailed(n int32, err error, uploadID string) error {
	if isNoSuchUpload(err) {
		return s.errs.uploadVanished("UploadPart", n, err, "")
	}
	if e := asError(err); e == nil || e.Kind != sperrors.Transient || !unanswered(err) {
		return err
	}
	gone := s.uploadGone(uploadID)
	if gone == nil {
		return err
	}
	s.log.Warn("a part's requests ended without an answer and ListParts found the upload gone",
		zap.Int32("part", n), zap.String("upload_id", uploadID), zap.Error(err))
	return s.errs.uploadVanished("UploadPart", n, gone, "")
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

// writeEnded reports whether the write's context ended (it failed, or the caller stopped it).
func (s *partSender) writeEnded() bool { return s.ctx.Err() != nil }

// uploadGone asks ListParts, once (under the stall window), whether upload uploadID is still
// there, and returns the store's NoSuchUpload answer when it is gone; nil when it is there, or
// when the store cannot say (it lacks ListParts, or does not answer either), or the write ended.
func (s *partSender) uploadGone(uploadID string) error {
	if s.writeEnded() || s.facts.lacking(optListParts) != "" {
		return nil
	}
	stats, err := s.policy.With(sendOnce).Do(s.ctx, retry.Op{Name: "ListParts", Bucket: s.bucket, Key: s.key, UploadID: uploadID},
		func(ctx context.Context, _ int) error {
			_, err := s.st.ListParts(ctx, &store.ListPartsInput{Bucket: s.bucket, Key: s.key, UploadID: uploadID})
			return err
		})
	s.tally.addStats(stats)
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
//
// d is the write's decisions (of which afterReceipt and afterEcho are taken here).
func (s *partSender) lateMD5(n int32, part partBody, rec *partDone, sent store.Checksum, echoed store.Checksums, d decider) error {
	switch d.afterReceipt(rec.hasMD5, sent) {
	case md5Held:
		return nil
	case md5AskEcho:
		if part.early == nil {
			// Whether the store checks is the probe's answer. A single PUT whose MD5 is being
			// taken beside it has it anyway: it does not wait for a probe out meanwhile.
			s.facts.awaitAnswer(s.ctx)
		}
		switch d.afterEcho(sent, echoed.Get(sent.Algorithm), s.facts.checking()) {
		case echoTrusted:
			return nil
		case echoMissing:
			s.facts.update(func(f *endpointFacts) { f.checksParts = no })
		case echoUntrusted:
		}
	case md5Take:
	}
	return s.partMD5(n, part, rec)
}

// partMD5 sets rec's MD5 from the part's bytes: its buffer, or its section of the source re-read.
func (s *partSender) partMD5(n int32, part partBody, rec *partDone) error {
	if part.early != nil { // its bytes were counted as they were hashed (md5Beside)
		sum, err := part.early.result()
		if err != nil {
			return err
		}
		rec.md5, rec.hasMD5 = sum, true
		return nil
	}
	if part.section == nil {
		_, rec.md5 = integrity.MD5Base64(part.buf)
		rec.hasMD5 = true
		s.tally.md5Bytes.Add(int64(len(part.buf)))
		return nil
	}
	// The CRC is taken again in the same read, when the first read took one: an MD5 of bytes other
	// than those hashed first (the source changed since) would prove an object the checksum sent
	// and reported does not describe.
	want := sums{md5: true}
	if rec.sum != "" {
		want.local = s.caps.local
	}
	again, err := s.sumSection(n, io.NewSectionReader(part.section.Outer()), want)
	if err != nil {
		return err
	}
	if want.local != store.ChecksumNone && again.crc != rec.crc {
		return s.errs.errorf(sperrors.Permanent, opOf(n), nil, "the source changed while it was being sent: read again for its MD5, its %s is %s, not the %s it had when it was first read (and sent with)",
			want.local, again.sum, rec.sum)
	}
	rec.md5, rec.hasMD5 = again.md5, true
	return nil
}

// md5Beside starts taking body's MD5 beside its request: from its buffer, or from its section of
// the source read again with the CRC, which must be rec's (the one sent), so that the MD5 proves
// the bytes the checksum describes. Its bytes are counted as they are hashed.
func (s *partSender) md5Beside(rec partDone, body partBody) *earlyMD5 {
	body.early = nil
	return startMD5(func() (sum [md5.Size]byte, err error) {
		defer func() {
			if r := recover(); r != nil { // a caller's ReaderAt that panics
				err = s.errs.errorf(sperrors.Internal, opOf(rec.number), nil, "reading the source again for its MD5 panicked: %v", r)
			}
		}()
		if err := s.partMD5(rec.number, body, &rec); err != nil {
			return sum, err
		}
		return rec.md5, nil
	})
}

// opOf names the request that sends part n: 0 is a single PUT's body.
func opOf(n int32) string {
	if n == 0 {
		return "PutObject"
	}
	return "UploadPart"
}

// sourceShort is the error of a ReaderAt source that ended after read of the size bytes of part n
// (0: the single PUT's body).
func (s *partSender) sourceShort(n int32, read, size int64) error {
	if n == 0 {
		return s.errs.errorf(sperrors.Permanent, "PutObject", nil, "source ended at %d of its %d bytes: it is shorter than its declared size %d", read, size, s.cfg.sizeHint)
	}
	return s.errs.errorf(sperrors.Permanent, "UploadPart", nil, "source ended at %d of part %d's %d bytes: it is shorter than its declared size %d", read, n, size, s.cfg.sizeHint)
}

// sums names what a pass over a part's bytes takes: the CRC of algorithm local (none for ""),
// and the MD5. A pass ahead of the create is given them (the create may still change the caps),
// and stops early, with errAheadStopped, once the write has failed (which ends its context).
type sums struct {
	local store.ChecksumAlgorithm
	md5   bool
	ahead bool
}

var errAheadStopped = stderrors.New("the write failed before its part was sent")

// sumSection reads section once and returns its part's record with the sums s asks for (part n;
// 0: the single PUT's body).
func (s *partSender) sumSection(n int32, section *io.SectionReader, want sums) (partDone, error) {
	size := section.Size()
	rec := partDone{number: n, size: size}
	crc := integrity.ChecksumOf(want.local, nil)
	var md5h md5Hasher
	if want.md5 {
		md5h = newMD5()
	}
	chunkBuf := sectionChunks.Get()
	defer sectionChunks.Put(chunkBuf)
	chunk := *chunkBuf
	var read int64
	for read < size {
		if want.ahead && s.ctx.Err() != nil {
			return rec, errAheadStopped
		}
		m, err := section.Read(chunk)
		if m > 0 {
			if want.local != store.ChecksumNone {
				crc = integrity.Update(want.local, crc, chunk[:m])
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
			return rec, s.errs.sourceError(opOf(n), n, err)
		}
	}
	if read != size {
		return rec, s.sourceShort(n, read, size)
	}
	if want.local != store.ChecksumNone {
		rec.crc, rec.sum = crc, integrity.EncodeCRCValue(want.local, crc)
	}
	if md5h != nil {
		copy(rec.md5[:], md5h.Sum(nil))
		rec.hasMD5 = true
		s.tally.md5Bytes.Add(read)
	}
	return rec, nil
}

// prepareBody returns a fresh reader over the part and its checksums. fillCRC takes a buffer's
// CRC from when it was filled instead of another pass over the bytes (which, by now, have left
// the CPU's caches).
func (s *partSender) prepareBody(n int32, part partBody, fillCRC bool) (io.ReadSeeker, partDone, error) {
	size := part.size()
	rec := partDone{number: n, size: size}
	if part.section == nil {
		if fillCRC {
			s.checksumFilled(&rec, part.buf, part.crc)
		} else {
			s.checksum(&rec, part.buf)
		}
		return newFencedReader(part.buf, part.fence), rec, nil
	}
	// A ReaderAt source is read twice (checksum, then send) instead of being copied; the send of
	// a file's section goes by sendfile where the connection allows (bufpool.WriteN). Each
	// attempt gets its own reader: an earlier attempt's request may still be reading its own.
	section := io.NewSectionReader(part.section.Outer())
	ahead, ok := partDone{}, false
	if fillCRC {
		ahead, ok = s.takeAhead(section) // hashed while the create was on the wire (ahead.go)
	}
	if ok {
		ahead.number = n
		rec = ahead
	} else {
		var err error
		if rec, err = s.sumSection(n, section, sums{local: s.caps.local, md5: s.caps.md5}); err != nil {
			return nil, rec, err
		}
	}
	if _, err := section.Seek(0, io.SeekStart); err != nil {
		return nil, rec, err
	}
	return part.fenced(section), rec, nil
}

// lateReadWait bounds how long a part's end waits for a read of the caller's source that a
// returned request still has under way (one ReadAt of at most 32 KiB: fencedSection).
const lateReadWait = 5 * time.Second

// sectionChunks are the read buffers prepareBody checksums a ReaderAt part through, shared by
// all writers so a part costs no allocation.
var sectionChunks = bufpool.New(256 << 10)

// checksum sets rec's sums of data: the CRC and, when the write takes it up front, the MD5.
func (s *partSender) checksum(rec *partDone, data []byte) {
	crc := uint64(0)
	if s.caps.local != store.ChecksumNone {
		crc = integrity.ChecksumOf(s.caps.local, data)
	}
	s.checksumFilled(rec, data, crc)
}

// checksumFilled is checksum with data's CRC already known (taken as the data arrived).
func (s *partSender) checksumFilled(rec *partDone, data []byte, crc uint64) {
	if s.caps.local != store.ChecksumNone {
		rec.crc = crc
		rec.sum = integrity.EncodeCRCValue(s.caps.local, rec.crc)
	}
	if s.caps.md5 {
		_, rec.md5 = integrity.MD5Base64(data)
		rec.hasMD5 = true
		s.tally.md5Bytes.Add(int64(len(data)))
	}
}
