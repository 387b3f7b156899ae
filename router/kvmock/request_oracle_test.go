package kvmock

// oracleDecodeCompletion is decodeCompletion as it was before the
// one-pass reader (encoding/json over the body, then decodePrompt): the
// reference FuzzDecodeCompletionDifferential and the benchmark hold the
// new one to. Frozen; do not edit.
func oracleDecodeCompletion(body []byte, tok Tokenizer, defaultMaxTokens int) (genParams, error) {
	var r completionRequest
	if err := decodeJSON(body, &r); err != nil {
		return genParams{}, err
	}
	if err := checkN(r.N); err != nil {
		return genParams{}, err
	}
	addSpecial := r.AddSpecialTokens == nil || *r.AddSpecialTokens
	prompt, err := decodePrompt(r.Prompt, tok, addSpecial)
	if err != nil {
		return genParams{}, err
	}
	maxTokens, err := pickMaxTokens(defaultMaxTokens, r.MaxTokens)
	if err != nil {
		return genParams{}, err
	}
	return genParams{
		model:        r.Model,
		req:          GenRequest{Prompt: prompt, MaxTokens: maxTokens, Tag: SeqTag{Salt: r.CacheSalt}},
		stream:       r.Stream,
		includeUsage: r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage,
	}, nil
}
