package main

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"golang.org/x/term"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/writer"
)

type putOpts struct {
	createOnly      bool
	readBack        bool
	allowLengthOnly bool
	contentType     string
	expectedSize    string
	noProgress      bool
	noCache         bool
	journal         string
	sse             frontend.SSE
	// allowSSECOverHTTP: --allow-sse-c-over-http.
	allowSSECOverHTTP bool
}

func (a *app) putCmd() *cobra.Command {
	var o putOpts
	cmd := &cobra.Command{
		Use:   "put FILE|- s3://bucket/key",
		Short: "Upload a file or stdin; exit 0 only when it landed and verified",
		Long: `Upload FILE (or stdin with -) to s3://bucket/key. A file is sent part by part straight from
disk (known size); stdin is streamed (unknown size: use --expected-size for streams above
~150 GiB). After commit the object is checked against the store (HEAD: length and checksum;
--read-back re-reads it in full). Ctrl-C aborts the upload cleanly and exits 8.

` + exitCodesHelp,
		Example: `  safeput put --endpoint http://127.0.0.1:9000 --path-style backup.tar s3://bucket/backups/backup.tar
  pg_dump db | safeput put --provider r2 - s3://bucket/dumps/db.sql
  safeput put --create-only --json report.parquet s3://bucket/reports/2025/report.parquet`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runPut(cmd.Context(), o, args[0], args[1]) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.createOnly, "create-only", false, "fail with exit 7 if another object is already at the key (If-None-Match: *); these very bytes already there are success")
	f.BoolVar(&o.readBack, "read-back", false, "after commit, re-read the whole object and compare its checksum")
	f.BoolVar(&o.allowLengthOnly, "allow-length-only", false, "accept an object nothing could prove (no stored checksum, no MD5 ETag, too large to read back) on its length alone; without it that write fails with exit 5 (Unverifiable) and the object is deleted")
	f.StringVar(&o.contentType, "content-type", "", "Content-Type of the object")
	f.StringVar(&o.expectedSize, "expected-size", "", "for stdin: the largest size the stream may reach (sizes the parts)")
	f.BoolVar(&o.noProgress, "no-progress", false, "never show the progress bar")
	f.BoolVar(&o.noCache, "no-endpoint-cache", false, "neither read nor keep what earlier runs learned about the endpoint (kept under $XDG_CACHE_HOME/safeput, else ~/.cache/safeput, for a day: whether it checks part checksums, which spares the probe that asks and, where it does, the parts' MD5s)")
	f.StringVar(&o.journal, "journal", "", "record the upload in this directory (created if missing) so `safeput recover` can settle it after a crash, and resume a journaled upload of the same file")
	f.StringVar(&o.sse.Type, "sse", "", "server-side encryption: AES256 (SSE-S3) or aws:kms (SSE-KMS); after commit the HEAD must show it, else exit 6 (EncryptionNotApplied) and the object is deleted")
	f.StringVar(&o.sse.KMSKeyID, "sse-kms-key-id", "", "with --sse aws:kms: the KMS key (default: the store's); the HEAD must name it")
	f.StringVar(&o.sse.KMSContext, "sse-kms-encryption-context", "", `with --sse aws:kms: the encryption context, a JSON object of strings, e.g. {"app":"backup"}`)
	f.BoolVar(&o.sse.BucketKey, "bucket-key-enabled", false, "with --sse aws:kms: ask for an S3 Bucket Key")
	f.StringVar(&o.sse.CustomerKeyFile, "sse-c-key-file", "", "SSE-C: a file holding the 32-byte customer key (raw or base64); the key is sent on every request, never printed or journaled, and recover needs it again; refused (exit 2) to an http:// endpoint")
	f.BoolVar(&o.allowSSECOverHTTP, "allow-sse-c-over-http", false, "send the SSE-C key to a plain http:// endpoint anyway, in the clear (a test store on loopback); warned about on stderr")
	return cmd
}

// sourceError is a failure to read the local source (not the store's fault): exit 2.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return "reading the source failed: " + e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

func (a *app) runPut(ctx context.Context, o putOpts, src, dst string) error {
	u, err := parseS3URL(dst, true)
	if err != nil {
		return err
	}
	// Open the source before contacting the store: bad input must send nothing.
	var (
		r    io.Reader
		size int64 = -1
		name       = src
	)
	if src == "-" {
		name = "stdin"
		fi, err := a.stdin.Stat()
		if err != nil {
			return usageErr("cannot read stdin: %v", err)
		}
		if fi.IsDir() {
			return usageErr("cannot read stdin: it is a directory")
		}
		// Stdin is streamed as unknown length even when redirected from a file; Ctrl-C must
		// interrupt a Read blocked on a slow pipe (streamReader).
		var release func()
		r, release = streamReader(ctx, a.stdin)
		defer release()
	} else {
		f, err := os.Open(src)
		if err != nil {
			return usageErr("cannot open %s: %v", src, unwrapPathErr(err))
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return usageErr("cannot stat %s: %v", src, err)
		}
		if fi.IsDir() {
			return usageErr("%s is a directory, not a file", src)
		}
		if fi.Mode().IsRegular() {
			r, size = f, fi.Size() // *os.File: a ReaderAt of known size, parts read straight from it
		} else {
			var release func()
			r, release = streamReader(ctx, f) // a FIFO or device: stream it
			defer release()
		}
	}
	uc, err := a.uploadOptions(size)
	if err != nil {
		return err
	}
	opts := uc.opts
	var expectedMax int64
	if o.expectedSize != "" {
		n, err := bytesize.Parse(o.expectedSize)
		if err != nil {
			return usageErr("--expected-size: %v", err)
		}
		expectedMax = n
		opts = append(opts, func(o *writer.Options) { o.ExpectedMaxSize = n })
	}
	a.limitGC(uc.rules, size, uc.partSize, expectedMax)
	if o.createOnly {
		opts = append(opts, func(o *writer.Options) { o.CreateOnly = true })
	}
	if o.readBack {
		opts = append(opts, func(o *writer.Options) { o.ReadBack = true })
	}
	if o.allowLengthOnly {
		opts = append(opts, func(o *writer.Options) { o.AllowWeakVerification = true })
	}
	if o.contentType != "" {
		opts = append(opts, func(wo *writer.Options) { wo.ContentType = o.contentType })
	}
	enc, err := o.sse.Encryption()
	if err != nil {
		return usageErr("encryption flags: %v", err)
	}
	if enc.Type != "" {
		opts = append(opts, func(o *writer.Options) { o.Encryption = enc })
	}
	st, endpoint, err := a.journalStore()
	if err != nil {
		return err
	}
	if err := a.checkSSECTransport(st, enc.Type == store.SSEC, o.allowSSECOverHTTP); err != nil {
		return err
	}
	if o.allowSSECOverHTTP {
		opts = append(opts, func(o *writer.Options) { o.AllowSSECOverHTTP = true })
	}
	if o.journal != "" {
		// Made here, not at the first record, so a path that cannot hold a journal is a usage
		// error before anything is sent.
		if err := os.MkdirAll(o.journal, 0o700); err != nil {
			return usageErr("--journal: %v", err)
		}
		opts = append(opts, func(wo *writer.Options) { wo.JournalDir, wo.JournalEndpoint = o.journal, endpoint })
	}
	var bar *progress
	if !o.noProgress && isTerminal(a.stderr) {
		bar = newProgress(a.stderr, u.Key, size)
		opts = append(opts, func(o *writer.Options) { o.Observer = bar.observe })
	}
	// OTLP export when the standard variables ask for it; what was recorded is flushed before
	// the command reports, so a short run's spans and metrics reach the collector.
	// A variable it cannot honour is printed whatever the log level: the user asked for an export.
	instrument, flushTelemetry, err := telemetry(ctx, func(msg string, err error) {
		_, _ = fmt.Fprintf(a.stderr, "safeput: warning: %s: %s\n", msg, oneLine(err))
	})
	if err != nil {
		return usageErr("OpenTelemetry export (OTEL_* variables): %v", err)
	}
	defer func() {
		if ferr := flushTelemetry(); ferr != nil {
			a.log.Warn("OpenTelemetry export failed", zap.String("error", oneLine(ferr)))
		}
	}()
	if instrument != nil {
		opts = append(opts, instrument)
	}
	if a.hugePages {
		opts = append(opts, func(o *writer.Options) { o.HugePages = true })
	}
	if dir := endpointCacheDir(); dir != "" && !o.noCache {
		// One write per run: without the cache each run would learn the endpoint afresh.
		opts = append(opts, func(o *writer.Options) { o.EndpointCache = dir })
	}
	// One write per run: the Uploader holds the run's policy, logger, journal and observer.
	up, err := writer.NewUploader(st, opts...)
	if err != nil {
		return usageErr("%v", err) // uploadOptions checked the rest; a --journal directory that breaks the journal's rules fails here
	}
	res, err := up.Upload(ctx, u.Bucket, u.Key, r)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		var se *sourceError
		if stderrors.As(err, &se) && ctx.Err() == nil {
			err = withCode(exitUsage, fmt.Errorf("cannot read %s: %w (nothing was uploaded)", name, se.err))
		}
		if ctx.Err() != nil {
			err = withCode(exitCanceled, fmt.Errorf("cancelled: %w", err))
		}
		if a.g.json {
			_ = a.printJSON(newJSONError(ctx, err))
		}
		return err
	}
	if a.g.json {
		return a.printJSON(putJSON{jsonResult: jsonResultOf(res), ResumedParts: res.ResumedParts, ResumedBytes: res.ResumedBytes})
	}
	printResult(a.stdout, res)
	return nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if stderrors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// jsonResult is writer.Result for machines.
type jsonResult = frontend.JSONResult

func jsonResultOf(r *writer.Result) jsonResult { return frontend.ResultJSON(r) }

// failureSummary renders Result.Failures as "throttled=2 integrity=1", or "none".
func failureSummary(m map[sperrors.Kind]int) string {
	var parts []string
	for k, n := range m {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k.String(), n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// evidenceFrom says which answer verified the write (Result.VerifiedBy), for the verified line.
func evidenceFrom(by string) string {
	switch by {
	case "PutObject", "CompleteMultipartUpload":
		return ", from the " + by + " answer (no HEAD)"
	case "HeadObject":
		return ", from the HEAD after commit"
	case "GetObject":
		return ", from a read-back"
	}
	return ""
}

func printResult(w io.Writer, r *writer.Result) {
	_, _ = fmt.Fprintf(w, "landed s3://%s/%s\n", r.Bucket, r.Key)
	_, _ = fmt.Fprintf(w, "  size       %s (%d bytes)\n", bytesize.Format(r.Size), r.Size)
	strength := "strong"
	if !r.VerifiedStrong {
		strength = "WEAK: length only, a changed byte would not be seen"
	}
	_, _ = fmt.Fprintf(w, "  verified   %s (%s)%s\n", r.Verified, strength, evidenceFrom(r.VerifiedBy))
	for _, m := range r.Unproven {
		_, _ = fmt.Fprintf(w, "  unproven   %s (accepted by --allow-length-only)\n", m)
	}
	for _, n := range r.Notes {
		_, _ = fmt.Fprintf(w, "  note       %s\n", n)
	}
	if !r.Checksum.IsZero() {
		_, _ = fmt.Fprintf(w, "  checksum   %s %s\n", r.Checksum.Algorithm, r.Checksum.Value)
	}
	if !r.Encryption.IsZero() {
		_, _ = fmt.Fprintf(w, "  encryption %s (reported by the store's HEAD)\n", r.Encryption)
	}
	_, _ = fmt.Fprintf(w, "  etag       %s\n", r.ETag)
	switch {
	case r.AlreadyExisted:
	case r.Multipart:
		_, _ = fmt.Fprintf(w, "  layout     multipart, %d parts of %s (upload %s)\n", r.Parts, bytesize.Format(r.PartSize), r.UploadID)
	default:
		_, _ = fmt.Fprintf(w, "  layout     single PUT\n")
	}
	_, _ = fmt.Fprintf(w, "  sent       %s in %d requests; failed requests: %s; upload attempts: %d\n",
		bytesize.Format(r.BytesSent), r.Requests, failureSummary(r.Failures), r.UploadAttempts)
	if r.ResumedParts > 0 {
		_, _ = fmt.Fprintf(w, "  resumed    %d parts (%s) reused from the journaled upload of a crashed run\n", r.ResumedParts, bytesize.Format(r.ResumedBytes))
	}
	switch {
	case r.AlreadyExisted && r.ResumedParts > 0:
		_, _ = fmt.Fprintf(w, "  note       the crashed run's Complete had landed this exact object; nothing new was written\n")
	case r.AlreadyExisted && r.CommitAnswerLost:
		_, _ = fmt.Fprintf(w, "  note       this exact object was at the key after a commit whose answer was lost: most likely this write's own\n")
	case r.AlreadyExisted:
		_, _ = fmt.Fprintf(w, "  note       this exact object was already at the key before this write; nothing new was written\n")
	}
	for _, id := range r.LeftBehind {
		_, _ = fmt.Fprintf(w, "  LEFT       incomplete upload %s (a lost create answer; its abort failed): `safeput sweep s3://%s/%s` lists it\n", id, r.Bucket, r.Key)
	}
	if r.MaybeLeftBehind {
		_, _ = fmt.Fprintf(w, "  LEFT?      an empty incomplete upload may remain (see the note): `safeput sweep s3://%s/%s` lists it\n", r.Bucket, r.Key)
	}
	_, _ = fmt.Fprintf(w, "  elapsed    %s\n", r.Elapsed.Round(time.Millisecond))
}

// streamReader returns the reader a stream source is read through, one that returns once ctx
// ends, and what to call when done with it: a directReader for a pipe, FIFO, socket or regular
// file (read straight into the part buffers), a ctxReader for anything else (a terminal, a
// device).
func streamReader(ctx context.Context, f *os.File) (io.Reader, func()) {
	if p, release, ok := newDirectReader(ctx, f); ok {
		return p, release
	}
	return newCtxReader(ctx, f), func() {}
}

// ctxReader reads r in a goroutine of its own so that Read returns as soon as ctx ends, even
// while the underlying Read is blocked on a slow pipe. The goroutine reads into its own buffers,
// never into the caller's, so an abandoned Read cannot write into a buffer the writer reuses.
// Its two buffers take turns (one is filled while the caller copies out of the other), so a
// stream of any length costs no allocation after the first two reads.
type ctxReader struct {
	ctx  context.Context
	ch   chan chunk
	free chan []byte // buffers the caller has copied out of, back to the reading goroutine
	held []byte      // the whole buffer c.cur points into, returned once c.cur is drained
	cur  []byte
	err  error
}

type chunk struct {
	b   []byte
	err error
}

// ctxReadBuffers is how many buffers a ctxReader cycles through: one being filled, one drained.
const ctxReadBuffers = 2

func newCtxReader(ctx context.Context, r io.Reader) *ctxReader {
	c := &ctxReader{ctx: ctx, ch: make(chan chunk, 1), free: make(chan []byte, ctxReadBuffers)}
	for range ctxReadBuffers {
		c.free <- make([]byte, 256<<10)
	}
	go func() {
		for {
			var buf []byte
			select {
			case buf = <-c.free:
			case <-ctx.Done():
				return
			}
			n, err := r.Read(buf)
			select {
			case c.ch <- chunk{buf[:n], err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *ctxReader) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.held != nil {
			// Never blocks: the channel has room for every buffer.
			c.free <- c.held[:cap(c.held)]
			c.held = nil
		}
		if c.err != nil {
			return 0, c.err
		}
		select {
		case <-c.ctx.Done():
			return 0, c.ctx.Err()
		case ch := <-c.ch:
			c.cur, c.held = ch.b, ch.b
			switch {
			case stderrors.Is(ch.err, io.EOF):
				c.err = io.EOF
			case ch.err != nil:
				c.err = &sourceError{ch.err}
			}
		}
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

// progress is the stderr progress bar, driven by the writer's events.
type progress struct {
	bar     *progressbar.ProgressBar
	key     string
	retries atomic.Int64
}

func newProgress(w io.Writer, key string, size int64) *progress {
	p := &progress{key: key}
	p.bar = progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(key),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	)
	return p
}

// observe must be quick and safe for concurrent use (writer.Options.Observer); the bar locks itself.
func (p *progress) observe(e writer.Event) {
	switch e.Type {
	case writer.EventPartDone:
		_ = p.bar.Set64(e.BytesDone)
	case writer.EventRetry:
		n := p.retries.Add(1)
		p.bar.Describe(fmt.Sprintf("%s (retries: %d)", p.key, n))
	case writer.EventDone:
		_ = p.bar.Set64(e.Size)
	}
}

func (p *progress) finish() { _ = p.bar.Finish() }

// endpointCacheDir is where runs keep what they learned about an endpoint:
// $XDG_CACHE_HOME/safeput/endpoints, else ~/.cache/safeput/endpoints; "" when there is no
// user cache directory.
func endpointCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil || d == "" {
		return ""
	}
	return filepath.Join(d, "safeput", "endpoints")
}
