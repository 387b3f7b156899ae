package abi

import (
	"errors"
	"fmt"

	"github.com/kvhash/kvhash/core"
)

// Status is the int32 result of an export: zero for success, a negative
// code otherwise. The values are part of the ABI and never change.
type Status int32

const (
	StatusOK              Status = 0
	StatusInvalidArgument Status = -1 // NULL with a length, bad block size, bad mode, ...
	StatusBufferTooSmall  Status = -2 // *out_len holds the count needed
	StatusUnknownHandle   Status = -3 // an index handle that is not (or no longer) live
	StatusDecode          Status = -4 // malformed event JSON
	StatusRejected        Status = -5 // the index did not apply (all of) an event
	StatusInternal        Status = -6 // a recovered panic: a bug in kvhash
	StatusOutOfBounds     Status = -7 // WASM: memory outside every live allocation
	StatusNoMemory        Status = -8 // WASM: the module's memory budget cannot hold the request

	// MinStatus is the lowest status an export returns.
	MinStatus = StatusNoMemory
)

var statusNames = [...]string{
	"KVHASH_OK",
	"KVHASH_ERR_INVALID_ARGUMENT",
	"KVHASH_ERR_BUFFER_TOO_SMALL",
	"KVHASH_ERR_UNKNOWN_HANDLE",
	"KVHASH_ERR_DECODE",
	"KVHASH_ERR_REJECTED",
	"KVHASH_ERR_INTERNAL",
	"KVHASH_ERR_OUT_OF_BOUNDS",
	"KVHASH_ERR_NO_MEMORY",
}

// String is the status's C macro name.
func (s Status) String() string {
	if s <= 0 && s >= MinStatus {
		return statusNames[-s]
	}
	return fmt.Sprintf("Status(%d)", int32(s))
}

// Errors of the ABI itself; core's errors (core.ErrInvalidArgument,
// core.ErrDecode, ...) map to the other statuses.
var (
	ErrBufferTooSmall = errors.New("buffer too small")
	ErrUnknownHandle  = errors.New("unknown index handle")
	ErrOutOfBounds    = errors.New("out of bounds")
	ErrInternal       = errors.New("internal error")
	// ErrNoMemory: the WASM module refused a request that would take its
	// heap past its budget (the instance stays usable).
	ErrNoMemory = errors.New("out of memory")
)

// StatusOf maps an error to its status. Errors are classified from the most
// specific cause to the most general, so an event rejected for a stability
// violation is StatusRejected even if its error also wraps something else.
// An error this package does not know is a bug: StatusInternal.
func StatusOf(err error) Status {
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, ErrInternal):
		return StatusInternal
	case errors.Is(err, ErrNoMemory):
		return StatusNoMemory
	case errors.Is(err, ErrOutOfBounds):
		return StatusOutOfBounds
	case errors.Is(err, ErrBufferTooSmall):
		return StatusBufferTooSmall
	case errors.Is(err, ErrUnknownHandle):
		return StatusUnknownHandle
	case isDecode(err):
		return StatusDecode
	case isRejected(err):
		return StatusRejected
	case errors.Is(err, core.ErrInvalidArgument):
		return StatusInvalidArgument
	}
	return StatusInternal
}

// MaxMessageLen bounds the messages kvhash_last_error reports, in bytes;
// the C layer's per-thread buffer holds exactly this plus a NUL.
const MaxMessageLen = 4095

// Message is the text kvhash_last_error reports for err, cut to
// MaxMessageLen bytes at a UTF-8 boundary.
func Message(err error) string {
	if err == nil {
		return ""
	}
	return TruncateUTF8(err.Error(), MaxMessageLen)
}

// invalidf returns an error wrapping core.ErrInvalidArgument.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{core.ErrInvalidArgument}, args...)...)
}

// tooSmall is the error of an output buffer of have elements that needs
// need.
func tooSmall(what string, have, need int) error {
	return fmt.Errorf("%w: %s has room for %d, %d needed (written to *out_len)", ErrBufferTooSmall, what, have, need)
}
