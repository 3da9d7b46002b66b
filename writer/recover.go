package writer

import (
	"cmp"
	"context"
	"encoding/hex"
	stderrors "errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/integrity"
	"github.com/safeput/safeput/internal/journal"
	"github.com/safeput/safeput/internal/logredact"
	"github.com/safeput/safeput/retry"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
)

// RecoverOptions configures Recover.
type RecoverOptions struct {
	// Endpoint is the identity of st (as given to Options.JournalDir). Records of another endpoint are
	// left alone and reported as RecoverOtherEndpoint. Required.
	Endpoint string
	// Bucket, when set, restricts recovery to that bucket; records of others are reported as
	// RecoverOtherBucket and left alone.
	Bucket string
	// Prefix, when set, restricts recovery to the records whose key starts with it (it needs
	// Bucket); records of other keys are reported as "outside-prefix" and left alone. A
	// journal is a directory of files, and a record naming another endpoint, bucket or key is
	// never acted on: it may have been put there by someone else.
	Prefix string
	// DryRun reads (HEAD, ListParts, a read-back of an object the HEAD cannot prove) and reports
	// what it would do, changing nothing.
	DryRun bool
	// Policy runs every store request (default: the Uploader's; for the package function, a
	// retry.New() of its own).
	Policy *retry.Policy
	Logger *zap.Logger
	// Settle is how long Recover waits after its aborts before it looks again (default
	// 2 s; negative: no second look). A part request the dead writer had in
	// flight can still be finishing at the store when the abort lands, and some stores (Versity's
	// gateway among them) then re-create the upload to hold that part; the second look aborts it
	// again before the record is dropped.
	Settle time.Duration
	// ReadBackLimit is the largest object read back when a crashed write's Complete may have
	// landed and the HEAD cannot prove it either way (default 64 MiB, as Options.ReadBackLimit; negative:
	// never). A larger one is reported gone with a Note saying it was not proven.
	ReadBackLimit int64
	// SSECustomerKeys are the SSE-C keys of the journaled uploads (Options.Encryption, SSE-C): a record names its
	// key by MD5 only, and a store answers a HEAD of an SSE-C object only with the key. A record
	// whose intended object must be checked and whose key is not among them fails
	// (RecoverFailed) and is kept; one that was never completed is aborted without it.
	SSECustomerKeys [][]byte
	// AllowSSECOverHTTP lets Recover send SSECustomerKeys to a plain http:// endpoint, as
	// Options.AllowSSECOverHTTP does for writes (Uploader.Recover also takes the Uploader's);
	// without it, Recover given keys for such a store fails before anything is sent.
	AllowSSECOverHTTP bool
}

// recoverOutsidePrefix is the outcome of a record whose key is outside RecoverOptions.Prefix. It
// is not exported: the stable API's size is capped, and RecoverOutcome("outside-prefix") names it.
const recoverOutsidePrefix RecoverOutcome = "outside-prefix"

// defaultRecoverSettle is RecoverOptions.Settle's default.
const defaultRecoverSettle = 2 * time.Second

// RecoverOutcome is what Recover found (or did) for one record.
type RecoverOutcome string

// Outcomes. Landed, Aborted and Gone drop the record (not in a dry run); the others keep it.
const (
	// RecoverLanded: the intended object is at the key, verified by size and checksum (or MD5
	// ETag, or a read-back against the record's CRC): the Complete got through before the crash.
	RecoverLanded RecoverOutcome = "landed"
	// RecoverAborted: the upload did not land; it was aborted and the abort confirmed.
	RecoverAborted RecoverOutcome = "aborted"
	// RecoverWouldAbort: dry run; the upload did not land and would be aborted.
	RecoverWouldAbort RecoverOutcome = "would-abort"
	// RecoverGone: the upload no longer exists and the key does not hold the intended object
	// (aborted, or overwritten since): nothing to do but drop the record.
	RecoverGone RecoverOutcome = "gone"
	// RecoverInUse: a live writer holds the record; left alone.
	RecoverInUse RecoverOutcome = "in-use"
	// RecoverOtherEndpoint, RecoverOtherBucket: not this run's to touch (another endpoint, a
	// bucket other than RecoverOptions.Bucket); left alone, and Note says why. A key outside
	// RecoverOptions.Prefix is left alone the same way, as "outside-prefix".
	RecoverOtherEndpoint RecoverOutcome = "other-endpoint"
	RecoverOtherBucket   RecoverOutcome = "other-bucket"
	// RecoverFailed: a store request failed (Err says which), or the key holds the object the
	// upload's Complete assembled and it is not the intended one (Err: Integrity, ObjectLeft; a
	// part was damaged on the way and the dead writer never checked); the record is kept.
	RecoverFailed RecoverOutcome = "failed"
)

// RecoveredUpload is one record and its outcome.
type RecoveredUpload struct {
	// Endpoint, Bucket, Key and UploadID name the recorded upload (Endpoint as given to
	// Options.JournalDir).
	Endpoint, Bucket, Key, UploadID string
	// Size is the intended object's size when recorded, else the source size (-1 unknown).
	Size int64
	// Parts counts the parts the record holds.
	Parts   int
	Outcome RecoverOutcome
	Err     error
	// Note says what Recover could not prove: a gone record whose key holds an object of the
	// intended size that the HEAD could not tell from this write's commit and that was not read
	// back (larger than ReadBackLimit). For a record left alone as out of scope
	// (RecoverOtherEndpoint, RecoverOtherBucket, "outside-prefix") it says why.
	Note string
}

// RecoverReport is what Recover did.
type RecoverReport struct {
	DryRun  bool
	Uploads []RecoveredUpload
	// Problems are the journal's files that are not valid records, skipped: each an
	// *fs.PathError naming the file.
	Problems []error
	Counts   map[RecoverOutcome]int
}

// Recover settles every upload recorded in j for the store st: when the record's intended object
// is at the key, verified, the Complete landed before the crash and the record is dropped;
// otherwise the upload is aborted (confirmed with ListParts, and again after opts.Settle) and the
// record dropped. It touches only the uploads the valid records name: never another key, prefix
// or upload, never an object.
// A record a live writer holds, or one for another endpoint, bucket (opts.Bucket) or key
// (opts.Prefix), is left alone and reported; a file that is not a valid record is reported in
// Problems and skipped.
//
// The error is non-nil only when the journal cannot be listed; per-record failures are in the
// report (RecoverFailed) with their classified error.
//
// Recover is a shorthand for Uploader.Recover on a fresh Uploader of st (as New is) given
// Options.JournalDir = journalDir, JournalEndpoint = opts.Endpoint. journalDir must exist: a mistyped path fails rather
// than report an empty journal.
func Recover(ctx context.Context, st store.Store, journalDir string, opts RecoverOptions) (*RecoverReport, error) {
	if journalDir == "" {
		return nil, sperrors.New(sperrors.Permanent, "Recover", "no journal directory")
	}
	if err := journalDirReady(journalDir, false); err != nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Message: "cannot read the journal", Err: err}
	}
	return shorthand(st).recover(ctx, journal.At(journalDir), opts)
}

func (up *Uploader) recover(ctx context.Context, j journal.Journal, opts RecoverOptions) (*RecoverReport, error) {
	if ctx == nil || up.st == nil || j == nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Message: "nil context, store or journal"}
	}
	if opts.Endpoint == "" {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Message: "no endpoint identity: records are matched to the store by it"}
	}
	if opts.Prefix != "" && opts.Bucket == "" {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Message: "RecoverOptions.Prefix needs RecoverOptions.Bucket: a prefix names keys of one bucket"}
	}
	if opts.Policy == nil {
		opts.Policy = up.cfg.policy
	}
	opts.Logger = logredact.Logger(opts.Logger)
	if msg := up.sseCOverHTTP(len(opts.SSECustomerKeys) > 0, opts.AllowSSECOverHTTP || up.cfg.allowSSECOverHTTP, opts.Logger); msg != "" {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Message: msg}
	}
	if d, ok := j.(*journal.Dir); ok && opts.DryRun {
		j = d.ReadOnly() // a dry run creates no lock file
	}
	recs, problems, err := j.List()
	if err != nil {
		return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Message: "cannot list the journal", Err: err}
	}
	if opts.Settle == 0 {
		opts.Settle = defaultRecoverSettle
	}
	if opts.ReadBackLimit == 0 {
		opts.ReadBackLimit = defaultReadBackLimit
	}
	rep := &RecoverReport{DryRun: opts.DryRun, Counts: map[RecoverOutcome]int{}}
	var aborted []abortedRecord // records kept (claimed) until the second look
	for _, p := range problems {
		opts.Logger.Warn("journal file skipped", zap.String("path", p.Path), zap.Error(p.Err))
		rep.Problems = append(rep.Problems, &fs.PathError{Op: "read journal record", Path: p.Path, Err: p.Err})
	}
	for _, r := range recs {
		if ctx.Err() != nil {
			return rep, &sperrors.Error{Kind: sperrors.Canceled, Op: "Recover", Message: "recovery interrupted", Err: ctx.Err()}
		}
		u := RecoveredUpload{Endpoint: r.Endpoint, Bucket: r.Bucket, Key: r.Key, UploadID: r.UploadID, Size: r.SourceSize, Parts: len(r.Parts)}
		if r.Object != nil {
			u.Size = r.Object.Size
		}
		if out, why := outOfScope(r.ID, opts); out != "" {
			u.Outcome, u.Note = out, why
			rep.add(opts.Logger, r, u)
			continue
		}
		var ids []string
		u.Outcome, ids, u.Err = recoverOne(ctx, up, j, r.ID, recs, opts, &u.Note)
		if len(ids) > 0 {
			aborted = append(aborted, abortedRecord{rec: r, index: len(rep.Uploads), uploadIDs: ids})
			rep.Uploads = append(rep.Uploads, u)
			continue // logged and counted after the second look
		}
		rep.add(opts.Logger, r, u)
	}
	if len(aborted) > 0 {
		lookAgain(ctx, up, j, aborted, rep, opts)
	}
	return rep, nil
}

// outOfScope says why a record is not this run's to act on (another endpoint, bucket or key),
// or "" when it is. Only a record that names this endpoint, and the bucket and a key under the
// prefix when they are given, is claimed, looked at or aborted.
func outOfScope(id journal.ID, opts RecoverOptions) (RecoverOutcome, string) {
	switch {
	case id.Endpoint != opts.Endpoint:
		return RecoverOtherEndpoint, fmt.Sprintf("recorded for endpoint %q, not this store's %q: left alone", id.Endpoint, opts.Endpoint)
	case opts.Bucket != "" && id.Bucket != opts.Bucket:
		return RecoverOtherBucket, fmt.Sprintf("recorded for bucket %q, not %q: left alone", id.Bucket, opts.Bucket)
	case !strings.HasPrefix(id.Key, opts.Prefix):
		return recoverOutsidePrefix, fmt.Sprintf("key %q is not under prefix %q: left alone", id.Key, opts.Prefix)
	}
	return "", ""
}

// abortedRecord is a claimed record whose upload(s) Recover aborted; the record is dropped only
// after the second look finds them gone.
type abortedRecord struct {
	rec       journal.Record
	index     int // in RecoverReport.Uploads
	uploadIDs []string
}

func (rep *RecoverReport) add(log *zap.Logger, r journal.Record, u RecoveredUpload) {
	rep.Uploads = append(rep.Uploads, u)
	rep.settled(log, r, u)
}

// settled logs and counts a record's final outcome.
func (rep *RecoverReport) settled(log *zap.Logger, r journal.Record, u RecoveredUpload) {
	log.Info("journal record", zap.String("bucket", r.Bucket), zap.String("key", r.Key),
		zap.String("upload_id", r.UploadID), zap.Int64("size", u.Size), zap.String("outcome", string(u.Outcome)), zap.Error(u.Err))
	rep.Counts[u.Outcome]++
}

// dropRecord removes a settled record; the error says the upload was settled nonetheless.
func dropRecord(j journal.Journal, id journal.ID, outcome RecoverOutcome) error {
	if err := j.Remove(id); err != nil {
		return &sperrors.Error{Kind: sperrors.Permanent, Op: "Journal", Bucket: id.Bucket, Key: id.Key, UploadID: id.UploadID,
			Message: fmt.Sprintf("the upload was settled (%s) but its record could not be removed", outcome), Err: err}
	}
	return nil
}

// lookAgain waits opts.Settle once for all aborted records, then aborts again any upload the
// store lists anew (a part the dead writer had in flight re-created it), and only then drops the
// records. A record whose upload cannot be shown gone is kept and reported failed.
func lookAgain(ctx context.Context, up *Uploader, j journal.Journal, aborted []abortedRecord, rep *RecoverReport, opts RecoverOptions) {
	if opts.Settle > 0 {
		t := time.NewTimer(opts.Settle)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	for _, a := range aborted {
		u := &rep.Uploads[a.index]
		if err := reabort(ctx, up, a, opts); err != nil {
			u.Outcome, u.Err = RecoverFailed, err
			_ = j.Release(a.rec.ID)
		} else if err := dropRecord(j, a.rec.ID, u.Outcome); err != nil {
			u.Outcome, u.Err = RecoverFailed, err
		}
		rep.settled(opts.Logger, a.rec, *u)
	}
}

func reabort(ctx context.Context, up *Uploader, a abortedRecord, opts RecoverOptions) error {
	if ctx.Err() != nil {
		return &sperrors.Error{Kind: sperrors.Canceled, Op: "Recover", Bucket: a.rec.Bucket, Key: a.rec.Key, UploadID: a.rec.UploadID,
			Message: "recovery interrupted before the second look after the abort", Err: ctx.Err()}
	}
	w, err := recoveryWriter(ctx, up, a.rec, opts)
	if err != nil {
		return err
	}
	defer w.cancel()
	for _, id := range a.uploadIDs {
		if listed, _ := w.session.upload.stillListed(w.ctx, id); !listed {
			continue // gone, or the store cannot list parts: the first abort was taken
		}
		w.log.Warn("aborted upload listed again (a part the dead writer had in flight landed after the abort): aborting again", zap.String("upload_id", id))
		w.session.upload.adopt(id)
		if aerr := w.abortUpload(w.ctx); aerr != nil {
			return aerr
		}
	}
	return nil
}

// recoverOne settles one record. When it aborted uploads, it returns their ids and keeps the
// record claimed: the caller drops it after a second look (lookAgain).
func recoverOne(ctx context.Context, up *Uploader, j journal.Journal, id journal.ID, all []journal.Record, opts RecoverOptions, note *string) (RecoverOutcome, []string, error) {
	rec, err := j.Claim(id)
	switch {
	case stderrors.Is(err, journal.ErrInUse):
		return RecoverInUse, nil, nil
	case stderrors.Is(err, journal.ErrNotFound):
		return RecoverGone, nil, nil // settled by someone else since the listing
	case err != nil:
		return RecoverFailed, nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Journal", Bucket: id.Bucket, Key: id.Key, UploadID: id.UploadID, Message: "cannot claim the record", Err: err}
	}
	var outcome RecoverOutcome
	var aborted []string
	if rec.Creating {
		outcome, aborted, err = settleCreating(ctx, up, j, rec, all, opts)
	} else {
		outcome, aborted, err = settle(ctx, up, rec, opts, note)
	}
	if outcome == RecoverFailed || outcome == RecoverWouldAbort || outcome == RecoverInUse || opts.DryRun {
		_ = j.Release(id)
		return outcome, nil, err
	}
	if len(aborted) > 0 && opts.Settle > 0 {
		return outcome, aborted, nil
	}
	if err := dropRecord(j, id, outcome); err != nil {
		return RecoverFailed, nil, err
	}
	return outcome, nil, nil
}

// recoveryWriter is a Writer used only for its request and abort machinery (retries, stall
// detection, confirmed abort) on one record's key. It sends no part, so it takes the default
// part size: the record's may be one only its writer's profile allows (1 MiB parts where the
// default profile wants 5), and refusing it would leave that upload unsettled for ever.
func recoveryWriter(ctx context.Context, up *Uploader, rec journal.Record, opts RecoverOptions) (*Writer, error) {
	cfg := config{
		layoutConfig: layoutConfig{rules: defaultConfig().rules, partSize: DefaultPartSize, concurrency: 1, sizeHint: -1, checksumSet: true},
		runConfig:    runConfig{policy: opts.Policy, logger: opts.Logger, abortTimeout: defaultAbortTimeout},
	}
	if rec.SSECustomerKeyMD5 != "" {
		for _, k := range opts.SSECustomerKeys {
			if store.CustomerKey(k).MD5() == rec.SSECustomerKeyMD5 {
				cfg.sse = store.Encryption{Type: store.SSEC, CustomerKey: store.CustomerKey(k)}
			}
		}
		// Only a HEAD (or read-back) of the intended object needs the key; listing and aborting
		// an upload do not.
		if cfg.sse.Type == store.SSENone && rec.Object != nil {
			return nil, &sperrors.Error{Kind: sperrors.Permanent, Op: "Recover", Bucket: rec.Bucket, Key: rec.Key, UploadID: rec.UploadID,
				Message: fmt.Sprintf("the upload is SSE-C (key MD5 %s) and no key in RecoverOptions.SSECustomerKeys has that MD5: the object cannot be checked without it", rec.SSECustomerKeyMD5)}
		}
	}
	return up.newWriter(ctx, rec.Bucket, rec.Key, cfg)
}

// creatingWindow bounds when the upload of a Creating placeholder can have been initiated,
// around the placeholder's time: clocks differ, and the create may have been retried.
const (
	creatingSkew  = time.Minute
	creatingAfter = 15 * time.Minute
)

// settleCreating follows a placeholder a writer killed during CreateMultipartUpload left: an
// upload of exactly its key, with no parts (the writer sends none before journaling the real
// id), initiated around the placeholder's time, that no journal record names, is that writer's,
// and is aborted. While another writer's placeholder for the same key is claimed (its create is
// in progress), nothing is touched.
func settleCreating(ctx context.Context, up *Uploader, j journal.Journal, rec journal.Record, all []journal.Record, opts RecoverOptions) (RecoverOutcome, []string, error) {
	st := up.st
	named := map[string]bool{}
	for _, r := range all {
		named[r.UploadID] = true
		if r.Creating && r.ID != rec.ID && r.Endpoint == rec.Endpoint && r.Bucket == rec.Bucket && r.Key == rec.Key {
			if _, err := j.Claim(r.ID); err != nil {
				if stderrors.Is(err, journal.ErrInUse) {
					return RecoverInUse, nil, nil
				}
				continue
			}
			_ = j.Release(r.ID)
		}
	}
	w, err := recoveryWriter(ctx, up, rec, opts)
	if err != nil {
		return RecoverFailed, nil, err
	}
	defer w.cancel()
	var list *store.ListMultipartUploadsOutput
	if err := w.req.do("ListMultipartUploads", 0, func(ctx context.Context, _ int) (err error) {
		list, err = st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: rec.Bucket, Prefix: rec.Key})
		return err
	}); err != nil {
		if store.Unsupported(err) {
			// Not "nothing found": the store cannot say, so the placeholder is kept.
			err = annotated(err, func(e *sperrors.Error) {
				e.Message = joinMessage(e.Message, fmt.Sprintf("the store cannot list incomplete uploads (ListMultipartUploads answered %s): "+
					"the upload a writer killed during its create may have left cannot be looked for; the record is kept", unsupportedWhy(err)))
			})
		}
		return RecoverFailed, nil, err
	}
	from, to := rec.Created.Add(-creatingSkew), rec.Created.Add(creatingAfter)
	outcome := RecoverGone
	var aborted []string
	for _, u := range list.Uploads {
		if u.Key != rec.Key || named[u.UploadID] || (!u.Initiated.IsZero() && (u.Initiated.Before(from) || u.Initiated.After(to))) {
			continue
		}
		var parts *store.ListPartsOutput
		lerr := w.req.do("ListParts", 0, func(ctx context.Context, _ int) (err error) {
			parts, err = st.ListParts(ctx, &store.ListPartsInput{Bucket: rec.Bucket, Key: rec.Key, UploadID: u.UploadID})
			return err
		})
		switch {
		case lerr != nil && isNoSuchUpload(lerr):
			continue // gone since the listing
		case lerr != nil:
			// It may be the dead writer's: keep the placeholder rather than forget the upload.
			return RecoverFailed, nil, lerr
		case len(parts.Parts) > 0:
			continue // not the dead writer's: it had sent no part
		}
		if opts.DryRun {
			outcome = RecoverWouldAbort
			continue
		}
		w.log.Info("aborting the upload a writer killed during its create left", zap.String("upload_id", u.UploadID))
		w.session.upload.adopt(u.UploadID)
		if aerr := w.abortUpload(w.ctx); aerr != nil {
			return RecoverFailed, nil, aerr
		}
		outcome = RecoverAborted
		aborted = append(aborted, u.UploadID)
	}
	return outcome, aborted, nil
}

// settle decides (and, unless a dry run, acts on) one claimed record; note gets what it could not
// prove.
func settle(ctx context.Context, up *Uploader, rec journal.Record, opts RecoverOptions, note *string) (RecoverOutcome, []string, error) {
	st := up.st
	w, err := recoveryWriter(ctx, up, rec, opts)
	if err != nil {
		return RecoverFailed, nil, err
	}
	defer w.cancel()
	w.log = w.log.With(zap.String("upload_id", rec.UploadID))
	landed := false
	var damaged error // the key holds what this upload's Complete assembled, not the intended object
	unproven := ""    // the key holds an object the HEAD could not judge, not read back
	if rec.Object != nil {
		want := expectedOf(*rec.Object)
		var head *store.HeadObjectOutput
		herr := w.req.do("HeadObject", 0, func(ctx context.Context, _ int) error {
			h, err := st.HeadObject(ctx, &store.HeadObjectInput{Bucket: rec.Bucket, Key: rec.Key, ChecksumMode: true, SSECustomerKey: w.cfg.customerKey()})
			head = h
			return err
		})
		var re *store.ResponseError
		switch {
		case herr == nil:
			method, verr := integrity.CheckHead(want, head)
			landed = verr == nil && method.Strong()
			ours := isAssembledFrom(head.ETag, recordETags(rec))
			switch {
			case landed:
			case verr != nil && ours && partsShowDamage(rec):
				damaged = verr
			case head.Size == want.Size && readBackProves(want, opts.ReadBackLimit):
				// The HEAD did not decide it (no checksum of ours; an ETag that need not be an
				// MD5), but the record holds the object's CRC: read the object back (bounded
				// by the read-back limit) to prove it either way.
				m, rerr := w.verifier.readBack(want)
				var mm *integrity.Mismatch
				switch {
				case rerr == nil:
					landed = m == verify.MethodReadBack
				case stderrors.As(rerr, &mm) && ours:
					damaged = rerr
				case ours:
					return RecoverFailed, nil, rerr
				}
			case head.Size == want.Size && !integrity.Assess(want, head, false).ChecksumReported:
				// Nothing decided it, and the object was not read back: dropped as gone, but
				// the report says what was left unproven.
				unproven = fmt.Sprintf("the key holds an object of the intended size (%d bytes) that its HEAD cannot prove or disprove (no checksum of ours; an ETag that need not be an MD5), not read back", want.Size)
				if recordsCRC(want) {
					unproven += fmt.Sprintf(": larger than the read-back limit (%d bytes)", opts.ReadBackLimit)
				} else {
					unproven += ": the record holds no CRC of the whole object"
				}
				unproven += "; it may be this write's commit, unverified"
			}
		case stderrors.As(herr, &re) && re.StatusCode == 404:
		default:
			return RecoverFailed, nil, herr
		}
	}
	exists := true
	lerr := w.req.do("ListParts", 0, func(ctx context.Context, _ int) error {
		_, err := st.ListParts(ctx, &store.ListPartsInput{Bucket: rec.Bucket, Key: rec.Key, UploadID: rec.UploadID})
		if isNoSuchUpload(err) {
			exists = false
			return nil
		}
		return err
	})
	if lerr != nil {
		if store.Unsupported(lerr) {
			// Not "gone": the store cannot say whether the upload is still there.
			lerr = annotated(lerr, func(e *sperrors.Error) {
				e.Message = joinMessage(e.Message, fmt.Sprintf("the store does not support ListParts (%s): whether upload %s is still open cannot be told; the record is kept",
					unsupportedWhy(lerr), rec.UploadID))
			})
		}
		return RecoverFailed, nil, lerr
	}
	switch {
	case !exists && landed:
		return RecoverLanded, nil, nil
	case !exists && damaged != nil:
		// The dead writer's Complete landed a part damaged on the way, and it died before its
		// check. Not "gone": readers of the key see those bytes. Recover never touches an
		// object, so it says so and keeps the record until the key is rewritten.
		e := w.errs.integrity("Verify", 0, fmt.Errorf("the key holds the object this upload's Complete assembled, and it is not the object the crashed write intended: %w", damaged))
		e.ObjectLeft = true
		e.Message += "; rewrite the key (recover leaves objects alone)"
		return RecoverFailed, nil, e
	case !exists:
		*note = unproven
		return RecoverGone, nil, nil
	case opts.DryRun:
		return RecoverWouldAbort, nil, nil
	}
	// The upload is still open: nobody will complete it (its writer is dead: we hold the claim).
	w.session.upload.adopt(rec.UploadID)
	if aerr := w.abortUpload(w.ctx); aerr != nil {
		return RecoverFailed, nil, aerr
	}
	if landed {
		return RecoverLanded, []string{rec.UploadID}, nil // an identical object was there already; the stray upload is gone too
	}
	return RecoverAborted, []string{rec.UploadID}, nil
}

// readBackProves reports whether reading the object back can prove it: the record holds its
// full-object CRC, and it is within the read-back limit (negative: never read back).
func readBackProves(want integrity.Expected, limit int64) bool {
	return recordsCRC(want) && limit >= 0 && want.Size <= limit
}

// recordsCRC reports whether the record holds the object's full-object CRC, which a read-back
// can compare.
func recordsCRC(want integrity.Expected) bool {
	return integrity.IsCRC(want.Checksum.Algorithm) && want.Checksum.Value != ""
}

// partsShowDamage reports whether the record proves that a part was damaged on the way (see
// damagedParts).
func partsShowDamage(rec journal.Record) bool { return len(damagedParts(rec)) > 0 }

// damagedParts returns the parts the record proves were damaged on the way (integrity.DamagedByETag
// over the MD5s the writer computed and the ETags the store gave).
func damagedParts(rec journal.Record) map[int32]bool {
	sent := make([]integrity.Receipt, 0, len(rec.Parts))
	etags := make(map[int32]string, len(rec.Parts))
	for _, p := range rec.Parts {
		r := integrity.Receipt{PartNumber: p.Number, Size: p.Size}
		if sum, err := hex.DecodeString(p.MD5); err == nil && len(sum) == len(r.MD5) {
			copy(r.MD5[:], sum)
			r.HasMD5 = true
		}
		sent = append(sent, r)
		etags[p.Number] = p.ETag
	}
	return integrity.DamagedByETag(sent, func(n int32) string { return etags[n] })
}

// recordETags lists the ETags a record holds for its parts, in part order.
func recordETags(rec journal.Record) []string {
	parts := slices.Clone(rec.Parts)
	slices.SortFunc(parts, func(a, b journal.Part) int { return cmp.Compare(a.Number, b.Number) })
	etags := make([]string, len(parts))
	for i, p := range parts {
		etags[i] = p.ETag
	}
	return etags
}
