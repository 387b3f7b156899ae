package kvmock

import "errors"

// NewBlockIDs returns the block namer cfg asks for.
//
// Placeholder until router/enginehash lands: kvmock computes vLLM's
// sha256_cbor chain through that package, never on its own.
func NewBlockIDs(cfg Config) (BlockIDs, error) {
	_ = cfg
	return nil, errors.New("kvmock: vLLM block ids need router/enginehash, which is not there yet")
}
