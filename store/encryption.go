package store

import (
	"crypto/md5" //nolint:gosec // SSE-C sends the key's MD5 by definition
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// SSEType names a server-side encryption mode, spelled as the x-amz-server-side-encryption header
// spells it (SSE-C has no value there: it is sent as x-amz-server-side-encryption-customer-*).
type SSEType string

// The server-side encryption modes.
const (
	SSENone SSEType = ""
	// SSES3 is encryption with keys the store manages (x-amz-server-side-encryption: AES256).
	SSES3 SSEType = "AES256"
	// SSEKMS is encryption with a key of the store's KMS (aws:kms, an optional key id).
	SSEKMS SSEType = "aws:kms"
	// SSEC is encryption with a key the caller sends on every request that touches the data.
	SSEC SSEType = "SSE-C"
)

// CustomerKeySize is the length of an SSE-C key: AES-256.
const CustomerKeySize = 32

// CustomerKey is an SSE-C key. It prints, marshals and logs as "[redacted]" whatever the verb,
// so a key inside an input, an Encryption or a Result cannot leak through fmt, zap or JSON.
type CustomerKey []byte

const redacted = "[redacted]"

// String implements fmt.Stringer: "[redacted]", or "" for no key.
func (k CustomerKey) String() string {
	if len(k) == 0 {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer.
func (k CustomerKey) GoString() string { return k.String() }

// Format implements fmt.Formatter: every verb (%x and %v included) prints String.
func (k CustomerKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// MarshalText implements encoding.TextMarshaler (and so JSON and zap's reflection encoder).
func (k CustomerKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// MD5 returns the base64 MD5 of the key, as x-amz-server-side-encryption-customer-key-MD5
// carries it ("" for no key).
func (k CustomerKey) MD5() string {
	if len(k) == 0 {
		return ""
	}
	sum := md5.Sum(k) //nolint:gosec // the header is defined as MD5
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Base64 returns the key as x-amz-server-side-encryption-customer-key carries it. Only adapters
// call it, to build that header.
func (k CustomerKey) Base64() string { return base64.StdEncoding.EncodeToString(k) }

// Encryption is server-side encryption: asked for on PutObject and CreateMultipartUpload, or
// reported by a HEAD. The zero value is none.
type Encryption struct {
	Type SSEType
	// KMSKeyID is the KMS key (SSE-KMS); "" asks for the store's default key. Reported, it is
	// what the store names (AWS and MinIO may answer with an ARN ending in the key asked for).
	KMSKeyID string
	// KMSContext is the SSE-KMS encryption context, sent as base64 JSON; only asked, not reported.
	KMSContext map[string]string
	// BucketKey asks for (or reports) an S3 Bucket Key for SSE-KMS.
	BucketKey bool
	// CustomerKey is the SSE-C key (CustomerKeySize bytes); only asked, never reported.
	CustomerKey CustomerKey
	// CustomerKeyMD5 is the base64 MD5 of the SSE-C key the store reports; asked, it is
	// computed from CustomerKey.
	CustomerKeyMD5 string
}

// IsZero reports whether no encryption is set.
func (e Encryption) IsZero() bool {
	return e.Type == SSENone && e.KMSKeyID == "" && len(e.KMSContext) == 0 && !e.BucketKey && len(e.CustomerKey) == 0 && e.CustomerKeyMD5 == ""
}

// KeyMD5 returns the SSE-C key's MD5: CustomerKeyMD5 when set, else computed from CustomerKey.
func (e Encryption) KeyMD5() string {
	if e.CustomerKeyMD5 != "" {
		return e.CustomerKeyMD5
	}
	return e.CustomerKey.MD5()
}

// String describes e for errors and logs, without the SSE-C key: "none", "SSE-S3 (AES256)",
// "SSE-KMS (aws:kms, key k1, bucket key)", "SSE-C (AES256, key MD5 …)".
func (e Encryption) String() string {
	switch e.Type {
	case SSENone:
		return "none"
	case SSES3:
		return "SSE-S3 (AES256)"
	case SSEKMS:
		s := "SSE-KMS (aws:kms"
		if e.KMSKeyID != "" {
			s += ", key " + e.KMSKeyID
		}
		if e.BucketKey {
			s += ", bucket key"
		}
		return s + ")"
	case SSEC:
		return "SSE-C (AES256, key MD5 " + e.KeyMD5() + ")"
	}
	return fmt.Sprintf("%q", string(e.Type))
}

// KMSContextHeader returns the SSE-KMS context as the x-amz-server-side-encryption-context header
// carries it (base64 of the JSON object), "" for none.
func (e Encryption) KMSContextHeader() string {
	if len(e.KMSContext) == 0 {
		return ""
	}
	b, _ := json.Marshal(e.KMSContext) // a map[string]string always marshals; keys sorted
	return base64.StdEncoding.EncodeToString(b)
}

// Validate checks that e can be asked for: a known type, the fields of that type only, and an
// SSE-C key of CustomerKeySize bytes.
func (e Encryption) Validate() error {
	switch e.Type {
	case SSENone:
		if !e.IsZero() {
			return invalid("encryption: fields set without a type")
		}
	case SSES3:
		if e.KMSKeyID != "" || len(e.KMSContext) > 0 || e.BucketKey || len(e.CustomerKey) > 0 || e.CustomerKeyMD5 != "" {
			return invalid("encryption SSE-S3: only the type may be set (a KMS key or a customer key needs SSE-KMS or SSE-C)")
		}
	case SSEKMS:
		if len(e.CustomerKey) > 0 || e.CustomerKeyMD5 != "" {
			return invalid("encryption SSE-KMS: a customer key needs SSE-C")
		}
		if _, ok := e.KMSContext[""]; ok {
			return invalid("encryption SSE-KMS: empty key in the encryption context")
		}
		if strings.TrimSpace(e.KMSKeyID) != e.KMSKeyID {
			return invalid("encryption SSE-KMS: the key id %q has surrounding spaces", e.KMSKeyID)
		}
	case SSEC:
		if len(e.CustomerKey) != CustomerKeySize {
			return invalid("encryption SSE-C: the customer key is %d bytes, want %d (AES-256)", len(e.CustomerKey), CustomerKeySize)
		}
		if e.KMSKeyID != "" || len(e.KMSContext) > 0 || e.BucketKey {
			return invalid("encryption SSE-C: KMS fields set")
		}
		if e.CustomerKeyMD5 != "" && e.CustomerKeyMD5 != e.CustomerKey.MD5() {
			return invalid("encryption SSE-C: CustomerKeyMD5 is not the MD5 of the key")
		}
	default:
		return invalid("encryption: unknown type %q (want %q, %q or %q)", e.Type, SSES3, SSEKMS, SSEC)
	}
	return nil
}

// validateCustomerKey checks the SSE-C key of an input that only carries one (UploadPart,
// HeadObject, GetObject, CompleteMultipartUpload).
func validateCustomerKey(op string, k CustomerKey) error {
	if len(k) != 0 && len(k) != CustomerKeySize {
		return invalid("%s: the SSE-C customer key is %d bytes, want %d", op, len(k), CustomerKeySize)
	}
	return nil
}

// Unmet says how the encryption a store reported falls short of e, the one asked for ("" when it
// does not): another type or none; for SSE-KMS with a key id, another key (a key reported as an
// ARN ending in ":"+id or "/"+id is that key, as AWS and MinIO report it); for SSE-C, another
// key MD5. A bucket key asked for is not required back: it changes cost, not protection.
func (e Encryption) Unmet(reported Encryption) string {
	switch e.Type {
	case SSENone:
		return ""
	case SSES3, SSEKMS:
		if reported.Type != e.Type {
			return "another encryption or none"
		}
		if k := e.KMSKeyID; e.Type == SSEKMS && k != "" && reported.KMSKeyID != k &&
			!strings.HasSuffix(reported.KMSKeyID, ":"+k) && !strings.HasSuffix(reported.KMSKeyID, "/"+k) {
			return "another KMS key"
		}
	case SSEC:
		if reported.Type != SSEC {
			return "another encryption or none"
		}
		if reported.CustomerKeyMD5 != e.KeyMD5() {
			return "another customer key"
		}
	}
	return ""
}
