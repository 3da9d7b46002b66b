// Package frontend is what safeput's two front ends, the CLI (cmd/safeput) and the C ABI (cabi),
// share so that they behave alike: a store built from the same connection settings and
// credential sources, the same exit codes (the ABI's status codes), and the same JSON shapes for
// a Result and a failure.
//
// It is a module of its own, beside the library's: the front ends' conventions (credential
// sources, exit codes, JSON) are not the library's API, and what it links in for them stays out
// of the library's go.mod. Its exported names serve those two programs and follow them: they are
// not covered by the library's compatibility promise, and they are not part of api/safeput.txt.
package frontend
