// Package ctest links the reference C caller (abi_prog.c) into a Go binary together with the
// cabi package: the in-process way to use the C ABI, as a Go storage node hosting a C++ or Rust
// columnar writer would.
package ctest

/*
#cgo CFLAGS: -I${SRCDIR}/../.. -Wall -Werror
#cgo LDFLAGS: -lpthread
#include <stdlib.h>

int safeput_abi_prog(int argc, char **argv);
*/
import "C"

import (
	"unsafe"

	_ "github.com/safeput/safeput/cabi" // the functions abi_prog.c calls, in this binary
)

// Run runs abi_prog's scenario args[0] with its arguments in this process and returns its code.
func Run(args []string) int {
	if len(args) == 0 {
		return 2
	}
	argv := make([]*C.char, len(args))
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	defer func() {
		for _, p := range argv {
			C.free(unsafe.Pointer(p))
		}
	}()
	// argv is Go memory holding only C pointers, which cgo allows for the call's duration.
	return int(C.safeput_abi_prog(C.int(len(argv)), (**C.char)(unsafe.Pointer(&argv[0]))))
}
