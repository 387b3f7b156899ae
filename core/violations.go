package core

import (
	"errors"
	"fmt"
)

// Violation is a kind of hash-stability violation: an event that only an
// engine with unstable (non-deterministic or inconsistent) block hashes,
// or a lost event, can produce. docs/guides/hash-stability.md explains
// each kind, its likely cause and its fix.
type Violation uint8

// The violation kinds. NumViolations sizes the per-kind counter arrays.
const (
	// ViolationParentNotFound: a store names a parent block the worker
	// does not hold. The whole store is dropped.
	ViolationParentNotFound Violation = iota
	// ViolationBlockNotFound: a remove names a block the worker does not
	// hold. That hash is skipped; the rest of the event is applied.
	ViolationBlockNotFound
	// ViolationHashMismatch: a stored block's content (local hash, under
	// the same parent) is already in the tree under another external hash.
	// The existing node is reused.
	ViolationHashMismatch
	// ViolationSelfReference: a store with a block whose external hash is
	// the store's parent hash. The whole store is rejected.
	ViolationSelfReference
	// ViolationDuplicateStore: a worker stores a block it already holds
	// under the same external hash. Nothing changes.
	ViolationDuplicateStore
	// ViolationNameReused: a worker names a block with an external hash it
	// already uses for another block (other content, another position, or
	// a cycle such as A, then B under A, then A under B; also a hash that
	// repeats within one store). The block is stored; the worker keeps the
	// other block without a name, as Dynamo does, so nothing it holds
	// becomes unreachable (docs/index.md).
	ViolationNameReused

	NumViolations
)

var violationNames = [NumViolations]string{
	ViolationParentNotFound: "parent_not_found",
	ViolationBlockNotFound:  "block_not_found",
	ViolationHashMismatch:   "hash_mismatch",
	ViolationSelfReference:  "self_reference",
	ViolationDuplicateStore: "duplicate_store",
	ViolationNameReused:     "name_reused",
}

// String returns the snake_case name used in logs and stats JSON.
func (v Violation) String() string {
	if v < NumViolations {
		return violationNames[v]
	}
	return fmt.Sprintf("violation_%d", uint8(v))
}

// rejects reports whether a violation of this kind keeps (part of) the
// event from being applied, in any mode.
func (v Violation) rejects() bool {
	switch v {
	case ViolationParentNotFound, ViolationBlockNotFound, ViolationSelfReference:
		return true
	}
	return false
}

var (
	// ErrStability is matched (errors.Is) by every *StabilityError.
	ErrStability = errors.New("hash stability violation")
	// ErrEventRejected is matched by a *StabilityError whose event, or part
	// of it, was not applied: parent not found, block not found, self
	// reference.
	ErrEventRejected = errors.New("event rejected")
)

// StabilityError reports one stability violation.
type StabilityError struct {
	Kind     Violation
	Worker   Worker
	EventID  uint64
	Hash     uint64 // the external hash concerned (parent, removed block, stored block)
	Enforced bool   // the index was in ModeEnforce
}

func (e *StabilityError) Error() string {
	var what string
	switch e.Kind {
	case ViolationParentNotFound:
		what = "parent block not found; store dropped"
	case ViolationBlockNotFound:
		what = "removed block not found; skipped"
	case ViolationHashMismatch:
		what = "block content already indexed under another external hash"
	case ViolationSelfReference:
		what = "a stored block has the store's parent hash; store rejected"
	case ViolationDuplicateStore:
		what = "worker stored a block it already holds"
	case ViolationNameReused:
		what = "worker reused an external hash it holds for another block; that block kept without a name"
	default:
		what = "unknown violation"
	}
	mode := "warn"
	if e.Enforced {
		mode = "enforce"
	}
	return fmt.Sprintf("%s (%s, %s mode): %s: worker %d rank %d, event %d, hash %d",
		ErrStability, e.Kind, mode, what, e.Worker.ID, e.Worker.DPRank, e.EventID, e.Hash)
}

// Is makes errors.Is(err, ErrStability) true for every StabilityError and
// errors.Is(err, ErrEventRejected) true when the kind rejects.
func (e *StabilityError) Is(target error) bool {
	return target == ErrStability || (target == ErrEventRejected && e.Kind.rejects())
}
