package writer

import (
	"context"
	stderrors "errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/safeput/safeput/store"
)

// Optional operations. ListParts (the pre-Complete listing check, the abort's confirmation),
// ListMultipartUploads (the look for an upload a lost create answer left), an offered checksum
// header and HEAD's checksum mode are each one layer of proof that a store may not implement
// (s3rver answers ListParts 405 and ListMultipartUploads 501). None is the last layer: each
// part's receipt is checked before, the post-commit proof (checksum, MD5 ETag, read-back) after.
// So an answer store.Unsupported recognises is remembered by the Uploader for the bucket, the
// layer is skipped with a note saying which check could not run and why, and the write still
// ends strongly verified or fails Unverifiable.

// The optional operations an Uploader remembers a store lacking.
const (
	optListParts        = "ListParts"
	optListUploads      = "ListMultipartUploads"
	optHeadChecksumMode = "HEAD checksum mode (x-amz-checksum-mode)"
	optCondPut          = "If-None-Match: * on PutObject"
	optCondComplete     = "If-None-Match: * on CompleteMultipartUpload"
)

// conditionRefused marks a create-only request the store refused for its If-None-Match header
// (405/501): nothing was stored or committed, so it is sent again without the header.
type conditionRefused struct{ err error }

func (c *conditionRefused) Error() string { return "conditional header refused: " + c.err.Error() }

func (c *conditionRefused) Unwrap() error { return c.err }

// conditionRefusal is the conditionRefused in err's chain, nil when there is none (or err is nil,
// with nothing allocated).
func conditionRefusal(err error) *conditionRefused {
	if err == nil {
		return nil
	}
	var refused *conditionRefused
	if stderrors.As(err, &refused) {
		return refused
	}
	return nil
}

// optionalOps runs one write's optional operations (ListParts before Complete, HEAD's checksum
// mode, the conditional create) and does without those the store lacks: it asks the endpoint's
// facts whether the store is known to lack one, records a "not supported" answer there for the
// Uploader's later writes, and notes (Result.Notes) each check that could not run and what
// stands in for it. It owns no state of its own; the upload id it only logs.
type optionalOps struct {
	st          store.Store
	bucket, key string
	customerKey store.CustomerKey // the SSE-C key the HEAD carries (nil for none)
	createOnly  bool              // Options.CreateOnly
	req         *requester
	facts       *endpointFacts
	notes       *notes
	log         *zap.Logger
	upload      openUpload // the open multipart upload, named in the logs
}

// guardCreate decides how a create-only commit (op) is guarded (decide_create.go): honoured says
// the profile knows the store honours If-None-Match on it. A refusal known from earlier is
// noted: the HEAD before the commit stands in for the header.
func (o *optionalOps) guardCreate(honoured bool, op string) createGuard {
	if !o.createOnly {
		return createGuard{}
	}
	why := o.facts.lacking(op)
	if why != "" {
		o.skipped("the conditional create", op, why, condInstead)
	}
	return guardCreate(true, why != "", honoured)
}

// condInstead is what stands in for a conditional create the store does not support.
const condInstead = "the key was checked free with a HEAD before writing, which a concurrent writer can race"

// conditionUnsupported records and notes the store's refusal of If-None-Match on op.
func (o *optionalOps) conditionUnsupported(op string, err error) {
	o.skipped("the conditional create", op, o.lacksOp(op, err), condInstead)
}

// unsupportedWhy says how the store refused: "HTTP 405 MethodNotAllowed".
func unsupportedWhy(err error) string {
	var re *store.ResponseError
	if !stderrors.As(err, &re) {
		return "not supported"
	}
	if re.Code == "" {
		return fmt.Sprintf("HTTP %d", re.StatusCode)
	}
	return fmt.Sprintf("HTTP %d %s", re.StatusCode, re.Code)
}

// lacking returns why the store is known not to support op, "" when it is not known to lack it.
func (f *endpointFacts) lacking(op string) string {
	if err := f.lackingErr(op); err != nil {
		return unsupportedWhy(err)
	}
	return ""
}

// lackingErr returns the store's answer that it does not support op, nil when none came.
func (f *endpointFacts) lackingErr(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lacks[op]
}

// lacksOp records that the store answered op with "not supported" (err) and returns why.
func (o *optionalOps) lacksOp(op string, err error) string {
	why := unsupportedWhy(err)
	o.facts.update(func(f *endpointFacts) {
		if f.lacks == nil {
			f.lacks = map[string]error{}
		}
		f.lacks[op] = err
	})
	o.log.Warn("the store does not support an optional operation: going on with the proof it can still give",
		zap.String("op", op), zap.String("why", why), zap.String("upload_id", uploadIDOf(o.upload)))
	return why
}

// skipped notes and logs a check that could not run because the store lacks op.
func (o *optionalOps) skipped(check, op, why, instead string) {
	msg := fmt.Sprintf("%s did not run: the store does not support %s (%s); %s", check, op, why, instead)
	o.notes.add(msg)
	o.log.Info("check skipped", zap.String("check", check), zap.String("op", op), zap.String("why", why),
		zap.String("upload_id", uploadIDOf(o.upload)))
}

// listPartsForCheck lists the upload for the pre-Complete check. ok is false when the store does
// not list parts (known before, or answered so now): the check is then skipped, with a note.
func (o *optionalOps) listPartsForCheck(uploadID string) (listed []store.Part, ok bool, err error) {
	const check = "the pre-Complete ListParts check"
	const instead = "each part's receipt was checked when it was sent, and the post-commit proof decides"
	if why := o.facts.lacking(optListParts); why != "" {
		o.skipped(check, optListParts, why, instead)
		return nil, false, nil
	}
	err = o.req.do("ListParts", 0, func(ctx context.Context, _ int) error {
		out, err := o.st.ListParts(ctx, &store.ListPartsInput{Bucket: o.bucket, Key: o.key, UploadID: uploadID})
		if err != nil {
			return err
		}
		listed = out.Parts
		return nil
	})
	if err != nil && store.Unsupported(err) {
		o.skipped(check, optListParts, o.lacksOp(optListParts, err), instead)
		return nil, false, nil
	}
	return listed, err == nil, err
}

// headWithChecksum is the HEAD after commit. It asks for the stored checksums unless the store
// refuses HEAD's checksum mode (known before, or answered so now): then it asks without, and
// the ETag or a read-back must prove the object.
func (o *optionalOps) headWithChecksum() (*store.HeadObjectOutput, error) {
	const check = "reading the stored checksum after commit"
	const instead = "the ETag (where it is an MD5) or a read-back decides"
	mode := true
	if why := o.facts.lacking(optHeadChecksumMode); why != "" {
		o.skipped(check, optHeadChecksumMode, why, instead)
		mode = false
	}
	var head *store.HeadObjectOutput
	err := o.req.do("HeadObject", 0, func(ctx context.Context, _ int) error {
		h, err := o.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: o.bucket, Key: o.key, ChecksumMode: mode, SSECustomerKey: o.customerKey})
		if err != nil && mode && store.Unsupported(err) {
			o.skipped(check, optHeadChecksumMode, o.lacksOp(optHeadChecksumMode, err), instead)
			mode = false
			h, err = o.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: o.bucket, Key: o.key, SSECustomerKey: o.customerKey})
		}
		head = h
		return err
	})
	return head, err
}
