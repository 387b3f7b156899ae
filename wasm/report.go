package main

import "github.com/kvhash/kvhash/internal/abi"

// lastError is the message of the last failed call. A module instance runs
// one call at a time, so one variable is per-thread enough.
var lastError string

// fail records err as the last error and returns its status; nil is
// KVHASH_OK and leaves the last error alone.
func fail(err error) int32 {
	if err == nil {
		return int32(abi.StatusOK)
	}
	lastError = abi.Message(err)
	return int32(abi.StatusOf(err))
}

// catch is deferred first by every export returning a status: a panic
// becomes KVHASH_ERR_INTERNAL instead of a trap.
func catch(st *int32) {
	if v := recover(); v != nil {
		*st = fail(abi.Recovered(v))
	}
}

// catchValue is catch for exports returning a value: a panic yields 0 and
// sets the last error.
func catchValue[T ~uint32 | ~uint64](out *T) {
	if v := recover(); v != nil {
		fail(abi.Recovered(v))
		*out = 0
	}
}

// flag converts an i32 flag.
func flag(v int32) bool { return v != 0 }
