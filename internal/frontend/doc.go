// Package frontend is what safeput's two front ends, the CLI (cmd/safeput) and the C ABI (cabi),
// share so that they behave alike: a store built from the same connection settings and
// credential sources, the same exit codes (the ABI's status codes), and the same JSON shapes for
// a Result and a failure.
//
// It is a module of its own so that the library's go.mod does not gain the shared-config loader
// (aws-sdk-go-v2/config) that only the front ends need.
package frontend
