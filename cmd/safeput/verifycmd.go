package main

import (
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags are MD5s: compared as the store computes them
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/safeput/safeput/bytesize"
	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
	"github.com/safeput/safeput/verify"
	"github.com/safeput/safeput/writer"
)

func (a *app) verifyCmd() *cobra.Command {
	var readBack bool
	cmd := &cobra.Command{
		Use:   "verify FILE s3://bucket/key",
		Short: "Compare a stored object with a local file (exit 0 equal, 5 different)",
		Long: `Compare s3://bucket/key with FILE: the length, and every full-object checksum the store returns
(HEAD with checksum mode: CRC64NVME, CRC32C, CRC32) against one computed locally. When the store
returns none, the comparison is length-only and reported as weak. --read-back re-reads the whole
object and compares CRC64NVME computed over both.

` + exitCodesHelp,
		Example: `  safeput verify backup.tar s3://bucket/backups/backup.tar
  safeput verify --read-back --json backup.tar s3://bucket/backups/backup.tar`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runVerify(cmd.Context(), args[0], args[1], readBack)
		},
	}
	cmd.Flags().BoolVar(&readBack, "read-back", false, "re-read the whole object and compare its CRC64NVME with the file's")
	return cmd
}

// comparison is one thing verify compared.
type comparison struct {
	What  string `json:"what"`
	Local string `json:"local"`
	Store string `json:"store"`
	Equal bool   `json:"equal"`
}

type verifyReport struct {
	Status      string       `json:"status"` // equal, different
	Bucket      string       `json:"bucket"`
	Key         string       `json:"key"`
	File        string       `json:"file"`
	Size        int64        `json:"size"`
	Strong      bool         `json:"strong"`
	Method      string       `json:"method"`
	Note        string       `json:"note,omitempty"`
	Comparisons []comparison `json:"comparisons"`
}

var verifyAlgorithms = []store.ChecksumAlgorithm{store.ChecksumCRC64NVME, store.ChecksumCRC32C, store.ChecksumCRC32}

func (a *app) runVerify(ctx context.Context, file, dst string, readBack bool) error {
	u, err := parseS3URL(dst, true)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return usageErr("cannot open %s: %v", file, unwrapPathErr(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return usageErr("cannot stat %s: %v", file, err)
	}
	if !fi.Mode().IsRegular() {
		return usageErr("%s is not a regular file", file)
	}
	st, err := a.newStore()
	if err != nil {
		return err
	}
	var head *store.HeadObjectOutput
	err = a.do(ctx, "HeadObject", u, func(ctx context.Context) (err error) {
		head, err = st.HeadObject(ctx, &store.HeadObjectInput{Bucket: u.Bucket, Key: u.Key, ChecksumMode: true})
		return err
	})
	if err != nil {
		return classified("HeadObject", u, err)
	}
	rep := verifyReport{Bucket: u.Bucket, Key: u.Key, File: file, Size: fi.Size()}
	rep.Comparisons = append(rep.Comparisons, comparison{What: "length", Local: fmt.Sprint(fi.Size()), Store: fmt.Sprint(head.Size), Equal: fi.Size() == head.Size})

	// One pass over the file computes every checksum the store returned.
	var algs []store.ChecksumAlgorithm
	var composite []string
	for _, alg := range verifyAlgorithms {
		v := head.Checksums.Get(alg)
		switch {
		case v == "":
		case strings.Contains(v, "-"):
			// COMPOSITE: a checksum of part checksums, which depends on the part layout.
			composite = append(composite, string(alg))
		default:
			algs = append(algs, alg)
		}
	}
	if readBack && !contains(algs, store.ChecksumCRC64NVME) {
		algs = append(algs, store.ChecksumCRC64NVME)
	}
	local, err := hashReader(ctx, f, algs)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("reading %s: %w", file, err))
	}
	for _, alg := range verifyAlgorithms {
		if v := head.Checksums.Get(alg); v != "" && !strings.Contains(v, "-") {
			rep.Comparisons = append(rep.Comparisons, comparison{What: string(alg), Local: local[alg], Store: v, Equal: local[alg] == v})
			if rep.Method == "" {
				rep.Method, rep.Strong = strings.ToLower(string(alg)), true
			}
		}
	}
	if readBack {
		got, err := a.readBackCRC(ctx, st, u)
		if err != nil {
			return err
		}
		rep.Comparisons = append(rep.Comparisons, comparison{What: "read-back CRC64NVME", Local: local[store.ChecksumCRC64NVME], Store: got, Equal: got == local[store.ChecksumCRC64NVME]})
		rep.Method, rep.Strong = string(verify.MethodReadBack), true
	}
	if rep.Method == "" {
		c, ok, err := a.etagComparison(ctx, file, fi.Size(), head.ETag)
		if err != nil {
			return err
		}
		if ok {
			rep.Comparisons = append(rep.Comparisons, c)
			rep.Method, rep.Strong = string(verify.MethodETagMD5), true
		}
	}
	if rep.Method == "" {
		rep.Method = string(verify.MethodLengthOnly)
		rep.Note = "the store returned no full-object checksum"
		if len(composite) > 0 {
			rep.Note += " (only COMPOSITE " + strings.Join(composite, ", ") + ", which depends on the part layout)"
		}
		rep.Note += ": length-only comparison, WEAK; use --read-back for a full comparison"
	}
	rep.Status = "equal"
	for _, c := range rep.Comparisons {
		if !c.Equal {
			rep.Status = "different"
		}
	}
	if a.g.json {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		printVerify(a.stdout, rep)
	}
	if rep.Status != "equal" {
		if a.g.json {
			return withCode(exitIntegrity, errQuiet)
		}
		return withCode(exitIntegrity, fmt.Errorf("s3://%s/%s differs from %s", u.Bucket, u.Key, file))
	}
	return nil
}

func printVerify(w io.Writer, r verifyReport) {
	_, _ = fmt.Fprintf(w, "%s: s3://%s/%s vs %s (%s)\n", strings.ToUpper(r.Status), r.Bucket, r.Key, r.File, bytesize.Format(r.Size))
	for _, c := range r.Comparisons {
		mark := "equal"
		if !c.Equal {
			mark = "DIFFERENT"
		}
		_, _ = fmt.Fprintf(w, "  %-20s %-9s local %s, store %s\n", c.What, mark, c.Local, c.Store)
	}
	strength := "strong"
	if !r.Strong {
		strength = "weak"
	}
	_, _ = fmt.Fprintf(w, "  method               %s (%s)\n", r.Method, strength)
	if r.Note != "" {
		_, _ = fmt.Fprintf(w, "  note                 %s\n", r.Note)
	}
}

func contains(algs []store.ChecksumAlgorithm, a store.ChecksumAlgorithm) bool {
	for _, x := range algs {
		if x == a {
			return true
		}
	}
	return false
}

// hashReader computes the base64 checksum of r for every algorithm in one pass.
func hashReader(ctx context.Context, r io.Reader, algs []store.ChecksumAlgorithm) (map[store.ChecksumAlgorithm]string, error) {
	crcs := map[store.ChecksumAlgorithm]hash.Hash{}
	for _, alg := range algs {
		c, err := verify.NewHash(alg)
		if err != nil {
			return nil, err
		}
		crcs[alg] = c
	}
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return nil, withCode(exitCanceled, err)
		}
		n, err := r.Read(buf)
		for _, c := range crcs {
			_, _ = c.Write(buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out := map[store.ChecksumAlgorithm]string{}
	for alg, c := range crcs {
		out[alg] = base64.StdEncoding.EncodeToString(c.Sum(nil))
	}
	return out, nil
}

func (a *app) readBackCRC(ctx context.Context, st store.Store, u s3URL) (string, error) {
	var sum string
	err := a.do(ctx, "GetObject", u, func(ctx context.Context) error {
		out, err := st.GetObject(ctx, &store.GetObjectInput{Bucket: u.Bucket, Key: u.Key})
		if err != nil {
			return err
		}
		defer out.Body.Close()
		sums, err := hashReader(ctx, out.Body, []store.ChecksumAlgorithm{store.ChecksumCRC64NVME})
		if err != nil {
			return err
		}
		sum = sums[store.ChecksumCRC64NVME]
		return nil
	})
	if err != nil {
		return "", classified("GetObject", u, err)
	}
	return sum, nil
}

// classified turns a raw store error into a classified *errors.Error naming the object.
func classified(op string, u s3URL, err error) error {
	e := sperrors.Classify(err)
	if e.Op == "" {
		e.Op = op
	}
	if e.Bucket == "" && e.Key == "" {
		e.Bucket, e.Key = u.Bucket, u.Key
	}
	return e
}

// etagComparison compares the object's ETag with the file's MD5 (single PUT) or MD5 of part MD5s
// (multipart) where the --provider profile says the store's ETags are those, so a store that
// keeps no checksums (Ceph RGW 16.2) still gets a strong comparison. A multipart ETag depends on
// the part size: the layout this CLI's put would use for the file (--part-size, the profile) is
// computed; an ETag with another part count cannot be compared and ok is false.
func (a *app) etagComparison(ctx context.Context, file string, size int64, etag string) (c comparison, ok bool, err error) {
	rules, perr := multipart.Parse(a.g.provider)
	e, eok := parseETag(etag)
	if perr != nil || !eok {
		return c, false, nil
	}
	var partSize int64
	switch {
	case e.Parts == 0 && len(e.Hex) == 2*md5.Size && rules.SinglePutETagMD5:
		partSize = size
	case e.Parts > 0 && rules.MultipartETagMD5:
		preferred := int64(writer.DefaultPartSize)
		if a.g.partSize != "" {
			if n, err := bytesize.Parse(a.g.partSize); err == nil && n > 0 {
				preferred = n
			}
		}
		plan, err := rules.Plan(multipart.PlanRequest{Size: size, PartSize: preferred, Concurrency: max(a.g.concurrency, 1)})
		if err != nil || plan.Single || plan.Parts != e.Parts {
			return c, false, nil
		}
		partSize = plan.PartSize
	default:
		return c, false, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return c, false, usageErr("cannot open %s: %v", file, unwrapPathErr(err))
	}
	defer f.Close()
	var sums [][md5.Size]byte
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size || (size == 0 && len(sums) == 0); off += partSize {
		if err := ctx.Err(); err != nil {
			return c, false, withCode(exitCanceled, err)
		}
		h := md5.New() //nolint:gosec // S3's ETag is MD5: compared, not trusted for security
		if _, err := io.CopyBuffer(h, io.NewSectionReader(f, off, min(partSize, size-off)), buf); err != nil {
			return c, false, withCode(exitUsage, fmt.Errorf("reading %s: %w", file, err))
		}
		var d [md5.Size]byte
		copy(d[:], h.Sum(nil))
		sums = append(sums, d)
		if size == 0 {
			break
		}
	}
	local := hex.EncodeToString(sums[0][:])
	what := "ETag (MD5)"
	if e.Parts > 0 {
		local = multipartETag(sums)
		what = fmt.Sprintf("ETag (MD5 of %d part MD5s of %s)", e.Parts, bytesize.Format(partSize))
	}
	remote := e.Hex
	if e.Parts > 0 {
		remote = fmt.Sprintf("%s-%d", e.Hex, e.Parts)
	}
	return comparison{What: what, Local: local, Store: remote, Equal: local == remote}, true, nil
}
