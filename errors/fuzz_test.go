package errors_test

import (
	"context"
	stderrors "errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/secrets"
	"github.com/safeput/safeput/store"
)

// fuzzSecret is planted in fuzzed messages; it must never appear in a rendered error.
const fuzzSecret = "Zq9SECRETSIG"

// FuzzClassify builds an error from an arbitrary status, code and message, wraps it in a chain
// chosen by the bits of shape, and checks Classify's promises: no panic, never Unknown, one line,
// no planted signature.
func FuzzClassify(f *testing.F) {
	for _, r := range errors.CodeTable() {
		f.Add(r.Status, r.Code, "msg", "UploadPart", uint16(0))
		if r.OnComplete != errors.Unknown {
			f.Add(r.Status, r.Code, "msg", "CompleteMultipartUpload", uint16(1<<4))
		}
	}
	f.Add(200, "InternalError", "embedded in a 200 Complete", "CompleteMultipartUpload", uint16(0))
	f.Add(200, "", "", "UploadPart", uint16(1<<8))
	f.Add(0, "", "connection reset", "", uint16(1<<9))
	f.Add(503, "slowdown ", "Please reduce your request rate.\nRetry", "PutObject", uint16(0xffff))
	f.Add(-1, "\x00", "Credential=AKIAIOSFODNN7EXAMPLE/2026", "Head", uint16(0x5555))
	f.Add(999999, strings.Repeat("X", 300), strings.Repeat("é", 400), "Abort", uint16(0xaaaa))
	f.Add(412, "", "", "Complete", uint16(1<<10))
	f.Add(404, "NoSuchUpload", "", "Complete", uint16(1<<4|1<<1))
	f.Fuzz(func(t *testing.T, status int, code, message, op string, shape uint16) {
		if shape&(1<<12) != 0 {
			message += " X-Amz-Signature=" + fuzzSecret
		}
		var err error = &store.ResponseError{Op: op, StatusCode: status, Code: code, Message: message, RequestID: "R"}
		switch {
		case shape&(1<<8) != 0:
			err = &store.ResponseError{Op: op, StatusCode: status, Message: message, Err: store.ErrNonCompliant}
		case shape&(1<<9) != 0:
			err = stderrors.New(message)
		case shape&(1<<10) != 0:
			err = fmt.Errorf("%w: %s", store.ErrInvalidInput, message)
		}
		if shape&(1<<0) != 0 {
			err = fmt.Errorf("wrapped %s: %w", message, err)
		}
		if shape&(1<<1) != 0 {
			err = stderrors.Join(err, io.ErrUnexpectedEOF)
		}
		if shape&(1<<2) != 0 {
			err = &url.Error{Op: "Put", URL: "https://h/k?X-Amz-Signature=" + fuzzSecret, Err: err}
		}
		if shape&(1<<3) != 0 {
			err = &net.OpError{Op: "read", Net: "tcp", Err: err}
		}
		if shape&(1<<4) != 0 {
			err = &errors.Error{Op: op, Bucket: "b", Key: message, Err: err}
		}
		if shape&(1<<5) != 0 {
			err = fmt.Errorf("%w; %w", err, context.DeadlineExceeded)
		}
		if shape&(1<<6) != 0 {
			err = errors.Classify(err)
		}
		if shape&(1<<7) != 0 {
			err = &errors.Error{Kind: errors.Kind(shape >> 13), Message: message, Err: err}
		}
		if shape&(1<<11) != 0 {
			err = stderrors.Join(err, syscall.ECONNRESET)
		}

		e := errors.Classify(err)
		check(t, e)
		ctx, cancel := context.WithCancel(context.Background())
		live := errors.ClassifyContext(ctx, err)
		check(t, live)
		cancel()
		check(t, errors.ClassifyContext(ctx, err))
		if e.Kind == errors.Unknown {
			t.Fatal("Classify of a non-nil error is Unknown")
		}
		_ = errors.IsTimeout(err)
	})
}

func check(t *testing.T, e *errors.Error) {
	t.Helper()
	if e == nil {
		t.Fatal("Classify returned nil for a non-nil error")
	}
	if e.Kind == errors.Unknown || e.Kind < 0 || e.Kind.String() == "" {
		t.Fatalf("kind %v for %#v", e.Kind, e)
	}
	s := e.Error()
	if strings.ContainsAny(s, "\r\n") {
		t.Fatalf("not one line: %q", s)
	}
	if strings.Contains(s, fuzzSecret) {
		t.Fatalf("signature leaked: %q", s)
	}
	if r := errors.Redact(s); errors.Redact(r) != r {
		t.Fatalf("Redact is not idempotent on %q", s)
	}
}

// fuzzRegistered is registered as a secret value by FuzzRedact; fuzzToken is only ever put
// after a header name that carries a secret.
const (
	fuzzRegistered = "Zq9REGISTEREDvalue/+="
	fuzzToken      = "Zq9HeaderTokenValue"
)

// FuzzRedact puts a registered secret and a secret header's value among arbitrary text and
// checks Redact's promises: neither survives, and redacting again changes nothing.
func FuzzRedact(f *testing.F) {
	secrets.Register(fuzzRegistered)
	names := []string{"Authorization", "x-amz-security-token", "X-AMZ-SERVER-SIDE-ENCRYPTION-CUSTOMER-KEY",
		"x-amz-copy-source-server-side-encryption-customer-key", "Proxy-Authorization", "Security-Token"}
	seps := []string{": ", ":", "=", "%3D", ":[", `":"`, `": ["`, " : ", "='"}
	f.Add("", "", uint8(0), "")
	f.Add("map[Host:[h] ", "", uint8(1), "] X-Amz-Date:[x]")
	f.Add("{\"a\":1,", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/2026, SignedHeaders=host, Signature=", uint8(2), `"}`)
	f.Add("Authorization: REDACTED in use ", "Bearer ", uint8(3), ", x=1")
	f.Add("x-amz-server-side-encryption-customer-key-MD5: abc\n", "", uint8(4), "\r\nnext: "+fuzzRegistered)
	f.Add(strings.Repeat("é", 40), "AWS ", uint8(5), strings.Repeat("\x00", 3))
	f.Fuzz(func(t *testing.T, prefix, scheme string, form uint8, suffix string) {
		if strings.Contains(prefix+scheme+suffix, fuzzToken) {
			t.Skip()
		}
		name := names[int(form)%len(names)]
		sep := seps[int(form/8)%len(seps)]
		if !strings.HasPrefix(strings.ToLower(name), "authorization") && !strings.HasSuffix(strings.ToLower(name), "-authorization") {
			scheme = "" // only Authorization has a scheme before its credential
		}
		s := prefix + " " + name + sep + scheme + fuzzToken + suffix + " " + fuzzRegistered
		r := errors.Redact(s)
		if strings.Contains(r, fuzzRegistered) {
			t.Fatalf("registered secret leaked: %q -> %q", s, r)
		}
		if strings.ContainsAny(scheme, " \t\n\f\r,\"'<>]") {
			return // a scheme that is not one token ends the header before the value
		}
		if strings.Contains(r, fuzzToken) {
			t.Fatalf("header value leaked: %q -> %q", s, r)
		}
		if errors.Redact(r) != r {
			t.Fatalf("Redact is not idempotent on %q: %q then %q", s, r, errors.Redact(r))
		}
	})
}

// FuzzRedactCues holds Redact's shortcut to the pattern: text the cue scan passes over (no cue,
// all ASCII) is text the pattern cannot match, so skipping it redacts nothing less. The seeds
// carry every cue in odd cases, and the non-ASCII that case folding maps onto a cue's letter.
func FuzzRedactCues(f *testing.F) {
	for _, s := range []string{"", "bucket/key", "logs/2026/12/part-00001.parquet", "PutObject", "https://s3.example/b",
		"Authorization: AWS4-HMAC-SHA256 x", "X-Amz-Security-Token=abc", "x-amz-server-side-encryption-customer-key: k",
		"CREDENTIAL=AKIA0123456789ABCDEF", "sig: Signature%3Dabc", "AWSAccessKeyId=AKIA0123456789ABCDEF",
		"AWS ABCDEFGHIJKLMNOP:sig=", "asia0123456789ABCDEF", "AIDA0123456789ABCDEF", "aroa0123456789abcdef",
		"a\u212Aia0123456789ABCDEF", "\u017Fecurity-token=x", "x://u:p@h", "proxy-authorization=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !errors.MayHoldSecret(s) && errors.SecretPatternMatches(s) {
			t.Fatalf("the cue scan passes over %q, which the pattern matches", s)
		}
	})
}

// TestRedactCues: the scan finds each cue in any case, and passes over what a write logs about
// its object.
func TestRedactCues(t *testing.T) {
	for _, s := range []string{"AUTHORIZATION", "x-Amz-Security-Token", "sse-Customer-Key", "Credential", "sIgNaTuRe",
		"awsAccessKeyId", "s3://b", "Aws x", "AKIA", "asia", "Aida", "arOA", "kéy"} {
		if !errors.MayHoldSecret(s) {
			t.Errorf("the cue scan passes over %q", s)
		}
	}
	for _, s := range []string{"", "bucket", "logs/2026/12/07/segment-000123.log", "index/shard-7.bin", "PutObject",
		"UploadPart", "upload-id_0123ABC", "manifests/v2.json"} {
		if errors.MayHoldSecret(s) {
			t.Errorf("the cue scan stops at %q, which holds no cue", s)
		}
	}
}
