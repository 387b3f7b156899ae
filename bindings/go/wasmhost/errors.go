package wasmhost

import (
	"errors"
	"fmt"

	"github.com/kvhash/kvhash/core"
)

// Status is a status code returned by a kvhash export (the ABI shared by
// the C library and the WASM module).
type Status int32

// Status codes of the kvhash ABI.
const (
	StatusOK              Status = 0
	StatusInvalidArgument Status = -1
	StatusBufferTooSmall  Status = -2
	StatusUnknownHandle   Status = -3
	StatusDecode          Status = -4
	StatusRejected        Status = -5
	StatusInternal        Status = -6
	StatusOutOfBounds     Status = -7
)

// String names the status as the C header does.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "KVHASH_OK"
	case StatusInvalidArgument:
		return "KVHASH_ERR_INVALID_ARGUMENT"
	case StatusBufferTooSmall:
		return "KVHASH_ERR_BUFFER_TOO_SMALL"
	case StatusUnknownHandle:
		return "KVHASH_ERR_UNKNOWN_HANDLE"
	case StatusDecode:
		return "KVHASH_ERR_DECODE"
	case StatusRejected:
		return "KVHASH_ERR_REJECTED"
	case StatusInternal:
		return "KVHASH_ERR_INTERNAL"
	case StatusOutOfBounds:
		return "KVHASH_ERR_OUT_OF_BOUNDS"
	}
	return fmt.Sprintf("kvhash status %d", int32(s))
}

// Sentinels for the statuses core has no error for, and for host-side
// failures. Match them with errors.Is. INVALID_ARGUMENT matches
// core.ErrInvalidArgument, DECODE core.ErrDecode and REJECTED
// core.ErrStability, so code written against core keeps working.
var (
	ErrBufferTooSmall = errors.New("kvhash: buffer too small")
	ErrUnknownHandle  = errors.New("kvhash: unknown index handle")
	ErrInternal       = errors.New("kvhash: internal error in the module")
	ErrOutOfBounds    = errors.New("kvhash: pointer or length outside a live allocation")
	// ErrRejected is KVHASH_ERR_REJECTED: a stability violation that is
	// an error in the index's current mode.
	ErrRejected = errors.New("kvhash: event rejected by the index")
	// ErrInstanceFailed means a module instance trapped or exited; it is
	// discarded, and indexes that lived in it are gone.
	ErrInstanceFailed = errors.New("kvhash: module instance failed")
	// ErrClosed is returned after Module.Close.
	ErrClosed = errors.New("kvhash: module closed")
)

// Error is a failed call of a kvhash export: its status and the message
// the module left in kvhash_last_error.
type Error struct {
	Op      string // the export, e.g. "kvhash_block_hashes"
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %s", e.Op, e.Status)
	}
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Status, e.Message)
}

// Unwrap lets errors.Is find both the status's own sentinel and the core
// sentinel of the same meaning.
func (e *Error) Unwrap() []error {
	switch e.Status {
	case StatusInvalidArgument:
		return []error{core.ErrInvalidArgument}
	case StatusBufferTooSmall:
		return []error{ErrBufferTooSmall}
	case StatusUnknownHandle:
		return []error{ErrUnknownHandle}
	case StatusDecode:
		return []error{core.ErrDecode}
	case StatusRejected:
		// The ABI does not say whether the event was applied in part
		// (core.ErrEventRejected) or only counted as enforced
		// (core.ErrStability alone), so only the latter is promised.
		return []error{ErrRejected, core.ErrStability}
	case StatusInternal:
		return []error{ErrInternal}
	case StatusOutOfBounds:
		return []error{ErrOutOfBounds}
	}
	return nil
}
