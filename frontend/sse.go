package frontend

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"github.com/safeput/safeput/store"
)

// SSE is server-side encryption as the front ends take it (the CLI's --sse, --sse-kms-key-id,
// --sse-kms-encryption-context, --bucket-key-enabled and --sse-c-key-file, following the AWS
// CLI's names; the C ABI's config fields of the same names).
type SSE struct {
	// Type is "" (none), "AES256" (SSE-S3) or "aws:kms" (SSE-KMS); SSE-C is asked for by
	// CustomerKeyFile alone.
	Type       string
	KMSKeyID   string
	KMSContext string // a JSON object of strings
	BucketKey  bool
	// CustomerKeyFile holds the 32-byte SSE-C key, raw or in base64 (a trailing newline is
	// ignored). The key is never printed, not even in an error.
	CustomerKeyFile string
}

// Encryption validates s and returns the encryption it asks for. Errors name the setting (in
// the CLI's spelling) and the rule, never the key.
func (s SSE) Encryption() (store.Encryption, error) {
	var e store.Encryption
	switch s.Type {
	case "":
	case string(store.SSES3), string(store.SSEKMS):
		e.Type = store.SSEType(s.Type)
	default:
		return e, fmt.Errorf("sse %q: want AES256 (SSE-S3) or aws:kms (SSE-KMS); SSE-C is asked for with sse-c-key-file", s.Type)
	}
	if (s.KMSKeyID != "" || s.KMSContext != "" || s.BucketKey) && e.Type != store.SSEKMS {
		return e, fmt.Errorf("sse-kms-key-id, sse-kms-encryption-context and bucket-key-enabled need sse aws:kms")
	}
	e.KMSKeyID, e.BucketKey = s.KMSKeyID, s.BucketKey
	if s.KMSContext != "" {
		if err := json.Unmarshal([]byte(s.KMSContext), &e.KMSContext); err != nil {
			return e, fmt.Errorf("sse-kms-encryption-context: want a JSON object of strings: %w", err)
		}
	}
	if s.CustomerKeyFile != "" {
		if e.Type != store.SSENone {
			return e, fmt.Errorf("sse-c-key-file and sse %s: one encryption per object", s.Type)
		}
		key, err := ReadCustomerKey(s.CustomerKeyFile)
		if err != nil {
			return e, err
		}
		e = store.Encryption{Type: store.SSEC, CustomerKey: key}
	}
	if err := e.Validate(); err != nil {
		return e, err
	}
	return e, nil
}

// ReadCustomerKey reads an SSE-C key file: exactly 32 bytes, or their base64 (a trailing
// newline ignored). The error says which rule failed, never what the file holds.
func ReadCustomerKey(path string) (store.CustomerKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sse-c-key-file: %w", err)
	}
	if len(b) == store.CustomerKeySize {
		return store.CustomerKey(b), nil
	}
	text := bytes.TrimSpace(b)
	key := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, derr := base64.StdEncoding.Decode(key, text)
	if derr != nil || n != store.CustomerKeySize {
		return nil, fmt.Errorf("sse-c-key-file %s: want the 32-byte key, raw or in base64; the file has %d bytes that are neither", path, len(b))
	}
	return store.CustomerKey(key[:n]), nil
}
