package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
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
(dry run, the default), or abort them with --run. When nothing matches it says so, names the
prefix it used and counts the incomplete uploads elsewhere in the bucket, so a wrong prefix does
not look like a clean bucket. An empty prefix (the whole bucket) needs --all. Running it again is
harmless: an upload that is already gone counts as gone, not as a failure.

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
	// State: found (dry run), aborted, gone (already gone), failed.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

type sweepReport struct {
	Bucket    string        `json:"bucket"`
	Prefix    string        `json:"prefix"`
	OlderThan string        `json:"older_than,omitempty"`
	DryRun    bool          `json:"dry_run"`
	Found     int           `json:"found"`
	Aborted   int           `json:"aborted"`
	Gone      int           `json:"already_gone"`
	Failed    int           `json:"failed"`
	Bytes     int64         `json:"bytes"`
	Freed     int64         `json:"bytes_freed"`
	Elsewhere int           `json:"incomplete_elsewhere_in_bucket"`
	Uploads   []sweptUpload `json:"uploads"`
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
	var under, all []store.Upload
	err = a.do(ctx, "ListMultipartUploads", u, func(ctx context.Context) (err error) {
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
		if o.olderThan > 0 && !up.Initiated.IsZero() && up.Initiated.After(cutoff) {
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
	if rep.Found == 0 && u.Key != "" {
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
func uploadsUnder(ctx context.Context, st store.Store, bucket, prefix string) (under, all []store.Upload, err error) {
	whole, err := st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bucket})
	if err != nil {
		return nil, nil, err
	}
	if prefix == "" {
		return whole.Uploads, whole.Uploads, nil
	}
	byPrefix, err := st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: bucket, Prefix: prefix})
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, up := range byPrefix.Uploads {
		seen[up.Key+"\x00"+up.UploadID] = true
		under = append(under, up)
	}
	for _, up := range whole.Uploads {
		if strings.HasPrefix(up.Key, prefix) && !seen[up.Key+"\x00"+up.UploadID] {
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
	scope := fmt.Sprintf("s3://%s/%s", r.Bucket, r.Prefix)
	if r.Prefix == "" {
		scope = fmt.Sprintf("s3://%s (whole bucket)", r.Bucket)
	}
	age := ""
	if r.OlderThan != "" {
		age = " older than " + r.OlderThan
	}
	if r.Found == 0 {
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
	_, _ = fmt.Fprintf(w, "  %-8s %-20s %5s %12s  %-40s %s\n", "STATE", "INITIATED", "PARTS", "BYTES", "KEY", "UPLOAD ID")
	for _, up := range r.Uploads {
		init := "-"
		if !up.Initiated.IsZero() {
			init = up.Initiated.UTC().Format(time.DateTime)
		}
		_, _ = fmt.Fprintf(w, "  %-8s %-20s %5d %12d  %-40s %s\n", up.State, init, up.Parts, up.Bytes, up.Key, up.UploadID)
		if up.Error != "" {
			_, _ = fmt.Fprintf(w, "           error: %s\n", up.Error)
		}
	}
	_, _ = fmt.Fprintf(w, "found %d, aborted %d, already gone %d, failed %d; %s in parts, %s freed\n",
		r.Found, r.Aborted, r.Gone, r.Failed, bytesize.Format(r.Bytes), bytesize.Format(r.Freed))
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
