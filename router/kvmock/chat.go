package kvmock

import "fmt"

// ChatMessage is one OpenAI chat message. Content is a string, or a list of
// parts of which only {"type":"text","text":...} is understood.
type ChatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// The chat template, applied on token ids rather than text so that role
// markers can never be forged by message content:
//
//	BOS, then per message: <role marker> content-tokens <end of turn>,
//	then <assistant marker> when add_generation_prompt is true.
//
// Roles: system, developer (as system), user, assistant, tool (as user).
func (t Tokenizer) applyChatTemplate(msgs []ChatMessage, addGenerationPrompt bool) ([]uint32, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("messages: at least one message is required")
	}
	out := []uint32{bosTokenID}
	for i, m := range msgs {
		marker, err := roleMarker(m.Role)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		text, err := messageText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		out = append(out, marker)
		out = t.Encode(out, text, false)
		out = append(out, endTurnTokenID)
	}
	if addGenerationPrompt {
		out = append(out, assistantTokenID)
	}
	return out, nil
}

func roleMarker(role string) (uint32, error) {
	switch role {
	case "system", "developer":
		return systemTokenID, nil
	case "user", "tool":
		return userTokenID, nil
	case "assistant":
		return assistantTokenID, nil
	}
	return 0, fmt.Errorf("role %q: want system, developer, user, assistant or tool", role)
}

func messageText(content any) (string, error) {
	switch c := content.(type) {
	case nil:
		return "", nil
	case string:
		return c, nil
	case []any:
		var text string
		for i, p := range c {
			part, ok := p.(map[string]any)
			if !ok || part["type"] != "text" {
				return "", fmt.Errorf("part %d: only {\"type\":\"text\"} parts are supported", i)
			}
			s, ok := part["text"].(string)
			if !ok {
				return "", fmt.Errorf("part %d: text is not a string", i)
			}
			text += s
		}
		return text, nil
	}
	return "", fmt.Errorf("want a string or a list of text parts, got %T", content)
}
