package main

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/frontend"
	"github.com/safeput/safeput/writer"
)

type recoverOpts struct {
	journal       string
	run           bool
	bucket        string
	readBackLimit string
	sseCKeyFiles  []string
	// allowSSECOverHTTP: --allow-sse-c-over-http, as put's.
	allowSSECOverHTTP bool
}

const recoverExitHelp = `Exit codes of recover:
  0  every record in scope was settled (--run) or listed (dry run), or the journal is empty;
     records left alone (in use, other endpoint, bucket or prefix) and skipped files are reported
  2  usage: no --journal or no scope; the directory is missing, unreadable, group- or
     world-writable or owned by another user; or SSE-C keys for an http:// endpoint without
     --allow-sse-c-over-http; nothing was touched
  3  a store request failed transiently after retries; those records are kept: run it again
  4  a store request failed permanently (credentials, permissions); those records are kept
  5  the key holds the object a crashed run's Complete assembled, damaged on the way (object
     left): that record is kept until the key is rewritten (recover never touches an object)
  8  cancelled (SIGINT/SIGTERM); records not yet settled are kept`

func (a *app) recoverCmd() *cobra.Command {
	var o recoverOpts
	cmd := &cobra.Command{
		Use:   "recover --journal DIR [--run] s3://bucket[/prefix]",
		Short: "Settle the uploads a crashed put --journal left: landed, or aborted",
		Long: `Read the upload journal in DIR (written by put --journal) and, for every upload recorded there
for this endpoint, in the bucket and under the prefix given, HEAD its key: when the object the
crashed run was completing is there,
verified by size and checksum, the upload landed and its record is dropped; otherwise the
upload is aborted (confirmed with ListParts, and looked at again 2 s later: a part the dead
process had in flight can re-create it) and its record dropped. Without --run it only says
what it would do. It touches only the uploads its records name: never another key, prefix or
upload, never an object. The scope s3://bucket[/prefix] is required (--bucket B is the same as
s3://B): a record is acted on only when it names this endpoint, that bucket and a key starting
with that prefix. A record another live process holds, or one for another endpoint, bucket or
prefix, is left alone and reported with why; a file that is not a valid record is skipped with
a warning naming it. To finish an interrupted upload instead of aborting it, run
the same put --journal again: it resumes.

` + recoverExitHelp,
		Example: `  safeput recover --journal /var/lib/ingest/journal s3://bucket/ingest/         # dry run
  safeput recover --journal /var/lib/ingest/journal --run s3://bucket/ingest/`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runRecover(cmd.Context(), o, args) },
	}
	f := cmd.Flags()
	f.StringVar(&o.journal, "journal", "", "the journal directory (required)")
	f.BoolVar(&o.run, "run", false, "act: drop landed records, abort the other uploads (default: dry run)")
	f.StringVar(&o.bucket, "bucket", "", "only records of this bucket (the same as the scope s3://BUCKET)")
	f.StringArrayVar(&o.sseCKeyFiles, "sse-c-key-file", nil, "the SSE-C key (a file, as put's) of journaled SSE-C uploads; repeat for several keys (a record names its key by MD5)")
	f.BoolVar(&o.allowSSECOverHTTP, "allow-sse-c-over-http", false, "send the --sse-c-key-file keys to a plain http:// endpoint anyway, in the clear; warned about on stderr")
	f.StringVar(&o.readBackLimit, "read-back-limit", "64MiB", "read back an object whose HEAD cannot prove it up to this size, e.g. 1GiB (0: never; unlimited)")
	return cmd
}

// putJSON is put's --json result: the landed object, and what a resumed upload reused from a
// journaled upload a crashed run left (--journal).
type putJSON struct {
	jsonResult
	ResumedParts int   `json:"resumed_parts"`
	ResumedBytes int64 `json:"resumed_bytes"`
}

type recoveredJSON struct {
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	UploadID string `json:"upload_id"`
	Endpoint string `json:"endpoint"`
	Size     int64  `json:"size"`
	Parts    int    `json:"parts"`
	Outcome  string `json:"outcome"`
	Error    string `json:"error,omitempty"`
	Note     string `json:"note,omitempty"`
}

type recoverJSON struct {
	Journal  string `json:"journal"`
	Endpoint string `json:"endpoint"`
	// Bucket and Prefix are the scope: only records of that bucket under that prefix are acted on.
	Bucket  string          `json:"bucket"`
	Prefix  string          `json:"prefix"`
	DryRun  bool            `json:"dry_run"`
	Counts  map[string]int  `json:"counts"`
	Uploads []recoveredJSON `json:"uploads"`
	Skipped []string        `json:"skipped_files"`
}

func (a *app) runRecover(ctx context.Context, o recoverOpts, args []string) error {
	if o.journal == "" {
		return usageErr("--journal DIR is required")
	}
	scope, err := recoverScope(o.bucket, args)
	if err != nil {
		return err
	}
	readBackLimit, err := bytesize.Parse(o.readBackLimit)
	if err != nil {
		return usageErr("--read-back-limit: %v", err)
	}
	if readBackLimit == 0 {
		readBackLimit = -1 // RecoverOptions' zero is the default limit; 0 here means never
	}
	// The listing must work before the store is contacted: a bad directory touches nothing.
	if _, err := os.ReadDir(o.journal); err != nil {
		return usageErr("journal %v", err)
	}
	st, endpoint, err := a.journalStore()
	if err != nil {
		return err
	}
	pol, err := a.policy()
	if err != nil {
		return err
	}
	up, err := writer.NewUploader(st, func(wo *writer.Options) {
		wo.Retry = pol
		wo.Logger = a.log
		wo.JournalDir, wo.JournalEndpoint = o.journal, endpoint
	})
	if err != nil {
		return usageErr("%v", err)
	}
	ropts := writer.RecoverOptions{Bucket: scope.Bucket, Prefix: scope.Key, DryRun: !o.run, ReadBackLimit: readBackLimit, AllowSSECOverHTTP: o.allowSSECOverHTTP}
	for _, f := range o.sseCKeyFiles {
		k, err := frontend.ReadCustomerKey(f)
		if err != nil {
			return usageErr("--%v", err)
		}
		ropts.SSECustomerKeys = append(ropts.SSECustomerKeys, k)
	}
	if err := a.checkSSECTransport(st, len(ropts.SSECustomerKeys) > 0, o.allowSSECOverHTTP); err != nil {
		return err
	}
	rep, err := up.Recover(ctx, ropts)
	if err != nil && rep == nil {
		if ctx.Err() != nil {
			return withCode(exitCanceled, err)
		}
		return usageErr("%v", err)
	}
	out := recoverJSON{Journal: o.journal, Endpoint: endpoint, Bucket: scope.Bucket, Prefix: scope.Key, DryRun: rep.DryRun, Counts: map[string]int{}, Uploads: []recoveredJSON{}, Skipped: []string{}}
	for k, n := range rep.Counts {
		out.Counts[string(k)] = n
	}
	var failed error
	for _, u := range rep.Uploads {
		rj := recoveredJSON{Bucket: u.Bucket, Key: u.Key, UploadID: u.UploadID, Endpoint: u.Endpoint, Size: u.Size, Parts: u.Parts, Outcome: string(u.Outcome), Note: u.Note}
		if u.Err != nil {
			rj.Error = oneLine(sperrors.Classify(u.Err))
			if failed == nil {
				failed = u.Err
			}
		}
		out.Uploads = append(out.Uploads, rj)
	}
	for _, p := range rep.Problems {
		path, cause := p.Error(), p
		if pe := (*fs.PathError)(nil); stderrors.As(p, &pe) {
			path, cause = pe.Path, pe.Err
		}
		out.Skipped = append(out.Skipped, path)
		_, _ = fmt.Fprintf(a.stderr, "safeput: warning: skipped %s: %v\n", printable(path), cause)
	}
	if a.g.json {
		if perr := a.printJSON(out); perr != nil {
			return perr
		}
	} else {
		printRecover(a.stdout, out)
	}
	switch {
	case err != nil: // interrupted
		return withCode(exitCanceled, err)
	case failed != nil:
		n := rep.Counts[writer.RecoverFailed]
		return withCode(kindExit(sperrors.KindOf(failed)), fmt.Errorf("%d journaled upload(s) could not be settled and were kept: %s", n, oneLine(failed)))
	}
	return nil
}

// recoverScope is the bucket and prefix recover may act in: the s3://bucket[/prefix] argument,
// or --bucket. One is required: a journal directory may hold records that name other buckets
// and keys, and recover must not act on those.
func recoverScope(bucket string, args []string) (s3URL, error) {
	switch {
	case len(args) == 1:
		u, err := parseS3URL(args[0], false)
		if err != nil {
			return s3URL{}, err
		}
		if bucket != "" && bucket != u.Bucket {
			return s3URL{}, usageErr("--bucket %s and the scope %s name different buckets", bucket, args[0])
		}
		return u, nil
	case bucket != "":
		if !validBucket(bucket) {
			return s3URL{}, usageErr("--bucket %q is not a valid bucket name (3-63 of a-z 0-9 . - _)", bucket)
		}
		return s3URL{Bucket: bucket}, nil
	}
	return s3URL{}, usageErr("recover needs the scope it may act in: s3://bucket or s3://bucket/prefix (or --bucket); " +
		"records of other buckets and keys are reported and left alone")
}

func printRecover(w io.Writer, r recoverJSON) {
	if len(r.Uploads) == 0 {
		_, _ = fmt.Fprintf(w, "journal %s holds no uploads: nothing to recover\n", r.Journal)
		if len(r.Skipped) > 0 {
			_, _ = fmt.Fprintf(w, "(%d file(s) in it are not journal records and were skipped; see the warnings)\n", len(r.Skipped))
		}
		return
	}
	mode := "dry run (nothing changed; add --run to act)"
	if !r.DryRun {
		mode = "run"
	}
	_, _ = fmt.Fprintf(w, "journal %s, endpoint %s, scope s3://%s/%s: %s\n", printable(r.Journal), printable(r.Endpoint), r.Bucket, printable(r.Prefix), mode)
	_, _ = fmt.Fprintf(w, "  %-14s %-20s %-40s %12s  %s\n", "OUTCOME", "BUCKET", "KEY", "SIZE", "UPLOAD ID")
	for _, u := range r.Uploads {
		size := fmt.Sprint(u.Size)
		if u.Size < 0 {
			size = "unknown"
		}
		_, _ = fmt.Fprintf(w, "  %-14s %-20s %-40s %12s  %s\n", u.Outcome, printable(u.Bucket), printable(u.Key), size, printable(u.UploadID))
		if u.Error != "" {
			_, _ = fmt.Fprintf(w, "                 error: %s\n", printable(u.Error))
		}
		if u.Note != "" {
			_, _ = fmt.Fprintf(w, "                 note: %s\n", printable(u.Note))
		}
	}
	var counts []string
	for k, n := range r.Counts {
		counts = append(counts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(counts)
	_, _ = fmt.Fprintf(w, "records %d: %s\n", len(r.Uploads), strings.Join(counts, ", "))
}
