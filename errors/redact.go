package errors

import "regexp"

// secretPattern matches the credential-bearing parts of SigV2/SigV4 headers and presigned URLs
// that can leak into messages (a url.Error prints the request URL; a store may echo the
// Authorization header): Credential=, Signature=, X-Amz-Security-Token=, AWSAccessKeyId=, a SigV2
// "AWS AKID:sig" header, and bare access key ids.
var secretPattern = regexp.MustCompile(
	`(?i)((?:x-amz-)?(?:credential|signature|security-token)|awsaccesskeyid)(=|%3D)[^&\s,;"'<>]*` +
		`|\bAWS [A-Z0-9]{16,128}:[A-Za-z0-9+/=]+` +
		`|\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,124}\b`)

// Redact replaces anything in s that looks like a credential or a request signature with
// "REDACTED". Error() applies it to every line it renders; adapters may use it on messages.
func Redact(s string) string {
	if s == "" {
		return s
	}
	return secretPattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretPattern.FindStringSubmatch(m)
		if len(sub) > 2 && sub[1] != "" {
			return sub[1] + sub[2] + "REDACTED"
		}
		return "REDACTED"
	})
}
