// Package frontend is what a front end of safeput needs to behave as the project's own two do,
// the CLI (cmd/safeput) and the C ABI (cabi): a store built from the same connection settings
// and credential sources (Conn), the same exit codes (the ABI's status codes), and the same JSON
// shapes for a Result and a failure (JSONResult, JSONError).
//
// Those conventions are user-visible: scripts read the CLI's exit codes and its --json output,
// and C callers the ABI's status codes and JSON. So this module is published with the same
// promise as the library from v0.1.0: its exported API is listed in api/frontend.txt, checked
// by a test, and changes only compatibly. It is a module of its own, beside the library's, so
// what it links in for credentials (the SDK's configuration, IMDS, SSO, STS) stays out of the
// library's go.mod.
package frontend
