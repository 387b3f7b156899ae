package main

// #include <stdint.h>
import "C"

import "github.com/kvhash/kvhash/internal/abi"

// fail reports err as this thread's last error and returns its status;
// nil is KVHASH_OK and leaves the last error alone.
func fail(err error) C.int32_t {
	if err == nil {
		return C.int32_t(abi.StatusOK)
	}
	setLastError(abi.Message(err))
	return C.int32_t(abi.StatusOf(err))
}

// catch is deferred first by every export returning a status: it turns a
// panic into KVHASH_ERR_INTERNAL (recover only works in the deferred
// function itself, so this is not shared with the WASM layer).
func catch(st *C.int32_t) {
	if v := recover(); v != nil {
		*st = fail(abi.Recovered(v))
	}
}

// catchValue is catch for exports returning a value instead of a status:
// a panic yields the zero value (0, NULL) and sets the last error.
func catchValue[T ~uint64 | *C.char](out *T) {
	if v := recover(); v != nil {
		fail(abi.Recovered(v))
		var zero T
		*out = zero
	}
}

// flag converts a C int flag.
func flag(v C.int32_t) bool { return v != 0 }
