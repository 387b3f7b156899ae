package enginehash

// SGLang with EAGLE speculative decoding keys its radix tree by bigrams: the
// prompt [t0, t1, t2, ...] becomes [(t0,t1), (t1,t2), ...], one fewer than
// the tokens, and a page of p bigrams hashes both elements of each, in order,
// as little-endian u32 after the prior digest. That is the plain page hash
// over the flattened pairs, which is how this package computes it.

// SGLangBigrams flattens tokens into SGLang's EAGLE bigram key: t0, t1, t1,
// t2, ..., t(n-2), t(n-1). Fewer than two tokens give no bigram.
func SGLangBigrams(dst []uint32, tokens []uint32) []uint32 {
	for i := 0; i+1 < len(tokens); i++ {
		dst = append(dst, tokens[i], tokens[i+1])
	}
	return dst
}

// SGLangEagleChain hashes every full page of pageSize bigrams of tokens from
// root (SGLangRoot of the request's cache salt): the ids an SGLang engine
// running EAGLE publishes for a prompt.
func SGLangEagleChain(dst []Block, root Digest, tokens []uint32, pageSize int) ([]Block, error) {
	return Chain(dst, SGLangSHA256, root, SGLangBigrams(nil, tokens), 2*pageSize, nil)
}
