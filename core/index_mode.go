package core

import (
	"log/slog"
	"os"
	"strings"
)

// Mode says what the index does with a hash-stability violation.
type Mode uint8

const (
	// ModeFromEnvironment (the zero value) resolves to ModeEnforce when
	// KVHASH_ENFORCE_ENGINE_HASH_STABILITY or
	// DYN_KV_ENFORCE_ENGINE_HASH_STABILITY is "1" or "true" (any case),
	// else to ModeWarn. The environment is read when the mode is set.
	ModeFromEnvironment Mode = 0
	// ModeWarn counts every violation and logs it as a warning; Apply
	// returns an error only for what rejects (part of) an event.
	ModeWarn Mode = 1
	// ModeEnforce returns every violation as an error, logs it as an error
	// and marks the worker unstable until it is cleared or removed.
	ModeEnforce Mode = 2
)

// The environment variables that turn enforcement on. The second is the
// name of the upstream (Dynamo) proposal.
const (
	EnvEnforce         = "KVHASH_ENFORCE_ENGINE_HASH_STABILITY"
	EnvEnforceUpstream = "DYN_KV_ENFORCE_ENGINE_HASH_STABILITY"
)

func (m Mode) String() string {
	switch m {
	case ModeFromEnvironment:
		return "environment"
	case ModeWarn:
		return "warn"
	case ModeEnforce:
		return "enforce"
	}
	return "invalid"
}

// Valid reports whether m is one of the three modes.
func (m Mode) Valid() bool { return m <= ModeEnforce }

// resolve turns ModeFromEnvironment (or an invalid value) into the mode
// the environment asks for.
func (m Mode) resolve() Mode {
	if m == ModeWarn || m == ModeEnforce {
		return m
	}
	for _, name := range []string{EnvEnforce, EnvEnforceUpstream} {
		v := strings.TrimSpace(os.Getenv(name))
		if v == "1" || strings.EqualFold(v, "true") {
			return ModeEnforce
		}
	}
	return ModeWarn
}

// IndexOptions configure NewIndex.
type IndexOptions struct {
	Mode   Mode
	Logger *slog.Logger // nil = discard
}
