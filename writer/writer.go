// Package writer is safeput's uploader: a Writer that streams into an object, and Upload for a
// reader. Either ends in a verified Result or a classified *errors.Error; never a panic, never a
// multipart upload left behind without saying so.
package writer

import (
	"bytes"
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/bufpool"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// ErrClosed is the cause of the error a Write after Close returns.
var ErrClosed = stderrors.New("writer is closed")

// Writer streams bytes into one object.
//
// Write copies into pooled part buffers and never sends a request for a small write; full parts
// go out in the background, up to the configured concurrency. Close commits: one PutObject when
// everything fits the single-PUT threshold, else the last part, a ListParts check and
// CompleteMultipartUpload; then a HEAD verifies what landed. Close returns nil only when the
// object is at the key, verified; Result then says how.
//
// Errors are sticky: after the first failure every Write and Close return it, and Close never
// commits an upload that saw an error (a columnar writer may swallow its own footer error and
// still call Close). On any failure the multipart upload is aborted on a context detached from
// the caller's; if even that fails the error says so and carries the upload id.
//
// Write, ReadFrom and Close must be called from one goroutine at a time (as with any io.Writer);
// Abort may be called from any goroutine: it cancels the write at once, then waits for an
// in-progress Write or ReadFrom to return (a ReadFrom blocked reading its source holds it until
// that read returns). Abort after Close has begun does nothing: Close decides the outcome.
type Writer struct {
	ctx    context.Context
	cancel context.CancelFunc
	st     store.Store
	bucket string
	key    string
	cfg    config
	plan   multipart.Plan
	caps   checksumCaps
	facts  *endpointFacts // what writes learned about this store's endpoint (evidence.go)
	log    *zap.Logger
	start  time.Time
	policy *retry.Policy

	// Owned by the writing goroutine.
	buf         []byte // part being filled; nil when none is held
	fill        int
	pending     []byte // a full part held back until more data shows it is not the last
	size        int64
	nextPart    int32
	slots       chan struct{} // one token per part buffer this writer may hold
	section     io.ReaderAt   // set by Upload for a ReaderAt source: parts come from it, no buffers
	sectionBase int64         // the source's offset where the object starts
	resent      bool          // parts were re-sent once after a failed layout check

	wg sync.WaitGroup
	// op serialises Write, ReadFrom, Close and the buffer release of Abort, which may come from
	// another goroutine.
	op sync.Mutex

	mu       sync.Mutex
	err      error // sticky first error
	closed   bool
	closeErr error
	result   *Result
	uploadID string
	parts    map[int32]partDone
	// createAmbiguous: a CreateMultipartUpload attempt got no answer between createStart and
	// createEnd, so the store may hold an upload we never heard of (see sweepLostCreates).
	createAmbiguous        bool
	createStart, createEnd time.Time
	uploadIDs              map[string]bool // every upload id this writer was given
	notes                  []string        // Result.Notes
	stats                  retry.Stats
	bytesSent              atomic.Int64
	bytesDone              atomic.Int64
}

type partDone struct {
	number int32
	size   int64
	etag   string
	crc    uint64
	sum    string
	md5    [16]byte
	hasMD5 bool
}

// checksumCaps is what this write sends, given the algorithm asked for and the store's rules.
type checksumCaps struct {
	alg        store.ChecksumAlgorithm // sent as x-amz-checksum-*; "" when the store takes none we can use
	local      store.ChecksumAlgorithm // computed locally (and compared with whatever the store reports) even when not sent
	fullObject bool                    // multipart upload carries a FULL_OBJECT checksum
	md5        bool                    // compute MD5 (Content-MD5 or ETag check)
	sendMD5    bool                    // send Content-MD5 (asked for, or the store's only body check)
	etagIsMD5  bool                    // single-PUT and part ETags are the body's MD5
	mpETagMD5  bool                    // multipart ETags are md5-of-md5s-N
	probing    bool                    // alg is offered though the profile does not list it
}

// New returns a Writer for bucket/key. Nothing is sent until a part fills or Close.
// ctx governs the whole write: when it ends, in-flight requests stop and Close returns Canceled.
func New(ctx context.Context, st store.Store, bucket, key string, opts ...Option) (*Writer, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return newWriter(ctx, st, bucket, key, cfg)
}

func newWriter(ctx context.Context, st store.Store, bucket, key string, cfg config) (*Writer, error) {
	const op = "New"
	bad := func(format string, args ...any) error {
		e := sperrors.New(sperrors.Permanent, op, format, args...)
		e.Bucket, e.Key = bucket, key
		return e
	}
	if ctx == nil {
		return nil, bad("nil context")
	}
	if st == nil {
		return nil, bad("nil store")
	}
	if err := store.ValidateBucketKey(bucket, key); err != nil {
		return nil, bad("%v", err)
	}
	if cfg.rulesErr != nil {
		return nil, bad("%v", cfg.rulesErr)
	}
	if cfg.sizeHint < -1 {
		return nil, bad("negative size %d", cfg.sizeHint)
	}
	if cfg.concurrency < 1 {
		return nil, bad("concurrency must be at least 1, got %d", cfg.concurrency)
	}
	if cfg.partSize <= 0 {
		return nil, bad("part size must be positive, got %d", cfg.partSize)
	}
	if !cfg.checksum.Valid() || (cfg.checksum != store.ChecksumNone && !verify.IsCRC(cfg.checksum)) {
		return nil, bad("checksum %q is not supported (want CRC64NVME, CRC32C, CRC32 or none)", cfg.checksum)
	}
	size := cfg.sizeHint
	plan, err := cfg.rules.Plan(multipart.PlanRequest{
		Size:            size,
		PartSize:        cfg.partSize,
		Concurrency:     cfg.concurrency,
		Threshold:       cfg.threshold,
		ExpectedMaxSize: cfg.expectedMax,
	})
	if err != nil {
		return nil, classifyRule(op, bucket, key, err)
	}
	if cfg.budget == nil {
		b, err := NewBudget(int64(cfg.concurrency) * plan.PartSize)
		if err != nil {
			return nil, bad("%v", err)
		}
		cfg.budget = b
	} else if need := int64(cfg.concurrency) * plan.PartSize; need > cfg.budget.Limit() {
		return nil, bad("concurrency %d × part size %s = %s exceeds the whole memory budget %s",
			cfg.concurrency, multipart.FormatSize(plan.PartSize), multipart.FormatSize(need), multipart.FormatSize(cfg.budget.Limit()))
	}
	if cfg.policy == nil {
		cfg.policy = retry.Default()
	}
	// One buffer holds the single-PUT object, so the threshold cannot exceed a part.
	plan.Threshold = min(plan.Threshold, plan.PartSize)
	wctx, cancel := context.WithCancel(ctx)
	w := &Writer{
		ctx:       wctx,
		cancel:    cancel,
		st:        st,
		bucket:    bucket,
		key:       key,
		cfg:       cfg,
		plan:      plan,
		facts:     factsFor(st, bucket),
		start:     time.Now(),
		policy:    cfg.policy,
		slots:     make(chan struct{}, cfg.concurrency),
		parts:     map[int32]partDone{},
		uploadIDs: map[string]bool{},
		stats:     retry.Stats{ByKind: map[sperrors.Kind]int{}},
	}
	w.caps = chooseChecksum(cfg, w.facts)
	w.log = cfg.logger.With(zap.String("bucket", bucket), zap.String("key", key))
	return w, nil
}

// Write copies p into part buffers. It sends nothing until a part is full and more data
// follows, so small writes (a Parquet writer's 4-byte magic) cannot fail on the network.
func (w *Writer) Write(p []byte) (int, error) {
	w.op.Lock()
	defer w.op.Unlock()
	return w.write(p)
}

func (w *Writer) write(p []byte) (int, error) {
	if err := w.checkWritable(); err != nil {
		return 0, err
	}
	written := 0
	for len(p) > 0 {
		if w.buf == nil {
			if err := w.nextBuffer(); err != nil {
				return written, err
			}
		}
		n := copy(w.buf[w.fill:], p)
		w.fill += n
		written += n
		p = p[n:]
		if err := w.account(int64(n)); err != nil {
			return written, err
		}
		if w.fill == len(w.buf) {
			w.pending, w.buf, w.fill = w.buf, nil, 0
		}
	}
	return written, nil
}

// ReadFrom reads r to EOF straight into part buffers (no intermediate copy).
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	w.op.Lock()
	defer w.op.Unlock()
	if err := w.checkWritable(); err != nil {
		return 0, err
	}
	if r == nil {
		return 0, w.fail(sperrors.New(sperrors.Permanent, "ReadFrom", "nil reader"))
	}
	var total int64
	for {
		if w.buf == nil {
			if err := w.nextBuffer(); err != nil {
				return total, err
			}
		}
		n, err := r.Read(w.buf[w.fill:])
		if n < 0 || n > len(w.buf)-w.fill {
			return total, w.fail(sperrors.New(sperrors.Internal, "ReadFrom", "reader returned invalid count %d", n))
		}
		w.fill += n
		total += int64(n)
		if aerr := w.account(int64(n)); aerr != nil {
			return total, aerr
		}
		if err == nil && w.fill == len(w.buf) {
			// Probe one byte before taking a new buffer: a stream that ends exactly here must
			// not start a multipart upload (or a part) it does not need.
			var probe [1]byte
			m, perr := io.ReadFull(r, probe[:])
			w.pending, w.buf, w.fill = w.buf, nil, 0
			if m == 0 && (perr == io.EOF || perr == io.ErrUnexpectedEOF) {
				return total, nil
			}
			if m == 1 {
				total++
				if _, werr := w.write(probe[:]); werr != nil {
					return total, werr
				}
			}
			if perr != nil && perr != io.EOF {
				return total, w.fail(w.sourceError("ReadFrom", 0, perr))
			}
			continue
		}
		if w.fill == len(w.buf) {
			w.pending, w.buf, w.fill = w.buf, nil, 0
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, w.fail(w.sourceError("ReadFrom", 0, err))
		}
		if err := w.ctx.Err(); err != nil {
			return total, w.fail(w.canceled("ReadFrom", err))
		}
	}
}

func (w *Writer) checkWritable() error {
	w.mu.Lock()
	closed, err := w.closed, w.err
	w.mu.Unlock()
	if err != nil {
		return err // sticky: the first failure, or the caller's Abort
	}
	if closed {
		return w.errorf(sperrors.Permanent, "Write", ErrClosed, "write after Close")
	}
	if err := w.ctx.Err(); err != nil {
		return w.fail(w.canceled("Write", err))
	}
	return nil
}

// account adds n accepted bytes and enforces the declared size and the plan's ceiling.
func (w *Writer) account(n int64) error {
	w.size += n
	if w.cfg.sizeHint >= 0 && w.size > w.cfg.sizeHint {
		return w.fail(w.errorf(sperrors.Permanent, "Write", nil, "source is longer than the declared size %d", w.cfg.sizeHint))
	}
	if w.plan.Ceiling > 0 && w.size > w.plan.Ceiling {
		return w.fail(w.errorf(sperrors.Compatibility, "Write", nil,
			"object grew past %s, the most %d parts of %s can hold under profile %s; set WithExpectedMaxSize or WithSize",
			multipart.FormatSize(w.plan.Ceiling), w.cfg.rules.MaxParts, multipart.FormatSize(w.plan.PartSize), w.cfg.rules.Name))
	}
	return nil
}

// nextBuffer dispatches the held full part (it is not the last: more data came) and takes a
// fresh buffer, waiting for a slot and for memory budget.
func (w *Writer) nextBuffer() error {
	if w.pending != nil {
		full := w.pending
		w.pending = nil // dispatch owns it now, even on error
		if err := w.dispatch(full, false); err != nil {
			return err
		}
	}
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		return w.fail(w.canceled("Write", w.ctx.Err()))
	}
	size := w.plan.PartSize
	if w.cfg.sizeHint >= 0 {
		// A known small object needs only its own size, not a whole part.
		size = max(1, min(size, w.cfg.sizeHint-w.size))
	}
	buf, err := w.cfg.budget.get(w.ctx, int(size))
	if err != nil {
		<-w.slots
		return w.fail(w.canceled("Write", err))
	}
	w.buf, w.fill = buf, 0
	return nil
}

// dispatch sends data as the next part in the background, starting the multipart upload first
// if needed. The buffer (and its slot) is released when the part is done.
func (w *Writer) dispatch(data []byte, final bool) error {
	if err := w.ensureUpload(); err != nil {
		w.release(data)
		return err
	}
	w.nextPart++
	n := w.nextPart
	if err := w.plan.CheckPart(int(n), int64(len(data)), final); err != nil {
		w.release(data)
		return w.fail(classifyRule("UploadPart", w.bucket, w.key, err))
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer w.release(data)
		defer w.recoverTo("UploadPart", n)
		w.uploadPart(n, data, nil, 0)
	}()
	return nil
}

// dispatchSection sends [off, off+size) of the ReaderAt source as part n, with no buffer.
func (w *Writer) dispatchSection(off, size int64, final bool) error {
	if err := w.ensureUpload(); err != nil {
		return err
	}
	w.nextPart++
	n := w.nextPart
	if err := w.plan.CheckPart(int(n), size, final); err != nil {
		return w.fail(classifyRule("UploadPart", w.bucket, w.key, err))
	}
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		return w.fail(w.canceled("UploadPart", w.ctx.Err()))
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.slots }()
		defer w.recoverTo("UploadPart", n)
		w.uploadPart(n, nil, io.NewSectionReader(w.section, w.sectionBase+off, size), size)
	}()
	return nil
}

func (w *Writer) release(buf []byte) {
	if buf == nil {
		return
	}
	w.cfg.budget.put(buf)
	<-w.slots
}

func (w *Writer) ensureUpload() error {
	if w.currentUploadID() != "" {
		return nil
	}
	if err := w.firstErr(); err != nil {
		return err
	}
	in := &store.CreateMultipartUploadInput{
		Bucket: w.bucket, Key: w.key, ContentType: w.cfg.contentType, Metadata: w.cfg.metadata,
	}
	if w.caps.alg != store.ChecksumNone {
		in.ChecksumAlgorithm = w.caps.alg
		in.ChecksumType = store.ChecksumTypeComposite
		if w.caps.fullObject {
			in.ChecksumType = store.ChecksumTypeFullObject
		}
	}
	var id string
	w.createStart = time.Now()
	err := w.do("CreateMultipartUpload", 0, func(ctx context.Context, _ int) error {
		out, err := w.st.CreateMultipartUpload(ctx, in)
		if err != nil && w.caps.probing && headerRefused(err) {
			w.dropOfferedChecksum("CreateMultipartUpload", err)
			in.ChecksumAlgorithm, in.ChecksumType = store.ChecksumNone, store.ChecksumTypeNone
			out, err = w.st.CreateMultipartUpload(ctx, in)
		}
		if err != nil {
			var re *store.ResponseError
			if !stderrors.As(err, &re) {
				// No answer: the store may have created an upload we will never hear of.
				w.mu.Lock()
				w.createAmbiguous = true
				w.mu.Unlock()
			}
			return err
		}
		id = out.UploadID
		return nil
	})
	w.mu.Lock()
	w.createEnd = time.Now()
	w.mu.Unlock()
	if err != nil {
		return w.fail(err)
	}
	w.mu.Lock()
	w.uploadID = id
	w.uploadIDs[id] = true
	w.mu.Unlock()
	w.log.Debug("multipart upload created", zap.String("upload_id", id), zap.Int64("part_size", w.plan.PartSize))
	return nil
}

// uploadPart sends one part with retries. The body of every attempt is a fresh reader over the
// same held bytes, and the checksum is recomputed from exactly those bytes each attempt, so a
// retry can never carry a stale checksum.
func (w *Writer) uploadPart(n int32, data []byte, section *io.SectionReader, sectionSize int64) {
	size := int64(len(data))
	if section != nil {
		size = sectionSize
	}
	uploadID := w.currentUploadID()
	w.emit(Event{Type: EventPartStarted, UploadID: uploadID, PartNumber: n, Size: size})
	var done partDone
	first := true
	err := w.doSized("UploadPart", n, size, func(ctx context.Context, attempt int) error {
		body, rec, err := w.prepareBody(n, data, section, size)
		if err != nil {
			return err
		}
		if !first && rec.crc != done.crc {
			return w.errorf(sperrors.Internal, "UploadPart", nil, "part %d bytes changed between attempts (checksum %s then %s)", n, done.sum, rec.sum)
		}
		if first {
			done = rec
			first = false
		}
		in := &store.UploadPartInput{
			Bucket: w.bucket, Key: w.key, UploadID: uploadID, PartNumber: n,
			Body: body, ContentLength: size,
		}
		if w.caps.alg != store.ChecksumNone {
			in.Checksum = store.Checksum{Algorithm: w.caps.alg, Value: rec.sum}
		}
		if w.caps.sendMD5 && rec.hasMD5 {
			in.ContentMD5 = md5Header(rec.md5)
		}
		w.bytesSent.Add(size)
		out, err := w.st.UploadPart(ctx, in)
		if err != nil {
			return err
		}
		receipt := verify.Receipt{PartNumber: n, Size: size, Checksum: in.Checksum, MD5: rec.md5, HasMD5: rec.hasMD5}
		// A store whose multipart ETags are MD5-of-part-MD5s makes part ETags that are MD5s.
		if _, err := verify.CheckReceipt(receipt, out.ETag, out.Checksums, w.etagTrusted(false) || w.etagTrusted(true)); err != nil {
			return w.integrity("UploadPart", n, err)
		}
		done.etag = out.ETag
		return nil
	})
	if err != nil {
		_ = w.fail(err)
		return
	}
	w.mu.Lock()
	w.parts[n] = done
	w.mu.Unlock()
	total := w.bytesDone.Add(size)
	w.emit(Event{Type: EventPartDone, UploadID: uploadID, PartNumber: n, Size: size, BytesDone: total})
}

// prepareBody returns a fresh reader over the part and its checksums.
func (w *Writer) prepareBody(n int32, data []byte, section *io.SectionReader, size int64) (io.ReadSeeker, partDone, error) {
	rec := partDone{number: n, size: size}
	if section == nil {
		w.checksum(&rec, data)
		return bytes.NewReader(data), rec, nil
	}
	// A ReaderAt source is read twice (checksum, then send) instead of being copied.
	if _, err := section.Seek(0, io.SeekStart); err != nil {
		return nil, rec, err
	}
	crc := verify.ChecksumOf(w.caps.local, nil)
	var md5h md5Hasher
	if w.caps.md5 {
		md5h = newMD5()
	}
	chunkBuf := sectionChunks.Get()
	defer sectionChunks.Put(chunkBuf)
	chunk := *chunkBuf
	var read int64
	for read < size {
		m, err := section.Read(chunk)
		if m > 0 {
			if w.caps.local != store.ChecksumNone {
				crc = verify.Update(w.caps.local, crc, chunk[:m])
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
			return nil, rec, w.sourceError("UploadPart", n, err)
		}
	}
	if read != size {
		return nil, rec, w.errorf(sperrors.Permanent, "UploadPart", nil, "source ended at %d of part %d's %d bytes: it is shorter than its declared size", read, n, size)
	}
	if w.caps.local != store.ChecksumNone {
		rec.crc, rec.sum = crc, verify.EncodeCRCValue(w.caps.local, crc)
	}
	if md5h != nil {
		copy(rec.md5[:], md5h.Sum(nil))
		rec.hasMD5 = true
	}
	if _, err := section.Seek(0, io.SeekStart); err != nil {
		return nil, rec, err
	}
	return section, rec, nil
}

// sectionChunks are the read buffers prepareBody checksums a ReaderAt part through, shared by
// all writers so a part costs no allocation.
var sectionChunks = bufpool.New(256 << 10)

func (w *Writer) checksum(rec *partDone, data []byte) {
	if w.caps.local != store.ChecksumNone {
		rec.crc = verify.ChecksumOf(w.caps.local, data)
		rec.sum = verify.EncodeCRCValue(w.caps.local, rec.crc)
	}
	if w.caps.md5 {
		_, rec.md5 = verify.MD5Base64(data)
		rec.hasMD5 = true
	}
}

// Close commits the object and verifies it. It returns nil only when the object landed and
// verified; Result then reports how. A second Close returns the first Close's error (or nil).
func (w *Writer) Close() error {
	w.op.Lock()
	defer w.op.Unlock()
	w.mu.Lock()
	if w.closed {
		err := w.closeErr
		w.mu.Unlock()
		return err
	}
	w.closed = true
	w.mu.Unlock()

	err := w.commit()
	if err != nil {
		uploadID := w.currentUploadID() // before cleanup aborts it and forgets the id
		err = w.cleanup(err)
		w.emit(Event{Type: EventFailed, UploadID: uploadID, Kind: sperrors.KindOf(err), Err: err, Elapsed: time.Since(w.start)})
		w.log.Warn("write failed", zap.Int64("size", w.size), zap.String("upload_id", uploadID), zap.Error(err))
	}
	if left := w.sweepLostCreates(); len(left) > 0 {
		// Say so, in the Result or the error, so a sweep can find them.
		if err == nil {
			w.mu.Lock()
			w.result.LeftBehind = left
			w.mu.Unlock()
		} else {
			err = annotated(err, func(e *sperrors.Error) {
				e.AbortFailed = true
				if e.UploadID == "" {
					e.UploadID = left[0]
				}
				e.Message += fmt.Sprintf("; uploads left behind by a lost CreateMultipartUpload answer: %v", left)
			})
		}
	}
	w.cancel()
	w.mu.Lock()
	w.closeErr = err
	w.mu.Unlock()
	return err
}

// Result returns what a successful Close did; nil before Close or after a failure.
func (w *Writer) Result() *Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.result
}

// Abort discards the write: in-flight parts stop, the multipart upload is aborted, nothing is
// committed. It returns nil when nothing is left behind (or nothing was started), and an error
// carrying the upload id when the abort itself failed. After Abort, Write and Close fail.
func (w *Writer) Abort(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	aborted := w.errorf(sperrors.Canceled, "Abort", context.Canceled, "write aborted by the caller")
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	if w.err == nil {
		w.err = aborted
	}
	w.closeErr = w.err
	w.mu.Unlock()
	// Cancel first: a Write blocked on a part slot or on the memory budget returns at once and
	// gives up the buffers it owns.
	w.cancel()
	w.op.Lock()
	defer w.op.Unlock()
	w.wg.Wait()
	w.releaseHeld()
	if abortErr := w.abortUpload(ctx); abortErr != nil {
		return abortErr
	}
	return nil
}

// commit finishes the write; any error it returns is cleaned up by Close.
func (w *Writer) commit() error {
	if err := w.firstErr(); err != nil {
		w.wg.Wait()
		return err
	}
	if err := w.ctx.Err(); err != nil {
		w.wg.Wait()
		return w.fail(w.canceled("Close", err))
	}
	if w.cfg.sizeHint >= 0 && w.size != w.cfg.sizeHint {
		w.wg.Wait()
		return w.fail(w.errorf(sperrors.Permanent, "Close", nil, "source ended at %d bytes, shorter than the declared size %d", w.size, w.cfg.sizeHint))
	}
	if w.section == nil && w.currentUploadID() == "" && w.size <= w.plan.Threshold {
		return w.putSingle()
	}
	// The held data is the tail: send it as the final part.
	if w.section == nil {
		switch {
		case w.buf != nil && w.fill > 0:
			if w.pending != nil {
				full := w.pending
				w.pending = nil // dispatch owns it now, even on error
				if err := w.dispatch(full, false); err != nil {
					return err
				}
			}
			tail := w.buf[:w.fill]
			w.buf = nil
			if err := w.dispatch(tail, true); err != nil {
				return err
			}
		case w.pending != nil:
			if w.buf != nil {
				w.release(w.buf)
				w.buf = nil
			}
			full := w.pending
			w.pending = nil
			if err := w.dispatch(full, true); err != nil {
				return err
			}
		case w.buf != nil:
			w.release(w.buf)
			w.buf = nil
		}
	}
	w.wg.Wait()
	if err := w.firstErr(); err != nil {
		return err
	}
	return w.complete()
}

// single-PUT path: everything is in one buffer.
func (w *Writer) putSingle() error {
	data := w.pending
	if data == nil && w.buf != nil {
		data = w.buf[:w.fill]
	}
	defer w.releaseHeld()
	var rec partDone
	w.checksum(&rec, data)
	in := &store.PutObjectInput{
		Bucket: w.bucket, Key: w.key, ContentLength: int64(len(data)),
		ContentType: w.cfg.contentType, Metadata: w.cfg.metadata,
		IfNoneMatch: w.cfg.createOnly && w.cfg.rules.ConditionalPut,
	}
	if w.caps.alg != store.ChecksumNone {
		in.Checksum = store.Checksum{Algorithm: w.caps.alg, Value: rec.sum}
	}
	if w.caps.sendMD5 {
		in.ContentMD5 = md5Header(rec.md5)
	}
	want := verify.Expected{Size: int64(len(data))}
	if w.caps.local != store.ChecksumNone {
		want.Checksum = store.Checksum{Algorithm: w.caps.local, Value: rec.sum}
	}
	if rec.hasMD5 {
		want.ETag = fmt.Sprintf("%x", rec.md5)
	}
	res := &Result{Bucket: w.bucket, Key: w.key, Size: int64(len(data)), Checksum: want.Checksum}
	if w.cfg.createOnly && !in.IfNoneMatch {
		if done, err := w.precheckCreateOnly(want, res); done {
			return err
		}
	}
	var out *store.PutObjectOutput
	err := w.doSized("PutObject", 0, int64(len(data)), func(ctx context.Context, _ int) error {
		in.Body = bytes.NewReader(data)
		w.bytesSent.Add(int64(len(data)))
		o, err := w.st.PutObject(ctx, in)
		if err != nil && w.caps.probing && headerRefused(err) {
			w.dropOfferedChecksum("PutObject", err)
			in.Checksum = store.Checksum{}
			in.Body = bytes.NewReader(data)
			w.bytesSent.Add(int64(len(data)))
			o, err = w.st.PutObject(ctx, in)
		}
		if err != nil {
			return err
		}
		receipt := verify.Receipt{Size: int64(len(data)), Checksum: in.Checksum, MD5: rec.md5, HasMD5: rec.hasMD5}
		if _, err := verify.CheckReceipt(receipt, o.ETag, o.Checksums, w.etagTrusted(false)); err != nil {
			if in.IfNoneMatch {
				// The key was free (the create-only PUT was accepted), so the damaged object is
				// this request's: remove it, or the retry meets it as a 412 and it stays.
				if derr := w.deleteObject(); derr != nil {
					w.log.Error("could not delete the damaged object this create-only PUT stored", zap.Error(derr))
				}
			}
			return w.integrity("PutObject", 0, err)
		}
		out = o
		return nil
	})
	if err != nil {
		if w.cfg.createOnly && isPrecondition(err) {
			return w.landedAlready(err, want, res)
		}
		return w.fail(err)
	}
	res.ETag, res.VersionID = out.ETag, out.VersionID
	if out.ETag == "" {
		w.note("the store's PutObject answer carried no ETag; the HEAD decided")
	}
	return w.verifyLanded(want, res)
}

// complete checks the layout with ListParts, commits, and verifies.
func (w *Writer) complete() error {
	uploadID := w.currentUploadID()
	w.mu.Lock()
	parts := make([]partDone, 0, len(w.parts))
	for _, p := range w.parts {
		parts = append(parts, p)
	}
	w.mu.Unlock()
	sort.Slice(parts, func(i, j int) bool { return parts[i].number < parts[j].number })
	if len(parts) != int(w.nextPart) {
		return w.fail(w.errorf(sperrors.Internal, "Complete", nil, "%d of %d parts recorded", len(parts), w.nextPart))
	}

	// Before commit: the store must list exactly what was sent.
	var listed []store.Part
	err := w.do("ListParts", 0, func(ctx context.Context, _ int) error {
		out, err := w.st.ListParts(ctx, &store.ListPartsInput{Bucket: w.bucket, Key: w.key, UploadID: uploadID})
		if err != nil {
			return err
		}
		listed = out.Parts
		return nil
	})
	if err != nil {
		return w.fail(err)
	}
	receipts := make([]verify.Receipt, len(parts))
	etags := make(map[int32]string, len(parts))
	completed := make([]store.CompletedPart, len(parts))
	var crc *verify.CRC
	if w.caps.local != store.ChecksumNone {
		crc, _ = verify.NewCRC(w.caps.local)
	}
	md5s := make([][16]byte, 0, len(parts))
	for i, p := range parts {
		receipts[i] = verify.Receipt{PartNumber: p.number, Size: p.size}
		if crc != nil {
			// Compared with ListParts whenever the store reports that algorithm, sent or not.
			receipts[i].Checksum = store.Checksum{Algorithm: w.caps.local, Value: p.sum}
			crc.Append(p.crc, p.size)
		}
		etags[p.number] = p.etag
		completed[i] = store.CompletedPart{PartNumber: p.number, ETag: p.etag}
		if w.caps.alg != store.ChecksumNone {
			// Sent for FULL_OBJECT too: some stores (Versity) require every part's checksum.
			completed[i].Checksum = store.Checksum{Algorithm: w.caps.alg, Value: p.sum}
		}
		if p.hasMD5 {
			md5s = append(md5s, p.md5)
		}
	}
	if bad, err := verify.CheckLayout(receipts, etags, listed); err != nil {
		// A part the store lost or kept wrong is re-sent when the source can be re-read
		// (ReaderAt); a streamed part's buffer is gone, so the write fails instead.
		if w.section == nil || !w.resend(bad, parts) {
			return w.fail(w.integrity("ListParts", 0, err))
		}
		return w.complete()
	}

	in := &store.CompleteMultipartUploadInput{
		Bucket: w.bucket, Key: w.key, UploadID: uploadID, Parts: completed,
		IfNoneMatch: w.cfg.createOnly && w.cfg.rules.ConditionalComplete, ObjectSize: w.size,
	}
	want := verify.Expected{Size: w.size}
	if crc != nil {
		// The full-object value, combined from the parts' CRCs: no second pass over the data.
		want.Checksum = store.Checksum{Algorithm: w.caps.local, Value: crc.String()}
	}
	if w.caps.alg != store.ChecksumNone {
		in.ChecksumType = store.ChecksumTypeComposite
		if w.caps.fullObject {
			in.FullObjectChecksum = want.Checksum
			in.ChecksumType = store.ChecksumTypeFullObject
		}
	}
	if len(md5s) == len(parts) {
		want.ETag = verify.MultipartETag(md5s)
	}
	res := &Result{
		Bucket: w.bucket, Key: w.key, Size: w.size, Checksum: want.Checksum, Multipart: true,
		Parts: len(parts), PartSize: w.plan.PartSize, UploadID: uploadID,
	}
	if w.cfg.createOnly && !in.IfNoneMatch {
		if done, err := w.precheckCreateOnly(want, res); done {
			return err
		}
	}
	var out *store.CompleteMultipartUploadOutput
	err = w.doSized("CompleteMultipartUpload", 0, w.size, func(ctx context.Context, attempt int) error {
		o, err := w.st.CompleteMultipartUpload(ctx, in)
		if err != nil {
			// The upload is gone: an earlier Complete (whose answer was lost, or which the
			// store reports oddly, as MinIO does) may have landed it. Versity answers a re-sent
			// Complete for a finished upload with InvalidPart instead.
			if isNoSuchUpload(err) || (attempt > 1 && hasCode(err, "InvalidPart")) {
				return &lostResponse{err: err}
			}
			return err
		}
		out = o
		return nil
	})
	var lost *lostResponse
	switch {
	case err == nil:
	case stderrors.As(err, &lost):
		return w.landedAlready(lost.err, want, res)
	case w.cfg.createOnly && isPrecondition(err):
		return w.landedAlready(err, want, res)
	default:
		return w.fail(err)
	}
	w.mu.Lock()
	w.uploadID = "" // committed: nothing to abort any more
	w.mu.Unlock()
	res.ETag, res.VersionID = out.ETag, out.VersionID
	if out.ETag == "" {
		w.note("the store's CompleteMultipartUpload answer carried no ETag; the HEAD decided")
	}
	return w.verifyLanded(want, res)
}

// resend uploads the listed parts again from the ReaderAt source, once per write. It reports
// whether every part went out again; complete then re-checks the layout from scratch.
func (w *Writer) resend(bad []int32, parts []partDone) bool {
	if w.resent || len(bad) == 0 {
		return false
	}
	w.resent = true
	// The layout check found the store keeping something other than what was sent: count it.
	w.mu.Lock()
	w.stats.ByKind[sperrors.Integrity] += len(bad)
	w.mu.Unlock()
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
			zap.String("upload_id", w.currentUploadID()))
		w.uploadPart(n, nil, io.NewSectionReader(w.section, w.sectionBase+off, size), size)
		if w.firstErr() != nil {
			return false
		}
	}
	return true
}

// lostResponse marks a Complete whose answer was lost: not retryable, check the key instead.
type lostResponse struct{ err error }

func (l *lostResponse) Error() string { return "response lost: " + l.err.Error() }
func (l *lostResponse) Unwrap() error { return l.err }

// precheckCreateOnly emulates If-None-Match with a HEAD on stores that do not support it (racy
// by nature; the profile says so). done is true when the key exists: err is then the outcome.
func (w *Writer) precheckCreateOnly(want verify.Expected, res *Result) (done bool, err error) {
	herr := w.do("HeadObject", 0, func(ctx context.Context, _ int) error {
		_, err := w.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: w.bucket, Key: w.key})
		return err
	})
	if herr == nil {
		cause := &sperrors.Error{Kind: sperrors.Precondition, Op: "HeadObject", StatusCode: 412, Code: "PreconditionFailed", Message: "key exists (checked by HEAD: the store has no conditional writes)"}
		return true, w.landedAlready(cause, want, res)
	}
	var re *store.ResponseError
	if stderrors.As(herr, &re) && re.StatusCode == 404 {
		return false, nil
	}
	return true, w.fail(herr)
}

// landedAlready handles a 412 on a create-only write, or NoSuchUpload on a re-sent Complete: if
// the object at the key is exactly ours, the write landed (idempotent success); else it is a
// Precondition error and the existing object is left untouched.
func (w *Writer) landedAlready(cause error, want verify.Expected, res *Result) error {
	head, herr := w.headWithChecksum()
	if herr == nil {
		j := w.judge(want, head, res.Multipart)
		if j.mismatch == nil {
			res.AlreadyExisted = true
			res.ETag, res.VersionID = head.ETag, head.VersionID
			if w.currentUploadID() != "" {
				// Our own upload did not commit (the object was already there): discard it.
				if aerr := w.abortUpload(w.ctx); aerr != nil {
					return aerr
				}
			}
			if j.method.Strong() {
				res.Verified, res.VerifiedStrong = j.method, true
				w.takeNotes(res)
				return w.finish(res)
			}
			// Landed, perhaps ours, but unproven. Without create-only the caller asked to
			// write the key, so what is there is (most likely) ours to remove; with it, it
			// may be another writer's.
			if err := w.unverified(j, res, !w.cfg.createOnly); err != nil {
				return err
			}
			w.takeNotes(res)
			return w.finish(res)
		}
	}
	if herr != nil {
		return w.fail(w.nothingLanded(cause, herr))
	}
	e := w.errorf(sperrors.Precondition, "Complete", cause, "an object already exists at the key and is not the one written; it was left untouched")
	if ce := asError(cause); ce != nil {
		e.StatusCode, e.Code, e.RequestID = ce.StatusCode, ce.Code, ce.RequestID
	}
	return w.fail(e)
}

// verifyLanded compares the committed object with what was written. A mismatch is an Integrity
// error, and the bad object is deleted (it is ours, and must not be read as good data).
func (w *Writer) verifyLanded(want verify.Expected, res *Result) error {
	head, err := w.headWithChecksum()
	if err != nil {
		return w.fail(err)
	}
	j := w.judge(want, head, res.Multipart)
	method, verr := j.method, j.mismatch
	w.emit(Event{Type: EventVerify, Size: want.Size, Method: method, Err: verr})
	if verr == nil && !method.Strong() {
		if err := w.unverified(j, res, true); err != nil {
			return err
		}
		if res.ETag == "" {
			res.ETag = head.ETag
		}
		w.takeNotes(res)
		return w.finish(res)
	}
	if verr != nil {
		e := w.integrity("Verify", 0, verr)
		if derr := w.deleteObject(); derr != nil {
			e.Message += "; the corrupt object could not be deleted: " + derr.Error()
		} else {
			e.Message += "; the corrupt object was deleted"
		}
		return w.fail(e)
	}
	res.Verified, res.VerifiedStrong = method, method.Strong()
	if res.ETag == "" {
		res.ETag = head.ETag
	}
	w.takeNotes(res)
	return w.finish(res)
}

// readBack re-reads the whole object and compares length and CRC.
func (w *Writer) readBack(want verify.Expected) (verify.Method, error) {
	alg := want.Checksum.Algorithm
	if alg == store.ChecksumNone || !verify.IsCRC(alg) {
		alg = store.ChecksumCRC64NVME
	}
	var got uint64
	var n int64
	err := w.do("GetObject", 0, func(ctx context.Context, _ int) error {
		out, err := w.st.GetObject(ctx, &store.GetObjectInput{Bucket: w.bucket, Key: w.key})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		c, _ := verify.NewCRC(alg)
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
		return "", &verify.Mismatch{What: "read-back length", Want: fmt.Sprint(want.Size), Got: fmt.Sprint(n)}
	}
	if want.Checksum.Algorithm == alg && verify.EncodeCRCValue(alg, got) != want.Checksum.Value {
		return "", &verify.Mismatch{What: "read-back " + string(alg), Want: want.Checksum.Value, Got: verify.EncodeCRCValue(alg, got)}
	}
	if want.Checksum.Algorithm != alg {
		// No checksum was computed while writing; compare with the parts' combined value.
		return verify.MethodLengthOnly, nil
	}
	return verify.MethodReadBack, nil
}

func (w *Writer) finish(res *Result) error {
	w.mu.Lock()
	res.BytesSent = w.bytesSent.Load()
	res.Requests = w.stats.Attempts
	res.Failures = make(map[sperrors.Kind]int, len(w.stats.ByKind))
	for k, v := range w.stats.ByKind {
		res.Failures[k] = v
	}
	res.UploadAttempts = 1
	res.Elapsed = time.Since(w.start)
	w.result = res
	w.mu.Unlock()
	w.emit(Event{Type: EventDone, Size: res.Size, Method: res.Verified, BytesDone: res.Size, Elapsed: res.Elapsed})
	w.log.Debug("write landed", zap.Int64("size", res.Size), zap.Int("parts", res.Parts),
		zap.String("verified", string(res.Verified)), zap.Bool("already_existed", res.AlreadyExisted))
	return nil
}

// cleanup runs after a failed commit: stop parts, release buffers, abort the upload.
func (w *Writer) cleanup(err error) error {
	w.cancel()
	w.wg.Wait()
	w.releaseHeld()
	if aerr := w.abortUpload(w.ctx); aerr != nil {
		err = annotated(err, func(e *sperrors.Error) {
			e.AbortFailed = true
			e.UploadID = aerr.UploadID
		})
	}
	return err
}

// annotated returns a copy of err's *Error changed by fn. Errors are values: err may be the sticky
// error an earlier Write already returned to the caller, which must not change under them.
func annotated(err error, fn func(*sperrors.Error)) error {
	e := asError(err)
	if e == nil {
		return err
	}
	c := *e
	fn(&c)
	return &c
}

func (w *Writer) releaseHeld() {
	if w.buf != nil {
		w.release(w.buf)
		w.buf = nil
	}
	if w.pending != nil {
		w.release(w.pending)
		w.pending = nil
	}
}

// abortUpload aborts the open upload, if any, on a context detached from the caller's (whose
// cancellation is often why we are here) with its own deadline and retries. A part request still
// in flight at the store when the abort lands can re-create the upload (S3 documents this: "it
// might be necessary to abort a given multipart upload multiple times"), so the abort is
// confirmed with ListParts and repeated until the upload is gone.
func (w *Writer) abortUpload(parent context.Context) *sperrors.Error {
	id := w.currentUploadID()
	if id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), w.cfg.abortTimeout)
	defer cancel()
	err := w.abortConfirmed(ctx, id)
	w.emit(Event{Type: EventAbort, UploadID: id, Err: err})
	if err != nil {
		w.log.Error("abort failed: incomplete upload left behind", zap.String("upload_id", id), zap.Error(err))
		e := asError(err)
		if e == nil {
			e = &sperrors.Error{Kind: sperrors.Transient, Err: err}
		}
		e.AbortFailed, e.UploadID, e.Bucket, e.Key = true, id, w.bucket, w.key
		return e
	}
	w.log.Debug("upload aborted", zap.String("upload_id", id))
	w.mu.Lock()
	w.uploadID = ""
	w.mu.Unlock()
	return nil
}

// abortRounds bounds how often an upload that keeps reappearing is aborted again.
const abortRounds = 5

func (w *Writer) abortConfirmed(ctx context.Context, id string) error {
	var err error
	for round := 1; round <= abortRounds; round++ {
		_, err = w.policy.Do(ctx, retry.Op{Name: "AbortMultipartUpload", Bucket: w.bucket, Key: w.key, UploadID: id},
			func(ctx context.Context, _ int) error {
				err := w.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: w.bucket, Key: w.key, UploadID: id})
				if isNoSuchUpload(err) {
					return nil // already gone
				}
				return err
			})
		if err != nil {
			return err
		}
		// Give a part request the store is still finishing time to land, then look.
		select {
		case <-time.After(time.Duration(round) * 20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		if !w.uploadStillListed(ctx, id) {
			return nil
		}
		w.log.Warn("upload still listed after abort: aborting again", zap.String("upload_id", id), zap.Int("round", round))
	}
	return &sperrors.Error{Kind: sperrors.Transient, Op: "AbortMultipartUpload", Message: fmt.Sprintf("upload still present after %d aborts", abortRounds)}
}

// uploadStillListed reports whether ListParts still finds the upload after an abort. Any error
// (404 NoSuchUpload, or a store that cannot say) counts as gone: the abort itself was accepted.
func (w *Writer) uploadStillListed(ctx context.Context, id string) bool {
	_, err := w.st.ListParts(ctx, &store.ListPartsInput{Bucket: w.bucket, Key: w.key, UploadID: id})
	return err == nil
}

// sweepLostCreates aborts uploads a CreateMultipartUpload left behind when its answer was lost
// (the store created an upload we never heard of, and the retry created another). Only uploads
// for exactly this key, started during our create attempts, with no parts, and not ours are
// touched: a concurrent writer's upload of the same key would have parts or another start time.
func (w *Writer) sweepLostCreates() (leftBehind []string) {
	w.mu.Lock()
	ambiguous, from, to, ours := w.createAmbiguous, w.createStart, w.createEnd, w.uploadIDs
	w.mu.Unlock()
	if !ambiguous {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), w.cfg.abortTimeout)
	defer cancel()
	out, err := w.st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: w.bucket, Prefix: w.key})
	if err != nil {
		w.log.Warn("could not look for uploads a lost CreateMultipartUpload answer left", zap.Error(err))
		return nil
	}
	const skew = time.Minute // clocks of client and store differ
	for _, u := range out.Uploads {
		if u.Key != w.key || ours[u.UploadID] {
			continue
		}
		if !u.Initiated.IsZero() && (u.Initiated.Before(from.Add(-skew)) || u.Initiated.After(to.Add(skew))) {
			continue
		}
		parts, err := w.st.ListParts(ctx, &store.ListPartsInput{Bucket: w.bucket, Key: w.key, UploadID: u.UploadID})
		if err != nil || len(parts.Parts) > 0 {
			continue
		}
		if err := w.abortConfirmed(ctx, u.UploadID); err != nil {
			w.log.Warn("could not abort an upload a lost CreateMultipartUpload answer left", zap.String("upload_id", u.UploadID), zap.Error(err))
			leftBehind = append(leftBehind, u.UploadID)
			continue
		}
		w.log.Info("aborted an upload a lost CreateMultipartUpload answer left", zap.String("upload_id", u.UploadID))
	}
	return leftBehind
}

func (w *Writer) deleteObject() error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), w.cfg.abortTimeout)
	defer cancel()
	_, err := w.policy.Do(ctx, retry.Op{Name: "DeleteObject", Bucket: w.bucket, Key: w.key}, func(ctx context.Context, _ int) error {
		return w.st.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: w.bucket, Key: w.key})
	})
	return err
}

// do runs one store operation under the retry policy and folds its stats into the writer's.
func (w *Writer) do(op string, part int32, fn func(ctx context.Context, attempt int) error) error {
	return w.doSized(op, part, 0, fn)
}

// doSized is do for a request with a body of size bytes (logged with every retry).
func (w *Writer) doSized(op string, part int32, size int64, fn func(ctx context.Context, attempt int) error) error {
	uploadID := w.currentUploadID()
	var last error
	stats, err := w.policy.Do(w.ctx, retry.Op{Name: op, Bucket: w.bucket, Key: w.key, UploadID: uploadID, PartNumber: part, Size: size},
		func(ctx context.Context, attempt int) error {
			if attempt > 1 {
				// The event says why this attempt is a retry: the previous attempt's failure.
				w.emit(Event{Type: EventRetry, UploadID: uploadID, PartNumber: part, Size: size, Attempt: attempt,
					Kind: sperrors.ClassifyCtx(w.ctx, last).Kind, Err: last})
			}
			last = fn(ctx, attempt)
			return last
		})
	w.mu.Lock()
	w.stats.Add(stats)
	w.mu.Unlock()
	if err != nil {
		if e := asError(err); e != nil {
			if e.Bucket == "" && e.Key == "" {
				e.Bucket, e.Key = w.bucket, w.key
			}
			if e.UploadID == "" {
				e.UploadID = uploadID
			}
			if e.PartNumber == 0 {
				e.PartNumber = part
			}
		}
		w.log.Debug("operation failed", zap.String("op", op), zap.Int32("part", part), zap.Int64("size", size),
			zap.String("upload_id", uploadID), zap.Int("attempt", stats.Attempts), zap.Error(err))
	}
	return err
}

// fail records the first error (sticky) and cancels in-flight work; it returns the sticky error.
func (w *Writer) fail(err error) error {
	if err == nil {
		return nil
	}
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	first := w.err
	w.mu.Unlock()
	w.cancel()
	return first
}

func (w *Writer) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) currentUploadID() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.uploadID
}

func (w *Writer) errorf(k sperrors.Kind, op string, cause error, format string, args ...any) *sperrors.Error {
	return &sperrors.Error{Kind: k, Op: op, Bucket: w.bucket, Key: w.key, UploadID: w.currentUploadID(), Message: fmt.Sprintf(format, args...), Err: cause}
}

func (w *Writer) integrity(op string, part int32, cause error) *sperrors.Error {
	e := w.errorf(sperrors.Integrity, op, cause, "%v", cause)
	e.PartNumber = part
	return e
}

// sourceError classifies a failure to read the caller's source: Canceled when it is the
// context ending (a reader that honours ctx), else Permanent (retrying the store cannot help).
func (w *Writer) sourceError(op string, part int32, err error) *sperrors.Error {
	if w.ctx.Err() != nil || stderrors.Is(err, context.Canceled) || stderrors.Is(err, context.DeadlineExceeded) {
		e := w.canceled(op, err)
		e.PartNumber = part
		return e
	}
	e := w.errorf(sperrors.Permanent, op, err, "reading the source failed")
	e.PartNumber = part
	return e
}

func (w *Writer) canceled(op string, cause error) *sperrors.Error {
	return w.errorf(sperrors.Canceled, op, cause, "the write's context ended")
}

// recoverTo turns a panic in a part goroutine into an Internal error instead of a crash.
func (w *Writer) recoverTo(op string, part int32) {
	if r := recover(); r != nil {
		e := w.errorf(sperrors.Internal, op, nil, "recovered panic: %v", r)
		e.PartNumber = part
		w.log.Error("panic recovered", zap.String("op", op), zap.Int32("part", part), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		_ = w.fail(e)
	}
}

func (w *Writer) emit(e Event) {
	if w.cfg.observer == nil {
		return
	}
	e.Bucket, e.Key = w.bucket, w.key
	defer func() { _ = recover() }() // an observer's panic must not break the write
	w.cfg.observer(e)
}

func asError(err error) *sperrors.Error {
	var e *sperrors.Error
	if stderrors.As(err, &e) {
		return e
	}
	return nil
}

func isPrecondition(err error) bool {
	e := asError(err)
	return e != nil && e.Kind == sperrors.Precondition
}

func isNoSuchUpload(err error) bool { return hasCode(err, "NoSuchUpload") }

func hasCode(err error, code string) bool {
	if err == nil {
		return false
	}
	if e := asError(err); e != nil && e.Code == code {
		return true
	}
	var re *store.ResponseError
	return stderrors.As(err, &re) && re.Code == code
}

func classifyRule(op, bucket, key string, err error) error {
	var re *multipart.RuleError
	kind := sperrors.Permanent
	if stderrors.As(err, &re) {
		kind = sperrors.Compatibility
	}
	return &sperrors.Error{Kind: kind, Op: op, Bucket: bucket, Key: key, Message: err.Error(), Err: err}
}
