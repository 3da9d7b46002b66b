package errors_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/internal/secrets"
)

// The values a store that echoes its request's headers would send back.
const (
	sessionToken = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDtokenTOKENtoken+/=="
	sseKeyB64    = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	sigV4        = "Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
)

// TestRedactHeaderForms: every header that carries a secret is blanked in each form a message
// may print it in, in any case; what is not a secret stays.
func TestRedactHeaderForms(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// A header line, as an echoing store or an HTTP dump prints it.
		{"X-Amz-Security-Token: " + sessionToken, "X-Amz-Security-Token: REDACTED"},
		{"x-amz-security-token:" + sessionToken + "\r\nHost: h", "x-amz-security-token:REDACTED\r\nHost: h"},
		{"X-AMZ-SECURITY-TOKEN:   " + sessionToken + ", next", "X-AMZ-SECURITY-TOKEN:   REDACTED, next"},
		{"X-Amz-Server-Side-Encryption-Customer-Key: " + sseKeyB64, "X-Amz-Server-Side-Encryption-Customer-Key: REDACTED"},
		{"x-amz-copy-source-server-side-encryption-customer-key: " + sseKeyB64, "x-amz-copy-source-server-side-encryption-customer-key: REDACTED"},
		{"Authorization: AWS4-HMAC-SHA256 " + sigV4 + " X-Amz-Date: 20260101T000000Z", "Authorization: REDACTED X-Amz-Date: 20260101T000000Z"},
		{"authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig, then", "authorization: REDACTED, then"},
		{"Proxy-Authorization: Basic dXNlcjpwYXNzd29yZA==", "Proxy-Authorization: REDACTED"},
		// The key's MD5 and the algorithm are not secrets.
		{"x-amz-server-side-encryption-customer-key-MD5: zZ9+abc==", "x-amz-server-side-encryption-customer-key-MD5: zZ9+abc=="},
		{"X-Amz-Server-Side-Encryption-Customer-Algorithm: AES256", "X-Amz-Server-Side-Encryption-Customer-Algorithm: AES256"},
		// Name=value: a query string, a form, a log's key=value.
		{"X-Amz-Security-Token=" + url.QueryEscape(sessionToken) + "&x=1", "X-Amz-Security-Token=REDACTED&x=1"},
		{"x-amz-server-side-encryption-customer-key=" + sseKeyB64 + " rest", "x-amz-server-side-encryption-customer-key=REDACTED rest"},
		{"security-token%3D" + sessionToken, "security-token%3DREDACTED"},
		{"AUTHORIZATION=AWS AKIAIOSFODNN7EXAMPLE:frJIUN8=", "AUTHORIZATION=REDACTED"},
		{"credential=AKIAX%2F2026%2Fus-east-1 signature=abc", "credential=REDACTED signature=REDACTED"},
		{"CREDENTIAL=AKIAX/2026 SIGNATURE=ABC", "CREDENTIAL=REDACTED SIGNATURE=REDACTED"},
		// Go's printing of an http.Header, and JSON.
		{fmt.Sprint(http.Header{"Authorization": {"AWS4-HMAC-SHA256 " + sigV4}, "X-Amz-Security-Token": {sessionToken}}),
			"map[Authorization:[REDACTED] X-Amz-Security-Token:[REDACTED]]"},
		{`{"X-Amz-Security-Token":"` + sessionToken + `","Authorization": ["AWS4-HMAC-SHA256 ` + sigV4 + `"]}`,
			`{"X-Amz-Security-Token":"REDACTED","Authorization": ["REDACTED"]}`},
		{`'x-amz-server-side-encryption-customer-key': '` + sseKeyB64 + `'`, `'x-amz-server-side-encryption-customer-key': 'REDACTED'`},
		// Credential= and Signature= outside an Authorization header.
		{"sig " + sigV4, "sig Credential=REDACTED, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=REDACTED"},
		// A URL's password, not its user.
		{`parse "https://otel:s3cr%2Fet@collector:4318/v1/traces": invalid port`, `parse "https://otel:REDACTED@collector:4318/v1/traces": invalid port`},
		{"proxyconnect tcp: http://u:p@proxy:3128", "proxyconnect tcp: http://u:REDACTED@proxy:3128"},
		{"http://user@host/ and http://host:9000/", "http://user@host/ and http://host:9000/"},
		// Words that only look like the names are left alone.
		{"AuthorizationHeaderMalformed: The authorization header is malformed", "AuthorizationHeaderMalformed: The authorization header is malformed"},
		{"The security token included in the request is invalid.", "The security token included in the request is invalid."},
		{"SignatureDoesNotMatch: check your key", "SignatureDoesNotMatch: check your key"},
		{"X-Amz-Security-Token: ", "X-Amz-Security-Token: "},
	} {
		if got := errors.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
		if got := errors.Redact(c.in); errors.Redact(got) != got {
			t.Errorf("Redact is not idempotent on %q: %q then %q", c.in, got, errors.Redact(got))
		}
	}
}

// TestRedactRegisteredValues: a registered secret is blanked wherever it appears, bare or in a
// form no pattern knows; a short value is not registered, so common words stay.
func TestRedactRegisteredValues(t *testing.T) {
	const secretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
	raw := string([]byte{0x01, 0xfe, 'k', 'e', 'y', 0x00, 0x7f, 0x80, 'r', 'a', 'w', '3', '2', 'b', 'y', 't'})
	secrets.Register(secretKey, sessionToken, raw, base64.StdEncoding.EncodeToString([]byte(raw)), "short")
	for _, c := range []struct{ in, want string }{
		{"the key " + secretKey + " was refused", "the key REDACTED was refused"},
		{"<Token>" + sessionToken + "</Token>", "<Token>REDACTED</Token>"},
		{"X-Custom-Echo: " + sessionToken, "X-Custom-Echo: REDACTED"},
		{"escaped " + url.QueryEscape(secretKey) + ".", "escaped REDACTED."},
		{"raw [" + raw + "]", "raw [REDACTED]"},
		{"b64 " + base64.StdEncoding.EncodeToString([]byte(raw)), "b64 REDACTED"},
		{"short and shorter", "short and shorter"},
		{"nothing here", "nothing here"},
	} {
		if got := errors.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	// Error() renders every field and the cause through Redact.
	e := &errors.Error{Kind: errors.Permanent, Op: "PutObject", Message: "echo " + secretKey, Err: fmt.Errorf("cause %s", sessionToken)}
	if s := e.Error(); strings.Contains(s, secretKey) || strings.Contains(s, sessionToken) {
		t.Errorf("secret in %q", s)
	}
}
