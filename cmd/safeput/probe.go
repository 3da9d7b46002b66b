package main

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // S3 ETags and Content-MD5 are MD5; not for security.
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	stderrors "errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/safeput/safeput/bytesize"
	"github.com/safeput/safeput/multipart"
	"github.com/safeput/safeput/store"
)

func (a *app) probeCmd() *cobra.Command {
	var kmsKeyID string
	cmd := &cobra.Command{
		Use:   "probe s3://bucket/prefix",
		Short: "Run a multipart and checksum compatibility matrix against the endpoint",
		Long: `Probe what the endpoint really accepts, inside a unique scratch prefix under s3://bucket/prefix:
non-final part sizes (5 MiB, 1 MiB, 100 KiB), tiny, empty and larger last parts, single-part
uploads, unequal parts, non-contiguous part numbers, checksum algorithms and types on PUT and
multipart, HEAD checksums, Content-MD5 and checksum rejection, If-None-Match on PUT and Complete,
MD5 ETags, and server-side encryption (SSE-S3, SSE-KMS, SSE-C: honoured, refused or ignored,
as the HEAD after a 200 shows). It prints one table of rule, result and evidence (the status and code seen), the
recommended --provider (a known profile, or a rules string), and what it created and removed.
Every object and upload it makes is removed; anything it could not remove is listed. Its clean-up
aborts only the uploads it created itself (by upload id) and lists each; an upload it finds under
its scratch prefix that it did not create is reported and left alone, and nothing outside that
prefix is ever touched.
It sends about 60 MiB in total.

` + exitCodesHelp,
		Example: `  safeput probe --endpoint https://s3.example.com s3://bucket/scratch/
  safeput probe --json s3://bucket/tmp/ > probe.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.runProbe(cmd.Context(), args[0], kmsKeyID) },
	}
	cmd.Flags().StringVar(&kmsKeyID, "sse-kms-key-id", "", "the KMS key the SSE-KMS row asks for (default: the store's default key)")
	return cmd
}

// probeRow is one line of the compatibility table.
type probeRow struct {
	Rule     string `json:"rule"`
	Result   string `json:"result"`
	Evidence string `json:"evidence"`
}

type probeReport struct {
	Bucket         string     `json:"bucket"`
	ScratchPrefix  string     `json:"scratch_prefix"`
	Rows           []probeRow `json:"rows"`
	Warnings       []string   `json:"warnings,omitempty"`
	Recommendation string     `json:"recommended_provider"`
	MatchedProfile string     `json:"matched_profile,omitempty"`
	ClosestProfile string     `json:"closest_profile,omitempty"`
	Differences    []string   `json:"differences_from_closest,omitempty"`
	Rules          string     `json:"rules"`
	Created        counts     `json:"created"`
	Removed        counts     `json:"removed"`
	Leftovers      []string   `json:"leftovers"`
	// Cleanup lists each upload the clean-up aborted (or found gone, or failed to abort), and
	// each upload listed under the scratch prefix that this run did not create (left alone).
	Cleanup []probeUpload `json:"cleanup_uploads"`
}

// probeUpload is one upload probe's clean-up dealt with.
type probeUpload struct {
	Key      string `json:"key"`
	UploadID string `json:"upload_id"`
	// State: aborted, gone (already gone), failed, or left-alone (listed under the scratch
	// prefix but not created by this run: not aborted).
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

type counts struct {
	Objects int `json:"objects"`
	Uploads int `json:"uploads"`
}

// prober runs the matrix through the store.Store seam directly, so it controls every layout and
// header; the writer would refuse (or plan around) most of what it tries.
type prober struct {
	ctx     context.Context
	st      store.Store
	bucket  string
	prefix  string
	seq     int
	data    []byte            // random source bytes; parts are slices of it
	objects map[string]bool   // keys written (deleted at the end)
	uploads map[string]string // upload id → key of the uploads still open (aborted at the end)
	// made is every upload id this run created, with its key: the only uploads its clean-up
	// aborts, whatever a listing of the scratch prefix returns.
	made map[string]string
	rep  probeReport
	// completes counts Complete 200 answers; completeNoETag those without an ETag.
	completes, completeNoETag int
	kmsKeyID                  string // --sse-kms-key-id
}

const (
	kib = bytesize.KiB
	mib = bytesize.MiB
)

func (a *app) runProbe(ctx context.Context, target, kmsKeyID string) error {
	u, err := parseS3URL(target, false)
	if err != nil {
		return err
	}
	st, err := a.newStore()
	if err != nil {
		return err
	}
	prefix := u.Key
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	prefix += "safeput-probe-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(rnd[:]) + "/"
	p := &prober{ctx: ctx, st: st, bucket: u.Bucket, prefix: prefix, data: make([]byte, 6*mib+kib),
		objects: map[string]bool{}, uploads: map[string]string{}, made: map[string]string{}, kmsKeyID: kmsKeyID}
	_, _ = rand.Read(p.data)
	p.rep = probeReport{Bucket: u.Bucket, ScratchPrefix: prefix, Leftovers: []string{}, Cleanup: []probeUpload{}}

	runErr := p.run()
	p.cleanup()
	if runErr != nil {
		if len(p.rep.Leftovers) > 0 {
			_, _ = fmt.Fprintf(a.stderr, "safeput: probe left behind: %s\n", strings.Join(p.rep.Leftovers, ", "))
		}
		return runErr
	}
	if a.g.json {
		if err := a.printJSON(p.rep); err != nil {
			return err
		}
	} else {
		printProbe(a.stdout, p.rep)
	}
	if len(p.rep.Leftovers) > 0 {
		return withCode(exitPermanent, fmt.Errorf("probe left %d objects/uploads in its scratch prefix (listed above)", len(p.rep.Leftovers)))
	}
	return nil
}

// created notes an upload this run created: open until completed or aborted, and its own to abort.
func (p *prober) created(id, key string) {
	p.uploads[id] = key
	p.made[id] = key
	p.rep.Created.Uploads++
}

func (p *prober) key(label string) string {
	p.seq++
	return fmt.Sprintf("%s%02d-%s", p.prefix, p.seq, label)
}

func (p *prober) row(rule, result, evidence string) {
	p.rep.Rows = append(p.rep.Rows, probeRow{Rule: rule, Result: result, Evidence: evidence})
}

// evidence names what the store answered: "HTTP 400 EntityTooSmall" or the transport error.
func evidence(op string, err error) string {
	if err == nil {
		return op + " 200 OK"
	}
	var re *store.ResponseError
	if stderrors.As(err, &re) {
		s := fmt.Sprintf("%s %d", op, re.StatusCode)
		if re.Code != "" {
			s += " " + re.Code
		}
		return s
	}
	return op + ": " + oneLine(err)
}

func statusOf(err error) (int, string) {
	var re *store.ResponseError
	if stderrors.As(err, &re) {
		return re.StatusCode, re.Code
	}
	return 0, ""
}

func accepted(err error) string {
	if err == nil {
		return "accepted"
	}
	return "rejected"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (p *prober) put(key string, body []byte, c store.Checksum, contentMD5 string, ifNoneMatch bool) (*store.PutObjectOutput, error) {
	out, err := p.st.PutObject(p.ctx, &store.PutObjectInput{Bucket: p.bucket, Key: key, Body: bytes.NewReader(body),
		ContentLength: int64(len(body)), Checksum: c, ContentMD5: contentMD5, IfNoneMatch: ifNoneMatch})
	if err == nil {
		if !p.objects[key] {
			p.rep.Created.Objects++
		}
		p.objects[key] = true
	} else if _, ok := p.objects[key]; !ok {
		// A failed PUT should create nothing, but a store that answers an error and keeps the
		// body would leak: delete the key at the end anyway (deleting a missing key is fine).
		p.objects[key] = false
	}
	return out, err
}

type partSpec struct {
	num  int32
	size int64
}

type mpuOpts struct {
	key         string
	alg         store.ChecksumAlgorithm
	typ         store.ChecksumType
	ifNoneMatch bool
}

type mpuOutcome struct {
	op      string // the operation that failed, or "Complete" on success
	err     error
	key     string
	etag    string
	partMD5 [][md5.Size]byte
	// noETag: the Complete was answered 200 without an ETag (Ceph RGW 16.2); etag is then the
	// HEAD's.
	noETag bool
}

func (o mpuOutcome) evidence() string { return evidence(o.op, o.err) }

// mpu creates an upload, sends the parts (slices of p.data) and completes it.
func (p *prober) mpu(label string, parts []partSpec, o mpuOpts) mpuOutcome {
	key := o.key
	if key == "" {
		key = p.key(label)
	}
	out := mpuOutcome{key: key}
	cr, err := p.st.CreateMultipartUpload(p.ctx, &store.CreateMultipartUploadInput{Bucket: p.bucket, Key: key,
		ChecksumAlgorithm: o.alg, ChecksumType: o.typ})
	if err != nil {
		out.op, out.err = "Create", err
		return out
	}
	p.created(cr.UploadID, key)
	var done []store.CompletedPart
	var all []byte
	for _, ps := range parts {
		body := p.data[:ps.size]
		all = append(all, body...)
		var c store.Checksum
		if o.alg != store.ChecksumNone {
			v := checksumOf(o.alg, body)
			c = store.Checksum{Algorithm: o.alg, Value: v}
		}
		up, err := p.st.UploadPart(p.ctx, &store.UploadPartInput{Bucket: p.bucket, Key: key, UploadID: cr.UploadID,
			PartNumber: ps.num, Body: bytes.NewReader(body), ContentLength: ps.size, Checksum: c})
		if err != nil {
			out.op, out.err = fmt.Sprintf("UploadPart %d", ps.num), err
			return out
		}
		done = append(done, store.CompletedPart{PartNumber: ps.num, ETag: up.ETag, Checksum: c})
		out.partMD5 = append(out.partMD5, md5.Sum(body)) //nolint:gosec // see import
	}
	in := &store.CompleteMultipartUploadInput{Bucket: p.bucket, Key: key, UploadID: cr.UploadID, Parts: done,
		ChecksumType: o.typ, IfNoneMatch: o.ifNoneMatch}
	if o.typ == store.ChecksumTypeFullObject {
		v := checksumOf(o.alg, all)
		in.FullObjectChecksum = store.Checksum{Algorithm: o.alg, Value: v}
	}
	co, err := p.st.CompleteMultipartUpload(p.ctx, in)
	out.op = "Complete"
	if err != nil {
		out.err = err
		if _, ok := p.objects[key]; !ok {
			// A refused Complete should commit nothing, but delete the key at the end anyway.
			p.objects[key] = false
		}
		return out
	}
	// A 200 Complete committed the object, whatever its answer carries: it is ours to remove.
	delete(p.uploads, cr.UploadID)
	if !p.objects[key] {
		p.rep.Created.Objects++
	}
	p.objects[key] = true
	out.etag = co.ETag
	if co.ETag == "" {
		out.noETag = true
		p.completeNoETag++
		if h, herr := p.st.HeadObject(p.ctx, &store.HeadObjectInput{Bucket: p.bucket, Key: key}); herr == nil {
			out.etag = h.ETag
		}
	}
	p.completes++
	return out
}

// fatal reports whether err means the probe cannot go on at all (credentials, bucket, network,
// cancellation), as opposed to a rule the store rejects.
func fatal(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	status, code := statusOf(err)
	switch {
	case status == 0:
		return true // no answer at all
	case status == 403, code == "NoSuchBucket", code == "InvalidAccessKeyId", code == "SignatureDoesNotMatch":
		return true
	}
	return false
}

func (p *prober) run() error {
	ctx := p.ctx
	// Preflight: one small PUT. If it fails the endpoint, bucket or credentials are wrong and
	// no row of the table would mean anything.
	base := p.key("base")
	if _, err := p.put(base, p.data[:kib], store.Checksum{}, "", false); err != nil {
		return classified("PutObject", s3URL{Bucket: p.bucket, Key: base}, err)
	}
	obs := observed{rules: mustStrict()}

	// Non-final part sizes, each followed by a 1-byte last part.
	minSizes := []int64{5 * mib, 1 * mib, 100 * kib}
	var smallest int64
	var firstReject string
	var tinyLast mpuOutcome
	for _, size := range minSizes {
		o := p.mpu("min-"+bytesize.Format(size), []partSpec{{1, size}, {2, 1}}, mpuOpts{})
		if fatal(ctx, o.err) {
			return classified(o.op, s3URL{Bucket: p.bucket, Key: o.key}, o.err)
		}
		if size == 5*mib {
			tinyLast = o
		}
		p.row("non-final part of "+bytesize.Format(size), accepted(o.err), o.evidence())
		if o.err == nil {
			smallest = size
		} else if firstReject == "" {
			firstReject = o.evidence()
		}
	}
	if smallest == 0 {
		p.row("effective minimum non-final part", "above 5 MiB", "5 MiB rejected: "+firstReject)
		p.rep.Warnings = append(p.rep.Warnings, "the store rejects 5 MiB non-final parts; its minimum is unknown: set min= in a rules string")
		obs.rules.MinPartSize = 5 * mib
	} else {
		ev := "smallest accepted size tried"
		if firstReject != "" {
			ev += "; below it: " + firstReject
		}
		p.row("effective minimum non-final part", bytesize.Format(smallest), ev)
		obs.rules.MinPartSize = smallest
	}
	partSize := max(obs.rules.MinPartSize, 5*mib)

	if tinyLast.err == nil {
		p.row("tiny last part (1 B)", "accepted", "5 MiB + 1 B: "+tinyLast.evidence())
	} else {
		p.row("tiny last part (1 B)", "unknown", "the 5 MiB + 1 B upload was rejected: "+tinyLast.evidence())
	}

	o := p.mpu("single-part", []partSpec{{1, 64 * kib}}, mpuOpts{})
	p.row("single-part multipart (64 KiB)", accepted(o.err), o.evidence())
	single := o

	o = p.mpu("empty-last", []partSpec{{1, partSize}, {2, 0}}, mpuOpts{})
	p.row("empty trailing part (0 B)", accepted(o.err), o.evidence())
	obs.rules.NonEmptyLastPart = o.err != nil

	o = p.mpu("unequal", []partSpec{{1, 6 * mib}, {2, 5 * mib}, {3, 1}}, mpuOpts{})
	p.row("unequal non-final parts (6 MiB + 5 MiB + 1 B)", accepted(o.err), o.evidence())
	obs.rules.EqualParts = o.err != nil

	o = p.mpu("last-larger", []partSpec{{1, partSize}, {2, partSize + mib}}, mpuOpts{})
	p.row("last part larger than the others", accepted(o.err), o.evidence())
	obs.rules.LastPartNotLarger = o.err != nil

	o = p.mpu("gap", []partSpec{{1, partSize}, {3, 1}}, mpuOpts{})
	p.row("non-contiguous part numbers (1, 3)", accepted(o.err), o.evidence())
	obs.rules.ContiguousPartNumbers = o.err != nil

	// Checksums on PUT.
	algs := []store.ChecksumAlgorithm{store.ChecksumCRC32, store.ChecksumCRC32C, store.ChecksumCRC64NVME, store.ChecksumSHA256}
	putOK := map[store.ChecksumAlgorithm]string{} // algorithm → key of the accepted object
	body := p.data[:64*kib]
	for _, alg := range algs {
		v := checksumOf(alg, body)
		key := p.key("put-" + strings.ToLower(string(alg)))
		out, err := p.put(key, body, store.Checksum{Algorithm: alg, Value: v}, "", false)
		if fatal(ctx, err) {
			return classified("PutObject", s3URL{Bucket: p.bucket, Key: key}, err)
		}
		ev := evidence("PutObject", err)
		if err == nil {
			putOK[alg] = key
			if e := out.Checksums.Get(alg); e != "" {
				ev += fmt.Sprintf(", echoed %s", match(e == v))
			}
		}
		p.row("PUT with x-amz-checksum-"+strings.ToLower(string(alg)), accepted(err), ev)
	}

	// Checksums on multipart uploads, by algorithm and type.
	obs.rules.Checksums = multipart.ChecksumSupport{}
	for _, alg := range algs {
		var types multipart.ChecksumTypes
		for _, typ := range []store.ChecksumType{store.ChecksumTypeFullObject, store.ChecksumTypeComposite} {
			o := p.mpu("mpu-"+strings.ToLower(string(alg))+"-"+strings.ToLower(string(typ)), []partSpec{{1, 64 * kib}},
				mpuOpts{alg: alg, typ: typ})
			if fatal(ctx, o.err) {
				return classified(o.op, s3URL{Bucket: p.bucket, Key: o.key}, o.err)
			}
			p.row(fmt.Sprintf("multipart %s %s", alg, typ), accepted(o.err), o.evidence())
			if o.err == nil {
				if typ == store.ChecksumTypeFullObject {
					types |= multipart.FullObject
				} else {
					types |= multipart.Composite
				}
			}
		}
		setChecksumTypes(&obs.rules.Checksums, alg, types)
	}

	// HEAD with checksum mode on an object stored with a checksum.
	headAlg := store.ChecksumNone
	for _, alg := range []store.ChecksumAlgorithm{store.ChecksumCRC64NVME, store.ChecksumCRC32C, store.ChecksumCRC32} {
		if putOK[alg] != "" {
			headAlg = alg
			break
		}
	}
	if headAlg == store.ChecksumNone {
		p.row("HEAD returns stored checksums", "unknown", "no PUT with a CRC checksum was accepted")
	} else {
		want := checksumOf(headAlg, body)
		h, err := p.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: p.bucket, Key: putOK[headAlg], ChecksumMode: true})
		switch {
		case store.Unsupported(err):
			p.row("HEAD returns stored checksums", "not supported", evidence("HeadObject", err)+" (checksum mode refused)")
		case err != nil:
			p.row("HEAD returns stored checksums", "unknown", evidence("HeadObject", err))
		case h.Checksums.Get(headAlg) == "":
			p.row("HEAD returns stored checksums", "no", fmt.Sprintf("HeadObject 200 without x-amz-checksum-%s", strings.ToLower(string(headAlg))))
		default:
			ok := h.Checksums.Get(headAlg) == want
			p.row("HEAD returns stored checksums", yesNo(ok), fmt.Sprintf("HeadObject 200 x-amz-checksum-%s %s", strings.ToLower(string(headAlg)), match(ok)))
			obs.rules.HeadChecksums = ok
		}
	}

	// A wrong checksum must be rejected (else the header protects nothing).
	wrongAlg := headAlg
	if wrongAlg == store.ChecksumNone {
		wrongAlg = store.ChecksumCRC32
	}
	wrong := checksumOf(wrongAlg, p.data[kib:2*kib])
	_, err := p.put(p.key("wrong-checksum"), body, store.Checksum{Algorithm: wrongAlg, Value: wrong}, "", false)
	p.row("wrong x-amz-checksum-"+strings.ToLower(string(wrongAlg))+" rejected", yesNo(err != nil), evidence("PutObject", err))
	if err == nil {
		p.rep.Warnings = append(p.rep.Warnings, "the store accepted a body whose x-amz-checksum does not match: it does not check checksums")
		obs.rules.Checksums = multipart.ChecksumSupport{}
	}

	// A wrong Content-MD5 must be rejected.
	badMD5 := md5.Sum(p.data[kib : 2*kib]) //nolint:gosec // see import
	_, err = p.put(p.key("wrong-md5"), body, store.Checksum{}, base64.StdEncoding.EncodeToString(badMD5[:]), false)
	p.row("wrong Content-MD5 rejected", yesNo(err != nil), evidence("PutObject", err))
	obs.rules.ContentMD5 = err != nil
	if err == nil {
		p.rep.Warnings = append(p.rep.Warnings, "the store ignores Content-MD5: a body corrupted in transit would be stored")
	}

	// Conditional create on PUT: a new key succeeds, the existing one must give 412.
	fresh := p.key("cond-put")
	_, errNew := p.put(fresh, p.data[:kib], store.Checksum{}, "", true)
	_, errOld := p.put(base, p.data[kib:2*kib], store.Checksum{}, "", true)
	status, _ := statusOf(errOld)
	condPut := errNew == nil && status == 412
	ev := "new key: " + evidence("PutObject", errNew) + "; existing key: " + evidence("PutObject", errOld)
	p.row("If-None-Match: * on PUT", honoured(condPut, errOld), ev)
	obs.rules.ConditionalPut = condPut
	if errOld == nil {
		p.rep.Warnings = append(p.rep.Warnings, "If-None-Match on PUT was ignored: the existing object was overwritten")
	}

	// Conditional create on Complete, onto the existing key.
	o = p.mpu("", []partSpec{{1, 64 * kib}}, mpuOpts{key: base, ifNoneMatch: true})
	status, _ = statusOf(o.err)
	condComplete := o.op == "Complete" && status == 412
	p.row("If-None-Match: * on Complete", honoured(condComplete, o.err), "existing key: "+o.evidence())
	obs.rules.ConditionalComplete = condComplete

	// ETags.
	etagObj := p.key("etag")
	out, err := p.put(etagObj, body, store.Checksum{}, "", false)
	if err != nil {
		p.row("single PUT ETag is the body's MD5", "unknown", evidence("PutObject", err))
	} else {
		sum := md5.Sum(body) //nolint:gosec // see import
		ok := strings.EqualFold(out.ETag, hex.EncodeToString(sum[:]))
		p.row("single PUT ETag is the body's MD5", yesNo(ok), "ETag "+out.ETag)
		obs.rules.SinglePutETagMD5 = ok
	}
	switch {
	case p.completes == 0:
		p.row("Complete answer without ETag", "unknown", "no multipart upload completed")
	case p.completeNoETag > 0:
		p.row("Complete answer without ETag", "yes", fmt.Sprintf("%d of %d Complete 200 answers had no ETag; HEAD shows the object", p.completeNoETag, p.completes))
	default:
		p.row("Complete answer without ETag", "no", fmt.Sprintf("all %d Complete 200 answers had an ETag", p.completes))
	}
	mp := single
	if mp.err != nil {
		mp = tinyLast
	}
	if mp.err != nil {
		p.row("multipart ETag is md5-of-md5s-N", "unknown", "no multipart upload completed")
	} else {
		want := multipartETag(mp.partMD5)
		ok := strings.EqualFold(strings.Trim(mp.etag, `"`), want)
		from := "ETag "
		if mp.noETag {
			from = "HEAD ETag "
		}
		p.row("multipart ETag is md5-of-md5s-N", yesNo(ok), from+mp.etag)
		obs.rules.MultipartETagMD5 = ok
	}
	if err := p.optionalOps(); err != nil {
		return err
	}
	p.sse()
	p.recommend(obs.rules)
	return nil
}

// The optional operations a store may lack (s3rver answers ListParts 405, ListMultipartUploads
// 501 and AbortMultipartUpload 405), with the rows that name them; the writer skips the check
// each serves and says so in Result.Notes.
const (
	ruleListParts   = "ListParts (pre-Complete check, abort confirmation)"
	ruleListUploads = "ListMultipartUploads (lost-create sweep, sweep, recover)"
	ruleAbort       = "AbortMultipartUpload"
)

// optionalOps asks, on one upload of one part, whether the store lists parts, lists uploads and
// aborts. An upload it cannot abort is completed and its object deleted, so nothing is left.
func (p *prober) optionalOps() error {
	ctx := p.ctx
	key := p.key("optional-ops")
	unknown := func(why string) {
		for _, r := range []string{ruleListParts, ruleListUploads, ruleAbort} {
			p.row(r, "unknown", why)
		}
	}
	cr, err := p.st.CreateMultipartUpload(ctx, &store.CreateMultipartUploadInput{Bucket: p.bucket, Key: key})
	if err != nil {
		if fatal(ctx, err) {
			return classified("CreateMultipartUpload", s3URL{Bucket: p.bucket, Key: key}, err)
		}
		unknown(evidence("Create", err))
		return nil
	}
	p.created(cr.UploadID, key)
	body := p.data[:64*kib]
	up, err := p.st.UploadPart(ctx, &store.UploadPartInput{Bucket: p.bucket, Key: key, UploadID: cr.UploadID,
		PartNumber: 1, Body: bytes.NewReader(body), ContentLength: int64(len(body))})
	if err != nil {
		if fatal(ctx, err) {
			return classified("UploadPart", s3URL{Bucket: p.bucket, Key: key}, err)
		}
		unknown(evidence("UploadPart 1", err))
		return nil
	}
	lp, err := p.st.ListParts(ctx, &store.ListPartsInput{Bucket: p.bucket, Key: key, UploadID: cr.UploadID})
	ev := evidence("ListParts", err)
	if err == nil {
		ev += fmt.Sprintf(", %d part(s) listed", len(lp.Parts))
	}
	p.row(ruleListParts, supported(err), ev)
	lu, err := p.st.ListMultipartUploads(ctx, &store.ListMultipartUploadsInput{Bucket: p.bucket, Prefix: key})
	ev = evidence("ListMultipartUploads", err)
	if err == nil {
		ev += fmt.Sprintf(", %d upload(s) listed under the key", len(lu.Uploads))
	}
	p.row(ruleListUploads, supported(err), ev)
	err = p.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: p.bucket, Key: key, UploadID: cr.UploadID})
	p.row(ruleAbort, supported(err), evidence("AbortMultipartUpload", err))
	switch {
	case err == nil || isNoSuchUpload(err):
		delete(p.uploads, cr.UploadID)
		p.rep.Removed.Uploads++
	case store.Unsupported(err):
		// The only way this store lets the upload go: complete it, and delete the object at the end.
		_, cerr := p.st.CompleteMultipartUpload(ctx, &store.CompleteMultipartUploadInput{Bucket: p.bucket, Key: key, UploadID: cr.UploadID,
			Parts: []store.CompletedPart{{PartNumber: 1, ETag: up.ETag}}})
		if _, ok := p.objects[key]; !ok {
			p.objects[key] = false
		}
		if cerr == nil {
			delete(p.uploads, cr.UploadID)
			p.objects[key] = true
			p.rep.Created.Objects++
		}
	}
	return nil
}

// supported is a row's result for an optional operation.
func supported(err error) string {
	switch {
	case err == nil:
		return "supported"
	case store.Unsupported(err):
		return "not supported"
	}
	return "unknown"
}

func match(ok bool) string {
	if ok {
		return "and matches"
	}
	return "but DIFFERS"
}

func honoured(ok bool, err error) string {
	if ok {
		return "honoured"
	}
	if store.Unsupported(err) {
		return "not implemented"
	}
	if err == nil {
		return "ignored"
	}
	return "no"
}

type observed struct{ rules multipart.Rules }

func mustStrict() multipart.Rules {
	r, _ := multipart.Profile(multipart.DefaultProfile)
	r.Name = "probed"
	return r
}

func setChecksumTypes(c *multipart.ChecksumSupport, a store.ChecksumAlgorithm, t multipart.ChecksumTypes) {
	switch a {
	case store.ChecksumCRC32:
		c.CRC32 = t
	case store.ChecksumCRC32C:
		c.CRC32C = t
	case store.ChecksumCRC64NVME:
		c.CRC64NVME = t
	case store.ChecksumSHA1:
		c.SHA1 = t
	case store.ChecksumSHA256:
		c.SHA256 = t
	}
}

// probedAlgs are the algorithms probe tests; SHA1 is not, so it is left out of comparisons.
var probedAlgs = []store.ChecksumAlgorithm{store.ChecksumCRC32, store.ChecksumCRC32C, store.ChecksumCRC64NVME, store.ChecksumSHA256}

// compareProfile says whether profile p is safe on a store that behaves as obs (every layout p
// allows was accepted, every capability p relies on was seen) and lists where they differ.
func compareProfile(p, obs multipart.Rules) (safe bool, diffs []string) {
	safe = true
	check := func(name string, equal, ok bool) {
		if !equal {
			diffs = append(diffs, name)
		}
		if !ok {
			safe = false
		}
	}
	check(fmt.Sprintf("min part %s (probed %s)", bytesize.Format(p.MinPartSize), bytesize.Format(obs.MinPartSize)),
		p.MinPartSize == obs.MinPartSize, p.MinPartSize >= obs.MinPartSize)
	flag := func(name string, pv, ov bool, pStricterWhenTrue bool) {
		var ok bool
		if pStricterWhenTrue {
			ok = pv || !ov // a layout rule: the profile must keep every rule the store has
		} else {
			ok = !pv || ov // a capability: the profile may only rely on what the store has
		}
		check(fmt.Sprintf("%s=%v (probed %v)", name, pv, ov), pv == ov, ok)
	}
	flag("equal", p.EqualParts, obs.EqualParts, true)
	flag("lastnotlarger", p.LastPartNotLarger, obs.LastPartNotLarger, true)
	flag("nonemptylast", p.NonEmptyLastPart, obs.NonEmptyLastPart, true)
	flag("contiguous", p.ContiguousPartNumbers, obs.ContiguousPartNumbers, true)
	for _, a := range probedAlgs {
		pt, ot := p.Checksums.Types(a), obs.Checksums.Types(a)
		check(fmt.Sprintf("%s=%s (probed %s)", strings.ToLower(string(a)), pt, ot), pt == ot, pt&^ot == 0)
	}
	flag("md5", p.ContentMD5, obs.ContentMD5, false)
	flag("condput", p.ConditionalPut, obs.ConditionalPut, false)
	flag("condcomplete", p.ConditionalComplete, obs.ConditionalComplete, false)
	flag("etagmd5", p.SinglePutETagMD5, obs.SinglePutETagMD5, false)
	flag("mpetagmd5", p.MultipartETagMD5, obs.MultipartETagMD5, false)
	flag("headchecksums", p.HeadChecksums, obs.HeadChecksums, false)
	return safe, diffs
}

// recommend picks a known profile that matches every observation, else the rules string.
func (p *prober) recommend(obs multipart.Rules) {
	p.rep.Rules = obs.String()
	type cand struct {
		name  string
		diffs []string
	}
	var safe []cand
	for _, name := range multipart.ProfileNames() {
		r, err := multipart.Profile(name)
		if err != nil {
			continue
		}
		if ok, diffs := compareProfile(r, obs); ok {
			safe = append(safe, cand{name, diffs})
		}
	}
	sort.SliceStable(safe, func(i, j int) bool { return len(safe[i].diffs) < len(safe[j].diffs) })
	if len(safe) > 0 && len(safe[0].diffs) == 0 {
		p.rep.MatchedProfile, p.rep.Recommendation = safe[0].name, safe[0].name
		return
	}
	p.rep.Recommendation = p.rep.Rules
	if len(safe) > 0 {
		p.rep.ClosestProfile, p.rep.Differences = safe[0].name, safe[0].diffs
	}
}

// cleanup removes everything the probe made, on a context of its own so Ctrl-C still cleans
// up, then lists the scratch prefix to prove nothing is left. It aborts only the uploads this
// run created, by id: the scratch prefix is fresh, but a listing is no proof of whose an upload
// is (a store may even ignore the prefix), so anything else listed there is reported, not
// aborted.
func (p *prober) cleanup() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), 2*time.Minute)
	defer cancel()
	ids := make([]string, 0, len(p.uploads))
	for id := range p.uploads {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if p.abortOwn(ctx, p.uploads[id], id) {
			p.rep.Removed.Uploads++
			delete(p.uploads, id)
		}
	}
	keys := make([]string, 0, len(p.objects))
	for k := range p.objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		created := p.objects[k]
		if err := p.st.DeleteObject(ctx, &store.DeleteObjectInput{Bucket: p.bucket, Key: k}); err != nil {
			p.rep.Leftovers = append(p.rep.Leftovers, fmt.Sprintf("object %s: %s", printable(k), oneLine(err)))
			continue
		}
		if created {
			p.rep.Removed.Objects++
		}
	}
	under, _, err := uploadsUnder(ctx, p.st, p.bucket, p.prefix)
	if err != nil {
		return
	}
	for _, up := range under {
		if !inPrefix(up.Key, p.prefix) {
			continue // never outside the scratch prefix (uploadsUnder already checks each key)
		}
		if key, own := p.made[up.UploadID]; own && key == up.Key {
			// One of ours, listed again (a store may re-create an upload a late part reached).
			p.abortOwn(ctx, up.Key, up.UploadID)
			continue
		}
		p.rep.Cleanup = append(p.rep.Cleanup, probeUpload{Key: up.Key, UploadID: up.UploadID, State: "left-alone"})
		p.rep.Leftovers = append(p.rep.Leftovers, fmt.Sprintf("upload %s (key %s): listed under the scratch prefix but not created by this run (its id is not one the store gave it), so not aborted; "+
			"safeput sweep --run s3://%s/%s aborts it", printable(up.UploadID), printable(up.Key), p.bucket, printable(p.prefix)))
	}
}

// abortOwn aborts an upload this run created and records it in the report; true when it is
// gone.
func (p *prober) abortOwn(ctx context.Context, key, id string) bool {
	pu := probeUpload{Key: key, UploadID: id, State: "aborted"}
	err := p.st.AbortMultipartUpload(ctx, &store.AbortMultipartUploadInput{Bucket: p.bucket, Key: key, UploadID: id})
	switch {
	case err == nil:
	case isNoSuchUpload(err):
		pu.State = "gone"
	default:
		pu.State, pu.Error = "failed", oneLine(err)
		p.rep.Leftovers = append(p.rep.Leftovers, fmt.Sprintf("upload %s (key %s): %s", printable(id), printable(key), oneLine(err)))
	}
	p.rep.Cleanup = append(p.rep.Cleanup, pu)
	return pu.State != "failed"
}

func printProbe(w io.Writer, r probeReport) {
	_, _ = fmt.Fprintf(w, "probe of s3://%s in scratch prefix %s\n\n", r.Bucket, r.ScratchPrefix)
	width := len("RULE")
	for _, row := range r.Rows {
		width = max(width, len(row.Rule))
	}
	_, _ = fmt.Fprintf(w, "%-*s  %-15s  %s\n", width, "RULE", "RESULT", "EVIDENCE")
	for _, row := range r.Rows {
		_, _ = fmt.Fprintf(w, "%-*s  %-15s  %s\n", width, row.Rule, row.Result, row.Evidence)
	}
	_, _ = fmt.Fprintln(w)
	for _, warn := range r.Warnings {
		_, _ = fmt.Fprintf(w, "WARNING: %s\n", warn)
	}
	if r.MatchedProfile != "" {
		_, _ = fmt.Fprintf(w, "recommended: --provider %s (matches every probed rule)\n", r.MatchedProfile)
	} else {
		_, _ = fmt.Fprintf(w, "recommended: --provider '%s'\n", r.Recommendation)
		if r.ClosestProfile != "" {
			_, _ = fmt.Fprintf(w, "closest safe known profile: %s (differs in: %s)\n", r.ClosestProfile, strings.Join(r.Differences, "; "))
		} else {
			_, _ = fmt.Fprintln(w, "no known profile is safe on this store")
		}
	}
	_, _ = fmt.Fprintf(w, "created %d objects and %d uploads; removed %d objects and aborted %d uploads\n",
		r.Created.Objects, r.Created.Uploads, r.Removed.Objects, r.Removed.Uploads)
	if len(r.Cleanup) > 0 {
		_, _ = fmt.Fprintf(w, "uploads at clean-up (only the ones this run created are aborted):\n")
		_, _ = fmt.Fprintf(w, "  %-10s  %-60s %s\n", "STATE", "KEY", "UPLOAD ID")
		for _, u := range r.Cleanup {
			_, _ = fmt.Fprintf(w, "  %-10s  %-60s %s\n", u.State, printable(u.Key), printable(u.UploadID))
			if u.Error != "" {
				_, _ = fmt.Fprintf(w, "              error: %s\n", u.Error)
			}
		}
	}
	if len(r.Leftovers) == 0 {
		_, _ = fmt.Fprintln(w, "nothing left behind")
	} else {
		_, _ = fmt.Fprintln(w, "left behind (could not remove, or not this run's to abort):")
		for _, l := range r.Leftovers {
			_, _ = fmt.Fprintf(w, "  %s\n", l)
		}
	}
}
