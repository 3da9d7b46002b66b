// Command lib is the shared-library build of the C ABI:
//
//	go build -buildmode=c-shared -o libsafeput.so ./lib
//
// It exports the functions of safeput.h and nothing else.
package main

import _ "github.com/safeput/safeput/cabi" // the exported functions

func main() {}
