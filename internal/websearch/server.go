package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// Server searches through the provider's server-side web search: one request to the model
// with the web_search server tool, whose results and cited answer come back as content
// blocks.
type Server struct {
	Provider provider.Provider
	// Model names the model per request.
	Model func() string
	// Usage, if set, is told what each request used.
	Usage func(model string, u message.Usage)
	// MaxUses bounds the searches of one request; 0 means 8.
	MaxUses int
}

var _ Backend = (*Server)(nil)

// ToolType is the version of the server tool keel sends.
const ToolType = "web_search_20250305"

const (
	serverSystem = "You run web searches for a coding assistant. Search for what it asks, then say briefly what the results show, citing them."
	// maxPauses bounds the continuations of a long server-side turn (stop reason pause_turn).
	maxPauses    = 3
	serverTokens = 4096
)

// Name implements Backend.
func (s *Server) Name() string { return "anthropic" }

// Tool returns the web_search tool definition for q.
func (s *Server) Tool(q Query) json.RawMessage {
	maxUses := s.MaxUses
	if maxUses <= 0 {
		maxUses = 8
	}
	def := struct {
		Type           string   `json:"type"`
		Name           string   `json:"name"`
		MaxUses        int      `json:"max_uses"`
		AllowedDomains []string `json:"allowed_domains,omitempty"`
		BlockedDomains []string `json:"blocked_domains,omitempty"`
	}{ToolType, "web_search", maxUses, q.AllowedDomains, q.BlockedDomains}
	b, _ := json.Marshal(def)
	return b
}

// Search implements Backend.
func (s *Server) Search(ctx context.Context, q Query) (*Result, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	model := s.Model()
	req := &provider.Request{
		Model:     model,
		MaxTokens: serverTokens,
		System:    []provider.SystemBlock{{Text: serverSystem}},
		Tools:     []provider.ToolSpec{{Name: "web_search", Raw: s.Tool(q)}},
		Messages:  []message.Message{message.User(message.Text("Perform a web search for the query: " + q.Query))},
		Source:    "websearch",
	}
	res := &Result{}
	for pause := 0; ; pause++ {
		done, err := provider.Complete(ctx, s.Provider, req)
		if err != nil {
			return nil, fmt.Errorf("server-side web search: %w", err)
		}
		if s.Usage != nil {
			s.Usage(model, done.Usage)
		}
		if err := res.absorb(done.Message); err != nil {
			return nil, err
		}
		if done.StopReason != message.StopPauseTurn || pause >= maxPauses {
			break
		}
		// A long server-side turn pauses; sending it back lets the model go on.
		req.Messages = append(req.Messages, done.Message)
	}
	if len(res.Links) == 0 && len(res.Errors) > 0 {
		return nil, fmt.Errorf("the web search failed: %s", strings.Join(res.Errors, ", "))
	}
	return res, nil
}

// absorb takes the results and texts of one response.
func (r *Result) absorb(m message.Message) error {
	for _, b := range m.Content {
		switch {
		case b.Type == "web_search_tool_result":
			r.Raw = append(r.Raw, b.Raw)
			var res struct {
				Content json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(b.Raw, &res); err != nil {
				return fmt.Errorf("web search result: %w", err)
			}
			var links []Link
			if json.Unmarshal(res.Content, &links) == nil {
				r.Links = append(r.Links, links...)
				continue
			}
			var fail struct {
				ErrorCode string `json:"error_code"`
			}
			if err := json.Unmarshal(res.Content, &fail); err != nil || fail.ErrorCode == "" {
				return fmt.Errorf("web search result: content is neither results nor an error")
			}
			r.Errors = append(r.Errors, fail.ErrorCode)
		case len(b.Raw) > 0:
			r.Raw = append(r.Raw, b.Raw)
		case b.Type == message.TypeText:
			r.Raw = append(r.Raw, textJSON(b))
			t := Text{Text: b.Text}
			if len(b.Citations) > 0 {
				if err := json.Unmarshal(b.Citations, &t.Citations); err != nil {
					return fmt.Errorf("text citations: %w", err)
				}
			}
			if strings.TrimSpace(t.Text) != "" || len(t.Citations) > 0 {
				r.Texts = append(r.Texts, t)
			}
		}
	}
	return nil
}

// textJSON is a text block as the API sent it: the text, and the citations byte for byte.
func textJSON(b message.Block) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(b.Text)
	out := append([]byte(`{"type":"text","text":`), bytes.TrimSpace(buf.Bytes())...)
	if len(b.Citations) > 0 {
		out = append(append(out, `,"citations":`...), b.Citations...)
	}
	return append(out, '}')
}
