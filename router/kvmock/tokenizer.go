package kvmock

import (
	"hash/fnv"
	"unicode"
)

// The tokenizer is deliberately tiny and deterministic: what a router needs
// from an engine's tokenizer is that the same text always gives the same
// ids and that texts sharing a prefix share a token prefix, not language
// quality.
//
// Text is cut into pieces: a run of letters or digits is one piece, every
// other non-space character is a piece on its own, and whitespace only
// separates. A piece's id is firstWordID + FNV-1a-64(piece) mod
// (vocab - firstWordID). Ids below firstWordID are reserved for the special
// tokens below. The mapping is not invertible (whitespace is dropped and
// ids can collide); kvmock never needs to detokenize user text.

// Special token ids.
const (
	unkTokenID       = 0
	bosTokenID       = 1 // added in front when add_special_tokens is true
	eosTokenID       = 2
	systemTokenID    = 3 // chat template role markers
	userTokenID      = 4
	assistantTokenID = 5
	endTurnTokenID   = 6
	firstWordID      = 256
)

// Tokenizer turns text into token ids for a vocabulary of a given size.
type Tokenizer struct {
	vocab uint64
}

// NewTokenizer returns the tokenizer for a vocabulary of vocabSize ids
// (vocabSize must exceed firstWordID; Config.Validate checks it).
func NewTokenizer(vocabSize int) Tokenizer {
	return Tokenizer{vocab: uint64(vocabSize)}
}

// Encode appends text's token ids to dst, with BOS in front when
// addSpecial is set (vLLM's add_special_tokens).
func (t Tokenizer) Encode(dst []uint32, text string, addSpecial bool) []uint32 {
	if addSpecial {
		dst = append(dst, bosTokenID)
	}
	start := -1 // start of the current letter/digit run
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			dst = append(dst, t.pieceID(text[start:i]))
			start = -1
		}
		if !unicode.IsSpace(r) {
			dst = append(dst, t.pieceID(string(r)))
		}
	}
	if start >= 0 {
		dst = append(dst, t.pieceID(text[start:]))
	}
	return dst
}

func (t Tokenizer) pieceID(piece string) uint32 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(piece)) // hash.Hash writes never fail
	return uint32(firstWordID + h.Sum64()%(t.vocab-firstWordID))
}

// outputWords are what the simulated model "generates": each output token
// is one of them, so a completion's text and token ids agree with Encode.
var outputWords = [...]string{
	"the", "cache", "block", "router", "token", "prefix", "engine", "worker",
	"hash", "event", "index", "tree", "reuse", "load", "batch", "step",
	"prompt", "model", "queue", "slot", "hit", "miss", "evict", "store",
	"remove", "chain", "root", "seed", "stream", "reply", "topic", "seq",
}

// outputToken is the i-th generated token for a prompt whose digest is
// seed: deterministic, as greedy decoding is, so a repeated request
// generates the same blocks again.
func (t Tokenizer) outputToken(seed uint64, i int) (id uint32, text string) {
	x := seed + uint64(i+1)*0x9e3779b97f4a7c15 // splitmix64 step
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	w := outputWords[x%uint64(len(outputWords))]
	return t.pieceID(w), " " + w
}
