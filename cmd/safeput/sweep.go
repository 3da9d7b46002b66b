package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

type sweepOpts struct {
	olderThan time.Duration
	run       bool
	all       bool
}

func (a *app) sweepCmd() *cobra.Command {
	var o sweepOpts
	cmd := &cobra.Command{
		Use:   "sweep s3://bucket/prefix",
		Short: "List (dry run) or abort incomplete multipart uploads under a prefix",
		Long: `List the incomplete multipart uploads under s3://bucket/prefix with their parts and bytes
(dry run, the default), or abort them with --run. Only keys that start with the prefix are
touched: each listed key is checked, whatever the store's listing returns. With --older-than, an
upload whose start time the store does not report is not aborted: it is listed as age-unknown.
When nothing matches it says so, names the prefix it used and counts the incomplete uploads
elsewhere in the bucket, so a wrong prefix does not look like a clean bucket. An empty prefix
(the whole bucket) needs --all. Running it again is harmless: an upload that is already gone
counts as gone, not as a failure.

` + exitCodesHelp,
		Example: `  safeput sweep s3://bucket/ingest/                    # dry run
  safeput sweep --older-than 24h --run s3://bucket/ingest/
  safeput sweep --all --run s3://bucket`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runSweep(cmd.Context(), o, args[0]) },
	}
	f := cmd.Flags()
	f.DurationVar(&o.olderThan, "older-than", 0, "only uploads initiated longer ago than this (e.g. 24h)")
	f.BoolVar(&o.run, "run", false, "abort the uploads (default: dry run, list only)")
	f.BoolVar(&o.all, "all", false, "allow an empty prefix: sweep the whole bucket")
	return cmd
}

type sweptUpload struct {
	Key       string    `json:"key"`
	UploadID  string    `json:"upload_id"`
	Initiated time.Time `json:"initiated"`
	Parts     int       `json:"parts"`
	Bytes     int64     `json:"bytes"`
	// State: found (dry run), aborted, gone (already gone), failed, or age-unknown (with
	// --older-than: the store reported no start time, so the upload was left alone).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

type sweepReport struct {
	Bucket    string `json:"bucket"`
	Prefix    string `json:"prefix"`
	OlderThan string `json:"older_than,omitempty"`
	DryRun    bool   `json:"dry_run"`
	Found     int    `json:"found"`
	Aborted   int    `json:"aborted"`
	Gone      int    `json:"already_gone"`
	Failed    int    `json:"failed"`
	// AgeUnknown counts the uploads --older-than left alone because the store reported no start
	// time for them; they are listed with state age-unknown and are not counted in Found.
	AgeUnknown int           `json:"age_unknown"`
	Bytes      int64         `json:"bytes"`
	Freed      int64         `json:"bytes_freed"`
	Elsewhere  int           `json:"incomplete_elsewhere_in_bucket"`
	Uploads    []sweptUpload `json:"uploads"`
}

func (a *app) runSweep(ctx context.Context, o sweepOpts, target string) error {
	u, err := parseS3URL(target, false)
	if err != nil {
		return err
	}
	if u.Key == "" && !o.all {
		return usageErr("refusing to sweep all of bucket %s without --all (give s3://%s/prefix to narrow it)", u.Bucket, u.Bucket)
	}
	if o.olderThan < 0 {
		return usageErr("--older-than %s: must not be negative", o.olderThan)
	}
	st, err := a.newStore()
	if err != nil {
		return err
	}
	return a.sweep(ctx, st, u, o)
}

// sweep lists (and with o.run aborts) the incomplete uploads under u.Key and prints the report.
func (a *app) sweep(ctx context.Context, st store.Store, u s3URL, o sweepOpts) error {
	var under, all []store.Upload
	err := a.do(ctx, "ListMultipartUploads", u, func(ctx context.Context) (err error) {
		under, all, err = uploadsUnder(ctx, st, u.Bucket, u.Key)
		return err
	})
	if err != nil {
		e := classified("ListMultipartUploads", u, err)
		if store.Unsupported(err) {
			// Not "nothing found": the store cannot say what it holds.
			e = annotatedErr(e, func(e *sperrors.Error) {
				e.Kind = sperrors.Compatibility
				e.Message = fmt.Sprintf("the store cannot list incomplete multipart uploads (ListMultipartUploads answered %s): "+
					"sweep cannot find any, so nothing was listed or aborted; this does not mean there are none", unsupportedWhy(err))
			})
		}
		return e
	}
	rep := sweepReport{Bucket: u.Bucket, Prefix: u.Key, DryRun: !o.run, Uploads: []sweptUpload{}}
	if o.olderThan > 0 {
		rep.OlderThan = o.olderThan.String()
	}
	cutoff := time.Now().Add(-o.olderThan)
	for _, up := range under {
		if !inPrefix(up.Key, u.Key) {
			continue // uploadsUnder keeps only keys under the prefix; never act on another
		}
		if o.olderThan > 0 && up.Initiated.IsZero() {
			// No start time: its age cannot be shown to pass --older-than, so it is not old.
			rep.AgeUnknown++
			rep.Uploads = append(rep.Uploads, sweptUpload{Key: up.Key, UploadID: up.UploadID, State: "age-unknown"})
			continue
		}
		if o.olderThan > 0 && up.Initiated.After(cutoff) {
			continue
		}
		su := sweptUpload{Key: up.Key, UploadID: up.UploadID, Initiated: up.Initiated, State: "found"}
		var parts *store.ListPartsOutput
		err := a.do(ctx, "ListParts", s3URL{Bucket: u.Bucket, Key: up.Key}, func(ctx context.Context) (err error) {
			parts, err = st.ListParts(ctx, &store.ListPartsInput{Bucket: u.Bucket, Key: up.Key, UploadID: up.UploadID})
			return err
		})
		switch {
		case err == nil:
			su.Parts = len(parts.Parts)
			for _, p := range parts.Parts {
				su.Bytes += p.Size
			}
		case isNoSuchUpload(err):
			// Completed or aborted since the listing: nothing to do.
			su.State = "gone"
		default:
			if ctx.Err() != nil {
				return withCode(exitCanceled, ctx.Err())
			}
			su.Error = oneLine(sperrors.Classify(err))
		}
		rep.Found++
		rep.Bytes += su.Bytes
		if o.run && su.State != "gone" {
			err := a.do(ctx, "AbortMultipartUpload", s3URL{Bucket: u.Bucket, Key: up.Key}, func(ctx context.Context) error {
				return st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: u.Bucket, Key: up.Key, UploadID: up.UploadID})
			})
			switch {
			case err == nil:
				su.State = "aborted"
				rep.Aborted++
				rep.Freed += su.Bytes
			case isNoSuchUpload(err):
				su.State = "gone"
			default:
				if ctx.Err() != nil {
					return withCode(exitCanceled, ctx.Err())
				}
				su.State, su.Error = "failed", oneLine(sperrors.Classify(err))
				rep.Failed++
			}
		}
		if su.State == "gone" {
			rep.Gone++
		}
		rep.Uploads = append(rep.Uploads, su)
	}
	if rep.Found == 0 && rep.AgeUnknown == 0 && u.Key != "" {
		// A wrong prefix must not look like a clean bucket: count what is elsewhere.
		rep.Elsewhere = len(all)
	}
	if a.g.json {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		printSweep(a.stdout, rep)
	}
	if rep.Failed > 0 {
		return withCode(exitPermanent, fmt.Errorf("%d of %d uploads could not be aborted", rep.Failed, rep.Found))
	}
	return nil
}

// uploadsUnder lists the incomplete uploads of bucket whose key starts with prefix, and all of
// the bucket's. MinIO lists by prefix only for an exact key (a directory-like prefix lists
// nothing) while it lists the whole bucket, so with a prefix both listings are read and merged.
// Each key of both is checked against prefix: a store may ignore the prefix and answer with the
// whole bucket, and an upload outside the prefix must never be returned as under it.
func uploadsUnder(ctx context.Context, st store.Store, bucket, prefix string) (under, all []store.Upload, err error) {
	whole, err := st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bucket})
	if err != nil {
		return nil, nil, err
	}
	var byPrefix []store.Upload
	if prefix != "" {
		out, err := st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bucket, Prefix: prefix})
		if err != nil {
			return nil, nil, err
		}
		byPrefix = out.Uploads
	}
	seen := map[string]bool{}
	for _, up := range append(byPrefix, whole.Uploads...) {
		id := up.Key + "\x00" + up.UploadID
		if inPrefix(up.Key, prefix) && !seen[id] {
			seen[id] = true
			under = append(under, up)
		}
	}
	return under, whole.Uploads, nil
}

func isNoSuchUpload(err error) bool {
	if err == nil {
		return false
	}
	e := sperrors.Classify(err)
	return e.Code == "NoSuchUpload" || e.UploadGone
}

func printSweep(w io.Writer, r sweepReport) {
	scope := fmt.Sprintf("s3://%s/%s", r.Bucket, printable(r.Prefix))
	if r.Prefix == "" {
		scope = fmt.Sprintf("s3://%s (whole bucket)", r.Bucket)
	}
	age := ""
	if r.OlderThan != "" {
		age = " older than " + r.OlderThan
	}
	if r.Found == 0 && r.AgeUnknown == 0 {
		_, _ = fmt.Fprintf(w, "no incomplete multipart uploads%s under prefix %q in %s\n", age, r.Prefix, scope)
		if r.Prefix != "" {
			_, _ = fmt.Fprintf(w, "incomplete uploads elsewhere in bucket %s (any prefix, any age): %d\n", r.Bucket, r.Elsewhere)
		}
		return
	}
	mode := "dry run (nothing aborted; add --run to abort)"
	if !r.DryRun {
		mode = "run"
	}
	_, _ = fmt.Fprintf(w, "incomplete multipart uploads%s under %s: %s\n", age, scope, mode)
	_, _ = fmt.Fprintf(w, "  %-11s %-20s %5s %12s  %-40s %s\n", "STATE", "INITIATED", "PARTS", "BYTES", "KEY", "UPLOAD ID")
	for _, up := range r.Uploads {
		init := "-"
		if !up.Initiated.IsZero() {
			init = up.Initiated.UTC().Format(time.DateTime)
		}
		_, _ = fmt.Fprintf(w, "  %-11s %-20s %5d %12d  %-40s %s\n", up.State, init, up.Parts, up.Bytes, printable(up.Key), printable(up.UploadID))
		if up.Error != "" {
			_, _ = fmt.Fprintf(w, "              error: %s\n", up.Error)
		}
	}
	_, _ = fmt.Fprintf(w, "found %d, aborted %d, already gone %d, failed %d; %s in parts, %s freed\n",
		r.Found, r.Aborted, r.Gone, r.Failed, bytesize.Format(r.Bytes), bytesize.Format(r.Freed))
	if r.AgeUnknown > 0 {
		_, _ = fmt.Fprintf(w, "age unknown %d: the store reported no start time, so --older-than left them alone (sweep without --older-than to include them)\n", r.AgeUnknown)
	}
}

// unsupportedWhy says how a store refused an operation it lacks: "HTTP 501 NotImplemented".
func unsupportedWhy(err error) string {
	e := sperrors.Classify(err)
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d", e.StatusCode)
	}
	return fmt.Sprintf("HTTP %d %s", e.StatusCode, e.Code)
}

// annotatedErr applies fn to err's *sperrors.Error, when it has one.
func annotatedErr(err error, fn func(*sperrors.Error)) error {
	var e *sperrors.Error
	if errors.As(err, &e) {
		fn(e)
	}
	return err
}
