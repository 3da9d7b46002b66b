package miniogo

import (
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7/pkg/encrypt"

	"github.com/safeput/safeput/internal/secrets"
	"github.com/safeput/safeput/store"
)

// sse sends a store.Encryption through minio-go: one implementation of encrypt.ServerSide for
// every mode, so the headers are the ones the aws adapter sends (minio-go's own SSE-KMS has no
// bucket-key flag). minio-go marshals it on PutObject and NewMultipartUpload for every type, and
// on UploadPart, HEAD and GET only for SSE-C, which is what S3 wants.
type sse struct{ e store.Encryption }

// newSSE returns the encrypt.ServerSide for e, nil for none.
func newSSE(e store.Encryption) encrypt.ServerSide {
	if e.Type == store.SSENone {
		return nil
	}
	return sse{e: e}
}

// customerKey returns the SSE-C encrypt.ServerSide for k, nil for none.
func customerKey(k store.CustomerKey) encrypt.ServerSide {
	if len(k) == 0 {
		return nil
	}
	return sse{e: store.Encryption{Type: store.SSEC, CustomerKey: k}}
}

func (s sse) Type() encrypt.Type {
	switch s.e.Type {
	case store.SSEKMS:
		return encrypt.KMS
	case store.SSEC:
		return encrypt.SSEC
	}
	return encrypt.S3
}

func (s sse) Marshal(h http.Header) {
	switch s.e.Type {
	case store.SSES3:
		h.Set(encrypt.SseGenericHeader, string(store.SSES3))
	case store.SSEKMS:
		h.Set(encrypt.SseGenericHeader, string(store.SSEKMS))
		if s.e.KMSKeyID != "" {
			h.Set(encrypt.SseKmsKeyID, s.e.KMSKeyID)
		}
		if c := s.e.KMSContextHeader(); c != "" {
			h.Set(encrypt.SseEncryptionContext, c)
		}
		if s.e.BucketKey {
			h.Set(bucketKeyHeader, "true")
		}
	case store.SSEC:
		b64 := s.e.CustomerKey.Base64()
		secrets.Register(b64, string(s.e.CustomerKey)) // a store may echo the header back in an error
		h.Set(encrypt.SseCustomerAlgorithm, "AES256")
		h.Set(encrypt.SseCustomerKey, b64)
		h.Set(encrypt.SseCustomerKeyMD5, s.e.CustomerKey.MD5())
	}
}

const bucketKeyHeader = "X-Amz-Server-Side-Encryption-Bucket-Key-Enabled"

// encryptionFromHeader is the encryption a HEAD's headers report.
func encryptionFromHeader(h http.Header) store.Encryption {
	e := store.Encryption{
		Type:      store.SSEType(h.Get(encrypt.SseGenericHeader)),
		KMSKeyID:  h.Get(encrypt.SseKmsKeyID),
		BucketKey: strings.EqualFold(h.Get(bucketKeyHeader), "true"),
	}
	if h.Get(encrypt.SseCustomerAlgorithm) != "" || h.Get(encrypt.SseCustomerKeyMD5) != "" {
		e.Type, e.CustomerKeyMD5 = store.SSEC, h.Get(encrypt.SseCustomerKeyMD5)
	}
	return e
}
