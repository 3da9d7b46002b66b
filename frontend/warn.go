package frontend

import (
	"fmt"
	"strings"

	sperrors "github.com/safeput/safeput/errors"
	"github.com/safeput/safeput/store"
)

// MaxConcurrency is the most parts in flight the front ends take (--concurrency, "concurrency"):
// the writer's own limit (writer.Options.Concurrency), checked first so the error names the
// front end's setting and is bad input.
const MaxConcurrency = 1024

// The front ends' own warnings about the transport: what the CLI prints on stderr whatever its
// log level and the C ABI puts in its close JSON ("warnings"), since each is a choice the user
// made that weakens what safeput promises, and a log line at warn level (the library's) is
// hidden at the front ends' defaults. setting names the choice as the front end spells it
// ("--insecure-skip-verify", "insecure_skip_verify").

// InsecureTLSWarning is the warning for certificate verification turned off.
func InsecureTLSWarning(setting string) string {
	return "TLS certificate verification is off (" + setting + "): anyone on the path can read and alter what is sent; trust a private CA with a CA bundle instead"
}

// SSECOverHTTP checks that an SSE-C key (sendsKey) may be sent to st: refused, naming the rule
// and allow (the front end's opt-in), when st's endpoint is plain http:// and allowed is false;
// a warning when allowed; nothing for an https endpoint, no key, or a store that names no
// endpoint. The writer enforces the same rule (writer.Options.AllowSSECOverHTTP); the front ends
// check first so the error names their own setting and is bad input, before any request.
func SSECOverHTTP(st store.Store, sendsKey, allowed bool, allow string) (warning string, err error) {
	if !sendsKey {
		return "", nil
	}
	e, ok := store.Find[store.Endpointer](st)
	if !ok || !strings.HasPrefix(strings.ToLower(e.Endpoint()), "http://") {
		return "", nil
	}
	// A password in the endpoint URL is a secret like any other.
	endpoint := sperrors.Redact(e.Endpoint())
	if !allowed {
		return "", fmt.Errorf("SSE-C over plain HTTP refused: every request would carry the customer key in the clear to %s; "+
			"use an https:// endpoint, or set %s to send it anyway", endpoint, allow)
	}
	return "SSE-C over plain HTTP (" + allow + "): every request carries the customer key in the clear to " + endpoint +
		"; anyone on the path can read it and decrypt the object", nil
}
