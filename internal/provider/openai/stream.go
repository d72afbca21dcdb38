package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// chunk is one streamed chat.completion.chunk, decoded into keel's own type.
type chunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

func isDone(data []byte) bool { return bytes.HasPrefix(bytes.TrimSpace(data), []byte("[DONE]")) }

// assembler builds the assistant message. Blocks are numbered in order of first appearance:
// the text block when the first content arrives, each tool call when its index is first seen.
type assembler struct {
	logger    *slog.Logger
	blocks    []message.Block
	args      []*strings.Builder // per block; used by tool calls
	textBlock int                // block index of the text, or -1
	calls     map[int]int        // tool call index → block index
	finish    string
	usage     message.Usage
	model     string
	requestID string
}

func newAssembler(logger *slog.Logger) *assembler {
	return &assembler{logger: logger, textBlock: -1, calls: map[int]int{}}
}

func (a *assembler) newBlock(b message.Block) int {
	a.blocks = append(a.blocks, b)
	a.args = append(a.args, &strings.Builder{})
	return len(a.blocks) - 1
}

func (a *assembler) add(data []byte) ([]provider.Event, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("openai stream: %w: decode chunk: %w", provider.ErrMalformedStream, err)
	}
	if c.Error != nil {
		// An error mid-stream is the server's failure; let the retry policy decide.
		return nil, &provider.StatusError{Provider: "openai", StatusCode: http.StatusInternalServerError,
			Type: c.Error.Type, Message: "error mid-stream: " + c.Error.Message}
	}
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		cached := int64(0)
		if c.Usage.PromptTokensDetails != nil {
			cached = c.Usage.PromptTokensDetails.CachedTokens
		}
		a.usage = message.Usage{
			InputTokens:          c.Usage.PromptTokens - cached,
			OutputTokens:         c.Usage.CompletionTokens,
			CacheReadInputTokens: cached,
		}
	}
	var out []provider.Event
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // keel asks for one choice
		}
		if ch.Delta.Content != "" {
			if a.textBlock < 0 {
				a.textBlock = a.newBlock(message.Block{Type: message.TypeText})
			}
			a.blocks[a.textBlock].Text += ch.Delta.Content
			out = append(out, provider.TextDelta{Index: a.textBlock, Text: ch.Delta.Content})
		}
		for _, tc := range ch.Delta.ToolCalls {
			bi, ok := a.calls[tc.Index]
			if !ok {
				bi = a.newBlock(message.Block{Type: message.TypeToolUse, ID: tc.ID, Name: tc.Function.Name})
				a.calls[tc.Index] = bi
				out = append(out, provider.ToolUseStart{Index: bi, ID: tc.ID, Name: tc.Function.Name})
			} else {
				// Some servers repeat or complete id and name in later fragments.
				if a.blocks[bi].ID == "" {
					a.blocks[bi].ID = tc.ID
				}
				if a.blocks[bi].Name == "" {
					a.blocks[bi].Name = tc.Function.Name
				}
			}
			if tc.Function.Arguments != "" {
				a.args[bi].WriteString(tc.Function.Arguments)
				out = append(out, provider.InputDelta{Index: bi, PartialJSON: tc.Function.Arguments})
			}
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return out, nil
}

func (a *assembler) done() provider.Done {
	content := make([]message.Block, len(a.blocks))
	hasTools := false
	for i, b := range a.blocks {
		if b.Type == message.TypeToolUse {
			hasTools = true
			b.Input = a.toolInput(b, a.args[i].String())
		}
		content[i] = b
	}
	stop := map[string]message.StopReason{
		"stop":           message.StopEndTurn,
		"tool_calls":     message.StopToolUse,
		"function_call":  message.StopToolUse,
		"length":         message.StopMaxTokens,
		"content_filter": message.StopRefusal,
	}[a.finish]
	if stop == "" {
		stop = message.StopEndTurn
	}
	if hasTools && stop == message.StopEndTurn {
		// Some local servers finish a tool-calling turn with "stop".
		stop = message.StopToolUse
	}
	return provider.Done{
		Message:    message.Message{Role: message.RoleAssistant, Content: content},
		StopReason: stop,
		Usage:      a.usage,
		Model:      a.model,
		RequestID:  a.requestID,
	}
}

// toolInput compacts the accumulated arguments; empty or invalid JSON becomes {} so the history
// stays sendable, and the tool's schema check reports what is missing.
func (a *assembler) toolInput(b message.Block, args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(args)); err != nil {
		a.logger.Warn("openai stream: tool call arguments are not valid JSON; using {}",
			"tool", b.Name, "id", b.ID, "err", err)
		return json.RawMessage(`{}`)
	}
	return out.Bytes()
}
