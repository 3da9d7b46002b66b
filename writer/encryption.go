package writer

import (
	"context"
	stderrors "errors"
	"strings"

	"go.uber.org/zap"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// Server-side encryption is asked for on PutObject and CreateMultipartUpload (and, for SSE-C,
// the key on every request that touches the data) and proven by the HEAD after commit: a store
// (or a gateway in front of one) that ignores the headers stores plaintext and still answers
// 200, so an answer is no proof.

// factsKey keeps what an Uploader learns about ETags apart per encryption: SSE-KMS and SSE-C
// objects of a bucket whose plain objects have MD5 ETags do not.
func factsKey(bucket string, e store.Encryption) string {
	switch e.Type {
	case store.SSEKMS, store.SSEC:
		return bucket + "\x00" + string(e.Type)
	}
	return bucket
}

// etagsMayNotBeMD5 reports whether the encryption asked for makes the store's ETags something
// other than MD5s of the data (AWS documents this for SSE-KMS and SSE-C): a profile's word that
// ETags are MD5s does not hold for such writes, and an ETag that differs proves nothing.
func etagsMayNotBeMD5(e store.Encryption) bool {
	return e.Type == store.SSEKMS || e.Type == store.SSEC
}

// customerKeyAsked reports whether the write sends an SSE-C key.
func (cfg config) customerKeyAsked() bool { return cfg.sse.Type == store.SSEC }

// plainHTTP reports an endpoint spoken to without TLS.
func plainHTTP(endpoint string) bool {
	return len(endpoint) >= len("http://") && strings.EqualFold(endpoint[:len("http://")], "http://")
}

// sseCOverHTTP says why u's store must not be sent an SSE-C key ("" when it may): its endpoint
// (store.Endpointer) is plain http://, so the key would cross the network in a header anyone on
// the path can read, and the caller did not allow it (Options.AllowSSECOverHTTP). When allowed,
// it logs a warning, once per Uploader, through log. A store that names no endpoint is not
// checked: its caller knows how it is reached.
func (u *Uploader) sseCOverHTTP(sendsKey, allowed bool, log *zap.Logger) string {
	if !sendsKey || !plainHTTP(u.endpoint) {
		return ""
	}
	if !allowed {
		return "SSE-C over plain HTTP refused: every request would carry the customer key in the clear to " + u.endpoint +
			"; use an https:// endpoint, or set AllowSSECOverHTTP to send it anyway"
	}
	if log != nil && u.sseCWarned.CompareAndSwap(false, true) {
		log.Warn("SSE-C over plain HTTP (AllowSSECOverHTTP): every request carries the customer key in the clear; anyone on the path can read it and decrypt the object",
			zap.String("endpoint", u.endpoint))
	}
	return ""
}

// customerKey is the SSE-C key every request touching this write's data carries (nil for none).
func (cfg config) customerKey() store.CustomerKey {
	if cfg.sse.Type == store.SSEC {
		return cfg.sse.CustomerKey
	}
	return nil
}

// checkEncryption compares the encryption head reports with what was asked and records it in
// res. A shortfall is a Compatibility error coded EncryptionNotApplied (retrying cannot change
// what the store does with the headers); when ours, the object is deleted.
func (v *verifier) checkEncryption(head *store.HeadObjectOutput, res *Result, ours bool) *sperrors.Error {
	res.Encryption = head.Encryption
	asked := v.cfg.sse
	why := asked.Unmet(head.Encryption)
	if why == "" {
		return nil
	}
	e := v.errs.errorf(sperrors.Compatibility, "Verify", nil, "the store answered 200 but did not apply the encryption asked for (%s): asked for %s, the store reports %s",
		why, asked, head.Encryption)
	e.Code = sperrors.CodeEncryptionNotApplied
	v.log.Error("the object landed without the encryption asked for", zap.Stringer("asked", asked),
		zap.Stringer("reported", head.Encryption), zap.Int64("size", res.Size), zap.String("upload_id", res.UploadID))
	if !ours {
		e.Message += "; the object at the key was left in place: it may be another writer's"
		e.ObjectLeft = true
		return e
	}
	return v.removeDamaged(e, "unencrypted")
}

// headPlainAfterRefusal is the HEAD without the SSE-C key after a HEAD with it failed with a
// 4xx other than 404: a store answers so when the object is not encrypted with that key (stored
// plaintext by a store or gateway that dropped the headers). The plain HEAD then shows what is
// there; nil when it fails too.
func (v *verifier) headPlainAfterRefusal(err error) *store.HeadObjectOutput {
	var re *store.ResponseError
	if v.cfg.customerKey == nil || !stderrors.As(err, &re) || re.StatusCode < 400 || re.StatusCode >= 500 || re.StatusCode == 404 {
		return nil
	}
	var head *store.HeadObjectOutput
	herr := v.req.do("HeadObject", 0, func(ctx context.Context, _ int) error {
		h, err := v.st.HeadObject(ctx, &store.HeadObjectInput{Bucket: v.bucket, Key: v.key})
		head = h
		return err
	})
	if herr != nil {
		return nil
	}
	return head
}
