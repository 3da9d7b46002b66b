package errors_test

import (
	stderrors "errors"
	"strings"
	"testing"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// The answers of a store with no room for the bytes, as the test servers send them (MinIO:
// cmd/api-errors.go ErrStorageFull, and toAPIError's InternalError with its cause; Versity:
// s3err.ErrNoSpaceLeftOnDevice), measured on a 160 MiB tmpfs given a 300 MiB object.
const (
	minioFullMessage      = "Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed."
	minioENOSPCMessage    = "We encountered an internal error, please try again.: cause(no space left on device)"
	gatewayNoSpaceMessage = "No space left on device."
)

// A full store is Transient and StoreFull, whichever of its answers came, with the store's own
// code, status and message kept; nothing else is StoreFull.
func TestStoreFull(t *testing.T) {
	full := func(status int, code, message string) *store.ResponseError {
		return &store.ResponseError{Op: "UploadPart", StatusCode: status, Code: code, Message: message, RequestID: "REQ1", Err: stderrors.New("sdk error")}
	}
	for _, c := range []struct {
		name string
		err  *store.ResponseError
		want bool
		kind errors.Kind
	}{
		{"MinIO below its free-drive threshold", full(507, "XMinioStorageFull", minioFullMessage), true, errors.Transient},
		{"MinIO drive filled during the write", full(500, "InternalError", minioENOSPCMessage), true, errors.Transient},
		{"MinIO's ENOSPC in a 200 Complete body", full(200, "InternalError", minioENOSPCMessage), true, errors.Transient},
		{"the gateway's ENOSPC", full(507, "InsufficientStorage", gatewayNoSpaceMessage), true, errors.Transient},
		{"a 507 with a code of its own", full(507, "SomethingNew", "out of room"), true, errors.Transient},
		{"a 507 without a body", full(507, "", ""), true, errors.Transient},
		{"another internal error", full(500, "InternalError", "We encountered an internal error, please try again.: cause(file not found)"), false, errors.Transient},
		{"a quota is not a full store", full(403, "QuotaExceeded", "Your request was denied due to quota exceeded."), false, errors.Permanent},
		{"ENOSPC named by a refusal", full(400, "InvalidArgument", "no space left on device"), false, errors.Permanent},
		{"a part too large", full(400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size."), false, errors.Compatibility},
	} {
		for wname, wrap := range wrappers {
			e := errors.Classify(wrap(c.err))
			if e.StoreFull != c.want || e.Kind != c.kind {
				t.Errorf("%s (%s): StoreFull %v kind %s, want %v %s", c.name, wname, e.StoreFull, e.Kind, c.want, c.kind)
			}
			if e.Code != c.err.Code || e.StatusCode != c.err.StatusCode || e.Message != c.err.Message {
				t.Errorf("%s (%s): the store's answer not kept: %+v", c.name, wname, e)
			}
			if c.want && (!e.Retryable() || !strings.Contains(e.Error(), "store full") || !strings.Contains(e.Error(), c.err.Message)) {
				t.Errorf("%s (%s): %q retryable %v: want it retryable and saying the store is full, with its message", c.name, wname, e.Error(), e.Retryable())
			}
		}
		// Through the retry policy's template: the flag survives with the write's facts.
		tmpl := errors.Classify(&errors.Error{Op: "UploadPart", Bucket: "b", Key: "k", UploadID: "u1", PartNumber: 3, Err: c.err})
		if tmpl.StoreFull != c.want || tmpl.UploadID != "u1" {
			t.Errorf("%s: through a template: %+v", c.name, tmpl)
		}
	}
}

// Every code that means a full store is in the code table (so the package doc lists it), as
// Transient.
func TestStoreFullCodesInTable(t *testing.T) {
	for _, code := range errors.StoreFullCodes() {
		found := false
		for _, r := range errors.CodeTable() {
			if r.Code == code {
				found = r.Kind == errors.Transient
			}
		}
		if !found {
			t.Errorf("%s: no Transient row in the code table", code)
		}
	}
}
