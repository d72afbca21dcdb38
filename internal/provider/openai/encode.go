package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// The chat-completions wire types. Field order is the output order, so a request always encodes
// to the same bytes; optional fields are pointers or omitempty.
type chatRequest struct {
	Model         string         `json:"model"`
	MaxTokens     int64          `json:"max_tokens,omitempty"`
	Messages      []chatMessage  `json:"messages"`
	Tools         []chatTool     `json:"tools,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is a string, a []contentPart, or nil (an assistant turn of only tool calls).
	Content    any        `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type contentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function functionSpec `json:"function"`
}

type functionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// EncodeRequest converts keel's Anthropic-shaped request to a chat-completions body: the system
// blocks become one system message, tool_use blocks assistant tool_calls, tool_result blocks
// tool messages, images data URLs; thinking blocks and cache_control have no equivalent and are
// dropped. Equal requests give equal bytes (fixed field order, no HTML escaping, raw schemas
// compacted). model is used when req.Model is empty.
func EncodeRequest(req *provider.Request, model string) ([]byte, error) {
	if req.Model != "" {
		model = req.Model
	}
	if model == "" {
		return nil, fmt.Errorf("encode request: no model given")
	}
	out := chatRequest{
		Model:         model,
		MaxTokens:     req.MaxTokens,
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
	}
	if len(req.System) > 0 {
		parts := make([]string, len(req.System))
		for i, s := range req.System {
			parts[i] = s.Text
		}
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: strings.Join(parts, "\n\n")})
	}
	for i, m := range req.Messages {
		msgs, err := convertMessage(m)
		if err != nil {
			return nil, fmt.Errorf("encode request: message %d: %w", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	for _, t := range req.Tools {
		if len(t.Raw) > 0 {
			return nil, fmt.Errorf("encode request: tool %q is a server tool, which chat completions do not have", t.Name)
		}
		if len(t.InputSchema) == 0 || !json.Valid(t.InputSchema) {
			return nil, fmt.Errorf("encode request: tool %q input_schema is not valid JSON", t.Name)
		}
		out.Tools = append(out.Tools, chatTool{Type: "function",
			Function: functionSpec{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func convertMessage(m message.Message) ([]chatMessage, error) {
	switch m.Role {
	case message.RoleAssistant:
		var text []string
		var calls []toolCall
		for _, b := range m.Content {
			switch b.Type {
			case message.TypeText:
				text = append(text, b.Text)
			case message.TypeToolUse:
				args := string(b.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, toolCall{ID: b.ID, Type: "function", Function: functionCall{Name: b.Name, Arguments: args}})
			}
		}
		msg := chatMessage{Role: "assistant", ToolCalls: calls}
		if len(text) > 0 {
			msg.Content = strings.Join(text, "")
		}
		return []chatMessage{msg}, nil
	case message.RoleUser:
		var out []chatMessage
		var parts []contentPart
		for _, b := range m.Content {
			switch b.Type {
			case message.TypeToolResult:
				// Tool messages must follow the assistant's tool_calls directly, so they come
				// before any other content of the same user turn.
				text, images := resultContent(b)
				out = append(out, chatMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
				parts = append(parts, images...)
			case message.TypeText:
				parts = append(parts, contentPart{Type: "text", Text: b.Text})
			case message.TypeImage:
				p, err := imagePart(b)
				if err != nil {
					return nil, err
				}
				parts = append(parts, p)
			}
		}
		switch {
		case len(parts) == 1 && parts[0].Type == "text":
			out = append(out, chatMessage{Role: "user", Content: parts[0].Text})
		case len(parts) > 0:
			out = append(out, chatMessage{Role: "user", Content: parts})
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
}

// resultContent flattens a tool_result to the text a tool message can carry; its images move
// to the user message that follows.
func resultContent(b message.Block) (string, []contentPart) {
	var text []string
	var images []contentPart
	for _, c := range b.Content {
		switch c.Type {
		case message.TypeText:
			text = append(text, c.Text)
		case message.TypeImage:
			if p, err := imagePart(c); err == nil {
				images = append(images, p)
			}
		}
	}
	s := strings.Join(text, "\n")
	if b.IsError {
		s = "Error: " + s
	}
	return s, images
}

func imagePart(b message.Block) (contentPart, error) {
	if b.Source == nil {
		return contentPart{}, fmt.Errorf("image without source")
	}
	url := "data:" + b.Source.MediaType + ";base64," + b.Source.Data
	return contentPart{Type: "image_url", ImageURL: &imageURL{URL: url}}, nil
}
