"""Status codes of the kvhash ABI and the exceptions they become.

The library decides what is an error and says why (kvhash_last_error); this
module only chooses the Python exception class for each status code. Every
class derives from both KvHashError (catch-all for library errors) and the
builtin exception Dynamo's bindings raise for the same situation, so code
written against ``dynamo.llm`` (``except ValueError`` / ``except
RuntimeError``) keeps working.
"""

from __future__ import annotations

OK = 0
ERR_INVALID_ARGUMENT = -1
ERR_BUFFER_TOO_SMALL = -2
ERR_UNKNOWN_HANDLE = -3
ERR_DECODE = -4
ERR_REJECTED = -5
ERR_INTERNAL = -6
ERR_OUT_OF_BOUNDS = -7  # WASM only
ERR_NO_MEMORY = -8  # WASM only

STATUS_NAMES = {
    OK: "KVHASH_OK",
    ERR_INVALID_ARGUMENT: "KVHASH_ERR_INVALID_ARGUMENT",
    ERR_BUFFER_TOO_SMALL: "KVHASH_ERR_BUFFER_TOO_SMALL",
    ERR_UNKNOWN_HANDLE: "KVHASH_ERR_UNKNOWN_HANDLE",
    ERR_DECODE: "KVHASH_ERR_DECODE",
    ERR_REJECTED: "KVHASH_ERR_REJECTED",
    ERR_INTERNAL: "KVHASH_ERR_INTERNAL",
    ERR_OUT_OF_BOUNDS: "KVHASH_ERR_OUT_OF_BOUNDS",
    ERR_NO_MEMORY: "KVHASH_ERR_NO_MEMORY",
}


class KvHashError(Exception):
    """Base of every error the kvhash library reports.

    ``status`` is the ABI status code (a negative int), ``message`` the text
    of ``kvhash_last_error`` for the failing call.
    """

    status: int = ERR_INTERNAL

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgumentError(KvHashError, ValueError):
    """KVHASH_ERR_INVALID_ARGUMENT: the library rejected an argument."""

    status = ERR_INVALID_ARGUMENT


class DecodeError(KvHashError, ValueError):
    """KVHASH_ERR_DECODE: malformed event JSON."""

    status = ERR_DECODE


class RejectedError(KvHashError, RuntimeError):
    """KVHASH_ERR_REJECTED: the index rejected an event, fully or partly."""

    status = ERR_REJECTED


class UnknownHandleError(KvHashError, RuntimeError):
    """KVHASH_ERR_UNKNOWN_HANDLE: the index handle is not live."""

    status = ERR_UNKNOWN_HANDLE


class InternalError(KvHashError, RuntimeError):
    """KVHASH_ERR_INTERNAL (a recovered panic), KVHASH_ERR_OUT_OF_BOUNDS (a
    binding bug in the WASM backend), or a status this package does not
    know."""

    status = ERR_INTERNAL


class NoMemoryError(KvHashError, MemoryError):
    """KVHASH_ERR_NO_MEMORY (WASM backend): the request would take the
    module's heap past its memory budget. Nothing changed and the instance
    keeps working (hashing is never refused): free trees and retry.

    A MemoryError, since that is what running out of memory is in Python;
    but unlike the builtin one it is recoverable and says which request
    did not fit."""

    status = ERR_NO_MEMORY


class BufferTooSmall(Exception):
    """KVHASH_ERR_BUFFER_TOO_SMALL, with the count the library needs.

    Internal: the API layer catches it, grows the buffer and calls again.
    """

    def __init__(self, needed: int) -> None:
        super().__init__("buffer too small: %d needed" % needed)
        self.needed = needed


_CLASSES = {
    ERR_INVALID_ARGUMENT: InvalidArgumentError,
    ERR_DECODE: DecodeError,
    ERR_REJECTED: RejectedError,
    ERR_UNKNOWN_HANDLE: UnknownHandleError,
    ERR_INTERNAL: InternalError,
    ERR_OUT_OF_BOUNDS: InternalError,
    ERR_NO_MEMORY: NoMemoryError,
}


def error_for(status: int, message: str) -> KvHashError:
    """The exception for a failed call (status != OK, != BUFFER_TOO_SMALL)."""
    cls = _CLASSES.get(status, InternalError)
    name = STATUS_NAMES.get(status, "unknown status %d" % status)
    return cls(message or name, status)
