// Package cabi is safeput's C ABI: the functions declared in safeput.h, exported with
// cgo. Build it as a shared library from ./lib (go build -buildmode=c-shared), or import it from
// a Go program whose C or C++ code calls the same functions in-process.
//
// Nothing Go-owned crosses the boundary: writers are named by integer handles, strings the
// library returns are allocated with malloc and released with safeput_free, and every call
// recovers its own panics.
package cabi

/*
#include <stdint.h>
#include <stdlib.h>

// const-qualified types, so the prototypes cgo generates match safeput.h.
typedef const char *safeput_cstr;
typedef const void *safeput_cbytes;
*/
import "C"

import (
	"math"
	"unsafe"
)

// versionC lives as long as the process: safeput_version's string is never freed.
var versionC = C.CString(Version)

// setJSON hands s to the caller through out (which may be NULL: the caller does not want it).
func setJSON(out **C.char, s string) {
	if out == nil {
		return
	}
	if s == "" {
		*out = nil
		return
	}
	*out = C.CString(s)
}

func finish(o outcome, jsonOut **C.char) C.int {
	setJSON(jsonOut, o.json)
	return C.int(o.status)
}

//export safeput_open
func safeput_open(configJSON C.safeput_cstr, handleOut *C.int64_t, jsonOut **C.char) C.int {
	if handleOut != nil {
		*handleOut = 0
	}
	if configJSON == nil {
		return finish(badInput("open: config_json is NULL"), jsonOut)
	}
	if handleOut == nil {
		return finish(badInput("open: handle_out is NULL"), jsonOut)
	}
	h, o := Open(C.GoString((*C.char)(unsafe.Pointer(configJSON))))
	*handleOut = C.int64_t(h)
	return finish(o, jsonOut)
}

// maxConfigLen bounds safeput_open_len's config: a config is a few hundred bytes, and a length
// from an uninitialised variable must not make the library read gigabytes.
const maxConfigLen = 1 << 20

//export safeput_open_len
func safeput_open_len(configJSON C.safeput_cstr, n C.size_t, handleOut *C.int64_t, jsonOut **C.char) C.int {
	if handleOut != nil {
		*handleOut = 0
	}
	if configJSON == nil && n > 0 {
		return finish(badInput("open: config_json is NULL with config_len %d", uint64(n)), jsonOut)
	}
	if handleOut == nil {
		return finish(badInput("open: handle_out is NULL"), jsonOut)
	}
	if uint64(n) > maxConfigLen {
		return finish(badInput("open: config_len %d is above the 1 MiB limit", uint64(n)), jsonOut)
	}
	var text string
	if n > 0 {
		// Exactly n bytes, copied: no search for a NUL past them (see VALGRIND in safeput.h).
		text = C.GoStringN((*C.char)(unsafe.Pointer(configJSON)), C.int(n))
	}
	h, o := Open(text)
	*handleOut = C.int64_t(h)
	return finish(o, jsonOut)
}

//export safeput_write
func safeput_write(handle C.int64_t, buf C.safeput_cbytes, n C.size_t, jsonOut **C.char) C.int {
	if n == 0 {
		return finish(Write(int64(handle), nil), jsonOut)
	}
	if buf == nil {
		return finish(badInput("write: buf is NULL with len %d", uint64(n)), jsonOut)
	}
	if uint64(n) > math.MaxInt {
		return finish(badInput("write: len %d is too large", uint64(n)), jsonOut)
	}
	// The writer copies from p and does not keep it, so C memory can be read in place.
	p := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	return finish(Write(int64(handle), p), jsonOut)
}

//export safeput_close
func safeput_close(handle C.int64_t, jsonOut **C.char) C.int {
	return finish(Close(int64(handle)), jsonOut)
}

//export safeput_abort
func safeput_abort(handle C.int64_t, jsonOut **C.char) C.int {
	return finish(Abort(int64(handle)), jsonOut)
}

//export safeput_free
func safeput_free(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}

//export safeput_version
func safeput_version() C.safeput_cstr {
	return C.safeput_cstr(unsafe.Pointer(versionC))
}
