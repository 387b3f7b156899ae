package proxy

import (
	"bytes"
	"encoding/json"
)

// Usage is the token accounting of one answer (OpenAI's usage object).
type Usage struct {
	PromptTokens int `json:"prompt_tokens"`
	// CachedTokens: usage.prompt_tokens_details.cached_tokens, the prompt
	// tokens the engine found in its prefix cache.
	CachedTokens int `json:"cached_tokens"`
}

// maxUsageBody bounds what is kept of a non-streaming answer to read its
// usage: an answer larger than this is still forwarded, just not counted.
const maxUsageBody = 4 << 20

// usageReader watches the bytes of an answer go by and finds its usage
// object: in a stream, the data: line whose chunk has a non-null usage
// (the client asked for stream_options.include_usage); otherwise the
// whole JSON body.
type usageReader struct {
	stream bool
	buf    []byte // a stream's partial line, or the body so far
	over   bool
	usage  *Usage
}

func newUsageReader(stream bool) *usageReader { return &usageReader{stream: stream} }

// usageJSON is the part of a response or chunk that carries the usage.
type usageJSON struct {
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

func (u *usageReader) Write(b []byte) {
	if !u.stream {
		if u.over || len(u.buf)+len(b) > maxUsageBody {
			u.over, u.buf = true, nil
			return
		}
		u.buf = append(u.buf, b...)
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(u.buf)+len(b) <= maxUsageBody {
				u.buf = append(u.buf, b...)
			}
			return
		}
		u.buf = append(u.buf, b[:i]...)
		u.line(u.buf)
		u.buf = u.buf[:0]
		b = b[i+1:]
	}
}

// line reads one SSE line; only data lines that mention usage are decoded.
func (u *usageReader) line(l []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(l, "\r"), []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"usage"`)) {
		return
	}
	u.decode(bytes.TrimSpace(data))
}

func (u *usageReader) decode(b []byte) {
	var v usageJSON
	if json.Unmarshal(b, &v) != nil || v.Usage == nil {
		return
	}
	got := Usage{PromptTokens: v.Usage.PromptTokens}
	if d := v.Usage.PromptTokensDetails; d != nil {
		got.CachedTokens = d.CachedTokens
	}
	u.usage = &got
}

// Usage returns the usage found, if any.
func (u *usageReader) Usage() (Usage, bool) {
	if !u.stream && !u.over && u.usage == nil {
		u.decode(u.buf)
	}
	if u.usage == nil {
		return Usage{}, false
	}
	return *u.usage, true
}
