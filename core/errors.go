package core

import "errors"

// ErrInvalidArgument is wrapped by every error that rejects a caller's
// input (a zero block size, options that do not fit the tokens, ...).
// Bindings map it to their "invalid argument" status.
var ErrInvalidArgument = errors.New("invalid argument")
