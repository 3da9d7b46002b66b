package errors

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/safeput/safeput/internal/secrets"
)

// headerSep is what stands between a secret's name and its value in the forms a message may
// print it in: a header line (Name: value), a query or parameter (Name=value, Name%3Dvalue), Go's
// printing of an http.Header (Name:[value]) and JSON ("Name":"value", "Name": ["value"]).
const headerSep = `["']?[ \t]*(?::|=|%3D)[ \t]*[\["']*[ \t]*`

// secretPattern matches the credential-bearing parts of SigV2/SigV4 headers and presigned URLs
// that can leak into messages (a url.Error prints the request URL; a store may echo the request's
// headers), in any case:
//   - the Authorization (and Proxy-Authorization) header: its scheme, credential and
//     comma-separated parameters, whole;
//   - X-Amz-Security-Token and the SSE-C key headers (x-amz-server-side-encryption-customer-key,
//     x-amz-copy-source-server-side-encryption-customer-key; not their -MD5 companions): the value;
//   - Credential=, Signature=, AWSAccessKeyId= as a query or parameter: the value;
//   - the password of a URL's user info (scheme://user:password@host);
//   - a SigV2 "AWS AKID:sig" credential and bare access key ids.
//
// It is compiled at its first use, not at init: every process that links the package (the CLI
// for --help, a C caller loading the library) would otherwise pay for it at start-up, whether or
// not it ever renders an error (GODEBUG=inittrace=1 shows the package's init).
var secretPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)` +
		`\b((?:proxy-)?authorization)(` + headerSep + `)((?:[a-z0-9][a-z0-9_-]*[ \t]+)?[^\s,\]"'<>]+(?:,[ \t]*[a-z][a-z0-9_-]*=[^\s,\]"'<>]*)*)` +
		`|\b((?:x-amz-)?security-token|(?:x-amz-(?:copy-source-)?)?server-side-encryption-customer-key)(` + headerSep + `)[^\s,;&\]"'<>]+` +
		`|((?:x-amz-)?(?:credential|signature)|awsaccesskeyid)(=|%3D)[^&\s,;\]"'<>]*` +
		`|(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s/@]+@` +
		`|\bAWS [A-Z0-9]{16,128}:[A-Za-z0-9+/=]+` +
		`|\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,124}\b`)
})

// Redact replaces with "REDACTED" anything in s that looks like a credential, a request signature
// or an SSE-C key (the forms secretPattern lists), and every secret value the process has
// registered: the secret keys and session tokens the adapters sign with and the SSE-C keys they
// send (raw and base64), wherever they appear and whatever surrounds them. Error() applies it to
// every line it renders; adapters may use it on messages.
func Redact(s string) string {
	if s == "" {
		return s
	}
	s = secrets.Replace(s)
	if !mayHoldSecret(s) {
		return s
	}
	matches := secretPattern().FindAllStringSubmatchIndex(s, -1)
	if matches == nil {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, m := range matches {
		b.WriteString(s[last:m[0]])
		last = m[1]
		switch {
		case m[2] >= 0: // Authorization: name, separator, value
			b.WriteString(s[m[2]:m[5]])
			b.WriteString(secrets.Marker)
			if rest, ok := strings.CutPrefix(s[m[6]:m[7]], secrets.Marker); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				// Already redacted: what follows the marker is text after the header, which the
				// value's optional scheme took for the credential. Keep it, so Redact is idempotent.
				b.WriteString(rest)
			}
		case m[8] >= 0: // a token or key header: name and separator kept
			b.WriteString(s[m[8]:m[11]])
			b.WriteString(secrets.Marker)
		case m[12] >= 0: // a query parameter: name and separator kept
			b.WriteString(s[m[12]:m[15]])
			b.WriteString(secrets.Marker)
		case m[16] >= 0: // a URL's password: scheme, user and the @ kept
			b.WriteString(s[m[16]:m[17]])
			b.WriteString(secrets.Marker)
			b.WriteByte('@')
		default:
			b.WriteString(secrets.Marker)
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// secretCues are the words every match of secretPattern contains, in lower case: a header or
// parameter name, a URL's "://", a SigV2 "aws " credential, an access key id's prefix.
var secretCues = [...]string{"authorization", "security-token", "customer-key", "credential", "signature",
	"awsaccesskeyid", "://", "aws ", "akia", "asia", "aida", "aroa"}

// mayHoldSecret reports whether s could match secretPattern: it holds one of secretCues in any
// ASCII case, or a byte outside ASCII, which the pattern's case folding may take for a letter of
// one (the Kelvin sign folds to k). What a write logs per request (bucket, key, operation) rarely
// holds one, so Redact then skips the pattern's match, and a process that never meets one never
// compiles it: the CLI's put would otherwise compile it before its first request goes.
func mayHoldSecret(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return true
		}
		c |= 0x20 // a letter's lower case; another byte this lands on a cue's first byte fails EqualFold below
		if c != 'a' && c != 's' && c != 'c' && c != ':' {
			continue
		}
		for _, cue := range secretCues {
			if cue[0] == c && len(s)-i >= len(cue) && strings.EqualFold(s[i:i+len(cue)], cue) {
				return true
			}
		}
	}
	return false
}
