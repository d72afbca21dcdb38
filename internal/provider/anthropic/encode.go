package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// EncodeRequest renders the Messages API body for req. It is written by hand rather than
// through the SDK's param types or encoding/json, because the prompt cache keys on these bytes:
// field order is fixed, metadata keys are sorted, and raw JSON (tool schemas, tool_use inputs)
// is copied byte for byte — encoding/json would re-compact it. Equal requests give equal bytes.
// model is used when req.Model is empty.
func EncodeRequest(req *provider.Request, model string) ([]byte, error) {
	if req.Model != "" {
		model = req.Model
	}
	if model == "" {
		return nil, fmt.Errorf("encode request: no model given")
	}
	w := &writer{buf: make([]byte, 0, 4096)}
	w.raw(`{"model":`)
	w.str(model)
	w.raw(`,"max_tokens":`)
	w.raw(strconv.FormatInt(req.MaxTokens, 10))
	if len(req.System) > 0 {
		w.raw(`,"system":[`)
		for i, s := range req.System {
			w.comma(i)
			w.raw(`{"type":"text","text":`)
			w.str(s.Text)
			w.cacheControl(s.CacheControl)
			w.raw(`}`)
		}
		w.raw(`]`)
	}
	if len(req.Tools) > 0 {
		if err := w.tools(req.Tools); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
	}
	w.raw(`,"messages":[`)
	for i, m := range req.Messages {
		w.comma(i)
		w.raw(`{"role":`)
		w.str(string(m.Role))
		w.raw(`,"content":`)
		if err := w.blocks(m.Content); err != nil {
			return nil, fmt.Errorf("encode request: message %d: %w", i, err)
		}
		w.raw(`}`)
	}
	w.raw(`]`)
	if req.Thinking != nil {
		w.raw(`,"thinking":{"type":"enabled","budget_tokens":`)
		w.raw(strconv.FormatInt(req.Thinking.BudgetTokens, 10))
		w.raw(`}`)
	}
	if len(req.Metadata) > 0 {
		w.raw(`,"metadata":{`)
		keys := make([]string, 0, len(req.Metadata))
		for k := range req.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			w.comma(i)
			w.str(k)
			w.raw(`:`)
			w.str(req.Metadata[k])
		}
		w.raw(`}`)
	}
	if c := req.ClearToolResults; c != nil {
		w.contextManagement(c)
	}
	w.raw(`,"stream":true}`)
	return w.buf, nil
}

// ContextManagementBeta is the anthropic-beta value a request with context_management needs.
const ContextManagementBeta = "context-management-2025-06-27"

// ClearToolUsesEdit is the context-editing strategy that clears old tool results.
const ClearToolUsesEdit = "clear_tool_uses_20250919"

// contextManagement writes the clear_tool_uses edit of c. A zero Trigger leaves the API's
// default (100,000 input tokens); a zero ClearAtLeast none.
func (w *writer) contextManagement(c *provider.ToolResultClearing) {
	w.raw(`,"context_management":{"edits":[{"type":"` + ClearToolUsesEdit + `"`)
	if c.Trigger > 0 {
		w.raw(`,"trigger":{"type":"input_tokens","value":` + strconv.FormatInt(c.Trigger, 10) + `}`)
	}
	w.raw(`,"keep":{"type":"tool_uses","value":` + strconv.Itoa(c.Keep) + `}`)
	if c.ClearAtLeast > 0 {
		w.raw(`,"clear_at_least":{"type":"input_tokens","value":` + strconv.FormatInt(c.ClearAtLeast, 10) + `}`)
	}
	w.raw(`}]}`)
}

// ToolSearchTool is the server-side tool search entry sent after the tools whenever one of
// them is deferred: the API rejects deferred tools without a search tool to find them. The
// regex variant lets the model search names, descriptions and argument names precisely.
const ToolSearchTool = `{"type":"tool_search_tool_regex_20251119","name":"` + ToolSearchToolName + `"`

// ToolSearchToolName is the name the model calls the server-side tool search by.
const ToolSearchToolName = "tool_search_tool_regex"

// tools writes the tool list. Deferred tools (ToolSpec.DeferLoading) stay in their place, so
// the list is the same bytes whatever the model has found, and the search tool follows them.
// The API leaves deferred definitions out of the cached prefix and loads each one where a
// tool_reference names it in the history, so a breakpoint on a deferred tool would mark
// nothing: it moves to the search tool, which ends the cached tool list instead.
func (w *writer) tools(tools []provider.ToolSpec) error {
	w.raw(`,"tools":[`)
	var moved *message.CacheControl
	deferred := false
	for i, t := range tools {
		w.comma(i)
		if len(t.Raw) > 0 {
			if err := w.rawBlock(message.Block{Type: "server tool " + t.Name, Raw: t.Raw, CacheControl: t.CacheControl}); err != nil {
				return err
			}
			continue
		}
		w.raw(`{"name":`)
		w.str(t.Name)
		if t.Description != "" {
			w.raw(`,"description":`)
			w.str(t.Description)
		}
		w.raw(`,"input_schema":`)
		if err := w.rawJSON(t.InputSchema); err != nil {
			return fmt.Errorf("tool %q input_schema: %w", t.Name, err)
		}
		cc := t.CacheControl
		if t.DeferLoading {
			w.raw(`,"defer_loading":true`)
			deferred = true
			if cc != nil {
				moved, cc = cc, nil
			}
		}
		w.cacheControl(cc)
		w.raw(`}`)
	}
	if deferred {
		w.raw(`,`)
		w.raw(ToolSearchTool)
		w.cacheControl(moved)
		w.raw(`}`)
	}
	w.raw(`]`)
	return nil
}

type writer struct{ buf []byte }

func (w *writer) raw(s string) { w.buf = append(w.buf, s...) }

func (w *writer) comma(i int) {
	if i > 0 {
		w.buf = append(w.buf, ',')
	}
}

func (w *writer) str(s string) { w.buf = appendString(w.buf, s) }

// rawJSON copies b verbatim after checking it is one valid JSON value.
func (w *writer) rawJSON(b json.RawMessage) error {
	if len(b) == 0 {
		return fmt.Errorf("empty")
	}
	if !json.Valid(b) {
		return fmt.Errorf("not valid JSON")
	}
	w.buf = append(w.buf, b...)
	return nil
}

func (w *writer) cacheControl(cc *message.CacheControl) {
	if cc == nil {
		return
	}
	w.raw(`,"cache_control":{"type":`)
	typ := cc.Type
	if typ == "" {
		typ = "ephemeral"
	}
	w.str(typ)
	if cc.TTL != "" {
		w.raw(`,"ttl":`)
		w.str(cc.TTL)
	}
	w.raw(`}`)
}

func (w *writer) blocks(bs []message.Block) error {
	w.raw(`[`)
	for i, b := range bs {
		w.comma(i)
		if err := w.block(b); err != nil {
			return fmt.Errorf("block %d: %w", i, err)
		}
	}
	w.raw(`]`)
	return nil
}

func (w *writer) block(b message.Block) error {
	if len(b.Raw) > 0 {
		return w.rawBlock(b)
	}
	w.raw(`{"type":`)
	w.str(b.Type)
	switch b.Type {
	case message.TypeText:
		w.raw(`,"text":`)
		w.str(b.Text)
		if len(b.Citations) > 0 {
			w.raw(`,"citations":`)
			if err := w.rawJSON(b.Citations); err != nil {
				return fmt.Errorf("text citations: %w", err)
			}
		}
	case message.TypeThinking:
		w.raw(`,"thinking":`)
		w.str(b.Thinking)
		w.raw(`,"signature":`)
		w.str(b.Signature)
	case message.TypeRedactedThinking:
		w.raw(`,"data":`)
		w.str(b.Data)
	case message.TypeToolUse:
		w.raw(`,"id":`)
		w.str(b.ID)
		w.raw(`,"name":`)
		w.str(b.Name)
		w.raw(`,"input":`)
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		if err := w.rawJSON(input); err != nil {
			return fmt.Errorf("tool_use %s input: %w", b.ID, err)
		}
	case message.TypeToolResult:
		w.raw(`,"tool_use_id":`)
		w.str(b.ToolUseID)
		switch {
		case plainText(b.Content):
			// The string form the API also takes, as Claude Code sends it: the block wrapper
			// costs every result about six tokens in every later request.
			w.raw(`,"content":`)
			w.str(b.Content[0].Text)
		case len(b.Content) > 0:
			w.raw(`,"content":`)
			if err := w.blocks(b.Content); err != nil {
				return fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
			}
		}
		if b.IsError {
			w.raw(`,"is_error":true`)
		}
	case message.TypeImage:
		if b.Source == nil {
			return fmt.Errorf("image without source")
		}
		w.raw(`,"source":{"type":`)
		typ := b.Source.Type
		if typ == "" {
			typ = "base64"
		}
		w.str(typ)
		w.raw(`,"media_type":`)
		w.str(b.Source.MediaType)
		w.raw(`,"data":`)
		w.str(b.Source.Data)
		w.raw(`}`)
	default:
		return fmt.Errorf("unknown block type %q", b.Type)
	}
	w.cacheControl(b.CacheControl)
	w.raw(`}`)
	return nil
}

// plainText reports whether a tool result's content is one text block and nothing else — no
// citations, no cache breakpoint of its own — so it can travel as a plain string.
func plainText(content []message.Block) bool {
	if len(content) != 1 {
		return false
	}
	b := content[0]
	return b.Type == message.TypeText && len(b.Raw) == 0 && len(b.Citations) == 0 && b.CacheControl == nil
}

// rawBlock replays a block keel does not interpret (a server tool's use or result) byte for
// byte; a cache breakpoint is added as its last field.
func (w *writer) rawBlock(b message.Block) error {
	raw := bytes.TrimSpace(b.Raw)
	if !json.Valid(raw) || raw[0] != '{' || len(raw) < 3 {
		return fmt.Errorf("%s block: raw is not a JSON object", b.Type)
	}
	if b.CacheControl == nil {
		w.buf = append(w.buf, raw...)
		return nil
	}
	w.buf = append(w.buf, raw[:len(raw)-1]...)
	w.cacheControl(b.CacheControl)
	w.raw(`}`)
	return nil
}

const hex = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json does with HTML escaping off:
// quotes, backslashes and control characters escaped, invalid UTF-8 replaced by U+FFFD, and
// U+2028/U+2029 escaped so the body is also valid JavaScript.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
