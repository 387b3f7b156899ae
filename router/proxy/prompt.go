package proxy

import "context"

// Prompt is what routing needs of an OpenAI completion body: the model,
// the cache salt, and the token ids or the /tokenize request that yields
// them. Exported for router/epp, the gateway's endpoint picker, which
// reads bodies exactly as the proxy does.
type Prompt = clientRequest

// ParsePrompt reads a /v1/completions body (chat false) or a
// /v1/chat/completions body (chat true). Its errors are the proxy's
// OpenAI error objects (*httpapi.Error, with their status).
func ParsePrompt(body []byte, chat bool) (Prompt, error) { return parseCompletion(body, chat) }

// PromptTokens returns the prompt's token ids: as given, or tokenized by
// one healthy engine of the model (its /tokenize applies the chat
// template), as the proxy does before routing.
func (p *Proxy) PromptTokens(ctx context.Context, pr Prompt) ([]uint32, error) {
	if pr.TokenIDs != nil {
		return pr.TokenIDs, nil
	}
	return p.tokenize(ctx, pr)
}
