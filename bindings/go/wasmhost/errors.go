package wasmhost

import (
	"errors"
	"fmt"

	"github.com/kvhash/kvhash/core"
	"github.com/kvhash/kvhash/internal/abi"
)

// Status is a status code returned by a kvhash export (the ABI shared by
// the C library and the WASM module). The values and names come from
// internal/abi, their one definition; it is its own type rather than an
// alias of abi.Status so that its documentation and methods stay this
// package's (an internal type's would not show in its godoc) and a code
// this package does not know still prints as "kvhash status N".
type Status int32

// Status codes of the kvhash ABI.
const (
	StatusOK              = Status(abi.StatusOK)
	StatusInvalidArgument = Status(abi.StatusInvalidArgument)
	StatusBufferTooSmall  = Status(abi.StatusBufferTooSmall)
	StatusUnknownHandle   = Status(abi.StatusUnknownHandle)
	StatusDecode          = Status(abi.StatusDecode)
	StatusRejected        = Status(abi.StatusRejected)
	StatusInternal        = Status(abi.StatusInternal)
	StatusOutOfBounds     = Status(abi.StatusOutOfBounds)
	StatusNoMemory        = Status(abi.StatusNoMemory)
)

// String names the status as the C header does. A code outside the ABI
// (a module newer than this package) is shown as a number.
func (s Status) String() string {
	if s <= StatusOK && s >= Status(abi.MinStatus) {
		return abi.Status(s).String()
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
	// ErrNoMemory is KVHASH_ERR_NO_MEMORY, or a request too large for a
	// module instance: the module refused to grow its heap past its
	// budget. Nothing changed; the instance and its indexes stay usable,
	// and freeing indexes makes room again.
	ErrNoMemory = errors.New("kvhash: too large for the module's memory")
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
	case StatusNoMemory:
		return []error{ErrNoMemory}
	}
	return nil
}
