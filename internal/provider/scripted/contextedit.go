package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Anthropic's server-side context editing (beta), as far as the scripted model implements it:
// the clear_tool_uses_20250919 and clear_thinking_20251015 edits (Claude Code sends the
// second with every request). The API applies the edits to the history the client sends,
// on every request — it keeps no state — before the prompt reaches the model, and so before
// the prompt cache is consulted: a cleared result changes the cached prefix from its block on.

// ContextManagementBeta is the anthropic-beta value that turns context_management on.
const ContextManagementBeta = "context-management-2025-06-27"

// ClearToolUsesEdit is the type of the edit that clears old tool results.
const ClearToolUsesEdit = "clear_tool_uses_20250919"

// ClearThinkingEdit is the type of the edit that drops the thinking of older assistant turns.
const ClearThinkingEdit = "clear_thinking_20251015"

// ClearedToolResult replaces the content of a tool result the edit cleared. The API's own
// placeholder text is not documented; this one stands in for it.
const ClearedToolResult = "[Tool result cleared to save context]"

// The edit's documented defaults.
const (
	defaultClearTrigger = 100_000 // input tokens
	defaultClearKeep    = 3       // tool uses
)

// AppliedEdit is one entry of a response's context_management.applied_edits: a tool-use
// edit counts tool uses, a thinking edit thinking turns.
type AppliedEdit struct {
	Type                 string `json:"type"`
	ClearedToolUses      int    `json:"cleared_tool_uses,omitempty"`
	ClearedThinkingTurns int    `json:"cleared_thinking_turns,omitempty"`
	ClearedInputTokens   int    `json:"cleared_input_tokens"`
}

// contextManagement is a request's context_management object, checked.
type contextManagement struct {
	edits []contextEdit
}

// contextEdit is one edit of a request, checked: apply returns the new content (content
// itself is not modified), how many items it cleared and the tokens that freed.
type contextEdit interface {
	apply(content [][]json.RawMessage, inputTokens int) ([][]json.RawMessage, int, int)
	applied(cleared, freed int) AppliedEdit
	minFreed() int
}

func (e clearToolUses) applied(cleared, freed int) AppliedEdit {
	return AppliedEdit{Type: ClearToolUsesEdit, ClearedToolUses: cleared, ClearedInputTokens: freed}
}

func (e clearToolUses) minFreed() int { return e.clearAtLeast }

// clearThinking keeps the thinking blocks of the newest keep assistant turns that have any
// (all: every one) and drops the others'.
type clearThinking struct {
	keep int
	all  bool
}

func (e clearThinking) applied(cleared, freed int) AppliedEdit {
	return AppliedEdit{Type: ClearThinkingEdit, ClearedThinkingTurns: cleared, ClearedInputTokens: freed}
}

func (e clearThinking) minFreed() int { return 0 }

func (e clearThinking) apply(content [][]json.RawMessage, _ int) ([][]json.RawMessage, int, int) {
	if e.all {
		return content, 0, 0
	}
	var turns []int // assistant messages holding thinking, oldest first
	for i, blocks := range content {
		if slices.ContainsFunc(blocks, isThinking) {
			turns = append(turns, i)
		}
	}
	if len(turns) <= e.keep {
		return content, 0, 0
	}
	out := slices.Clone(content)
	freed := 0
	for _, i := range turns[:len(turns)-e.keep] {
		out[i] = slices.DeleteFunc(slices.Clone(out[i]), func(b json.RawMessage) bool {
			if isThinking(b) {
				freed += blockTokens(b)
				return true
			}
			return false
		})
	}
	return out, len(turns) - e.keep, freed
}

// isThinking says whether a content block is a thinking or redacted_thinking block.
func isThinking(b json.RawMessage) bool {
	var head struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(b, &head) == nil && (head.Type == "thinking" || head.Type == "redacted_thinking")
}

// parseClearThinking checks a clear_thinking edit: keep is {"type": "thinking_turns",
// "value": N ≥ 1} or "all", one thinking turn when absent.
func parseClearThinking(tag string, raw json.RawMessage) (clearThinking, error) {
	var w struct {
		Type string          `json:"type"`
		Keep json.RawMessage `json:"keep"`
	}
	if err := strictDecode(raw, &w); err != nil {
		return clearThinking{}, badRequest("%s: %v", tag, err)
	}
	e := clearThinking{keep: 1}
	if len(w.Keep) == 0 || bytes.Equal(w.Keep, []byte("null")) {
		return e, nil
	}
	var word string
	if json.Unmarshal(w.Keep, &word) == nil {
		if word != "all" {
			return e, badRequest("%s.keep: Input should be 'all' or a thinking_turns object", tag)
		}
		e.all = true
		return e, nil
	}
	var k typedValue
	if err := strictDecode(w.Keep, &k); err != nil {
		return e, badRequest("%s.keep: %v", tag, err)
	}
	if k.Type != "thinking_turns" {
		return e, badRequest("%s.keep.type: Input should be 'thinking_turns'", tag)
	}
	v, err := countValue(tag+".keep", &k, 1)
	if err != nil {
		return e, err
	}
	e.keep = v
	return e, nil
}

type clearToolUses struct {
	triggerType  string // input_tokens or tool_uses
	trigger      int
	keep         int
	clearAtLeast int
	exclude      []string
	// clearInputs: all tool inputs (clearAll) or those of the named tools.
	clearAll    bool
	clearInputs []string
}

// typedValue is the API's {"type": T, "value": N} shape of trigger, keep and clear_at_least.
type typedValue struct {
	Type  string `json:"type"`
	Value *int   `json:"value"`
}

// parseContextManagement checks context_management as the API does: the beta header must be
// sent, the fields known, the values of the right type and not negative. An edit type the API
// knows but the scripted model does not implement is refused as well, saying so.
func parseContextManagement(raw json.RawMessage, betas []string) (*contextManagement, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if !slices.Contains(betas, ContextManagementBeta) {
		return nil, badRequest("context_management: Extra inputs are not permitted (context editing needs the anthropic-beta header %s)", ContextManagementBeta)
	}
	var cm struct {
		Edits []json.RawMessage `json:"edits"`
	}
	if err := strictDecode(raw, &cm); err != nil {
		return nil, badRequest("context_management: %v", err)
	}
	out := &contextManagement{}
	seen := map[string]bool{}
	for i, e := range cm.Edits {
		tag := fmt.Sprintf("context_management.edits.%d", i)
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(e, &head); err != nil {
			return nil, badRequest("%s: %v", tag, err)
		}
		if seen[head.Type] {
			return nil, badRequest("%s: each edit type may be given only once", tag)
		}
		seen[head.Type] = true
		var edit contextEdit
		var err error
		switch head.Type {
		case ClearToolUsesEdit:
			edit, err = parseClearToolUses(tag, e)
		case ClearThinkingEdit:
			// The API applies the thinking edit first and wants it listed so.
			if i > 0 {
				return nil, badRequest("%s: %s must come first in edits", tag, ClearThinkingEdit)
			}
			edit, err = parseClearThinking(tag, e)
		case "compact_20260112":
			return nil, badRequest("%s.type: %s is not implemented by the scripted model", tag, head.Type)
		default:
			return nil, badRequest("%s.type: Input should be '%s', '%s' or 'compact_20260112'", tag, ClearToolUsesEdit, ClearThinkingEdit)
		}
		if err != nil {
			return nil, err
		}
		out.edits = append(out.edits, edit)
	}
	return out, nil
}

func parseClearToolUses(tag string, raw json.RawMessage) (clearToolUses, error) {
	var w struct {
		Type            string          `json:"type"`
		Trigger         *typedValue     `json:"trigger"`
		Keep            *typedValue     `json:"keep"`
		ClearAtLeast    *typedValue     `json:"clear_at_least"`
		ExcludeTools    []string        `json:"exclude_tools"`
		ClearToolInputs json.RawMessage `json:"clear_tool_inputs"`
	}
	if err := strictDecode(raw, &w); err != nil {
		return clearToolUses{}, badRequest("%s: %v", tag, err)
	}
	e := clearToolUses{triggerType: "input_tokens", trigger: defaultClearTrigger, keep: defaultClearKeep, exclude: w.ExcludeTools}
	if t := w.Trigger; t != nil {
		if t.Type != "input_tokens" && t.Type != "tool_uses" {
			return e, badRequest("%s.trigger.type: Input should be 'input_tokens' or 'tool_uses'", tag)
		}
		v, err := countValue(tag+".trigger", t, 1)
		if err != nil {
			return e, err
		}
		e.triggerType, e.trigger = t.Type, v
	}
	if k := w.Keep; k != nil {
		if k.Type != "tool_uses" {
			return e, badRequest("%s.keep.type: Input should be 'tool_uses'", tag)
		}
		v, err := countValue(tag+".keep", k, 0)
		if err != nil {
			return e, err
		}
		e.keep = v
	}
	if c := w.ClearAtLeast; c != nil {
		if c.Type != "input_tokens" {
			return e, badRequest("%s.clear_at_least.type: Input should be 'input_tokens'", tag)
		}
		v, err := countValue(tag+".clear_at_least", c, 0)
		if err != nil {
			return e, err
		}
		e.clearAtLeast = v
	}
	if len(w.ClearToolInputs) > 0 && !bytes.Equal(w.ClearToolInputs, []byte("null")) {
		if json.Unmarshal(w.ClearToolInputs, &e.clearAll) != nil && json.Unmarshal(w.ClearToolInputs, &e.clearInputs) != nil {
			return e, badRequest("%s.clear_tool_inputs: Input should be a valid boolean or a list of tool names", tag)
		}
	}
	return e, nil
}

// countValue is v.Value, required and at least lo.
func countValue(tag string, v *typedValue, lo int) (int, error) {
	if v.Value == nil {
		return 0, badRequest("%s.value: Field required", tag)
	}
	if *v.Value < lo {
		return 0, badRequest("%s.value: Input should be greater than or equal to %d", tag, lo)
	}
	return *v.Value, nil
}

// strictDecode decodes raw into v, refusing unknown fields as the API does ("Extra inputs are
// not permitted").
func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("%s: Extra inputs are not permitted", strings.Trim(f, `"`))
		}
		return err
	}
	return nil
}

// toolPair is one client tool call of the history and where its result is.
type toolPair struct {
	name             string
	useMsg, useBlock int
	resMsg, resBlock int
}

// apply returns msgs with the edits applied, given the unedited prompt's input tokens, and
// what each edit did. msgs is not modified. An edit whose trigger is not reached, or that
// would free fewer tokens than its clear_at_least, changes nothing and is not reported.
func (cm *contextManagement) apply(msgs []anthropicMsg, inputTokens int) ([]anthropicMsg, []AppliedEdit, error) {
	content := make([][]json.RawMessage, len(msgs))
	for i, m := range msgs {
		blocks, err := contentBlocks(m.Content)
		if err != nil {
			return nil, nil, badRequest("messages.%d.content: %v", i, err)
		}
		content[i] = blocks
	}
	applied := []AppliedEdit{}
	changed := false
	for _, e := range cm.edits {
		out, cleared, freed := e.apply(content, inputTokens)
		if cleared == 0 || freed < e.minFreed() {
			continue
		}
		content, changed = out, true
		inputTokens -= freed
		applied = append(applied, e.applied(cleared, freed))
	}
	if !changed {
		return msgs, applied, nil
	}
	edited := make([]anthropicMsg, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(content[i])
		if err != nil {
			return nil, nil, err
		}
		edited[i] = anthropicMsg{Role: m.Role, Content: b}
	}
	return edited, applied, nil
}

// apply clears the results of every tool use but the newest e.keep, oldest first, leaving the
// excluded tools' alone. It returns the new content (content itself is not modified), the
// number of tool uses cleared and the tokens that freed.
func (e clearToolUses) apply(content [][]json.RawMessage, inputTokens int) ([][]json.RawMessage, int, int) {
	pairs := toolPairs(content)
	switch {
	case e.triggerType == "input_tokens" && inputTokens <= e.trigger:
		return content, 0, 0
	case e.triggerType == "tool_uses" && len(pairs) <= e.trigger:
		return content, 0, 0
	case len(pairs) <= e.keep:
		return content, 0, 0
	}
	out := slices.Clone(content)
	copied := map[int]bool{}
	edit := func(msg, block int, f func(map[string]any)) int {
		var obj map[string]any
		if json.Unmarshal(out[msg][block], &obj) != nil {
			return 0
		}
		before := blockTokens(out[msg][block])
		f(obj)
		b, err := json.Marshal(obj)
		if err != nil {
			return 0
		}
		if !copied[msg] {
			out[msg] = slices.Clone(out[msg])
			copied[msg] = true
		}
		out[msg][block] = b
		return before - blockTokens(b)
	}
	cleared, freed := 0, 0
	for _, p := range pairs[:len(pairs)-e.keep] {
		if slices.Contains(e.exclude, p.name) {
			continue
		}
		cleared++
		freed += edit(p.resMsg, p.resBlock, func(obj map[string]any) { obj["content"] = ClearedToolResult })
		if e.clearAll || slices.Contains(e.clearInputs, p.name) {
			freed += edit(p.useMsg, p.useBlock, func(obj map[string]any) { obj["input"] = map[string]any{} })
		}
	}
	return out, cleared, max(freed, 0)
}

// blockTokens counts a block as the cache accounting does: its canonical JSON without
// cache_control.
func blockTokens(raw json.RawMessage) int {
	_, canon, _, err := canonical(raw)
	if err != nil {
		return tokensOf(raw)
	}
	return tokensOf(canon)
}

// toolPairs lists the history's answered client tool calls, oldest first.
func toolPairs(content [][]json.RawMessage) []toolPair {
	var pairs []toolPair
	open := map[string]int{} // tool_use id → index in pairs
	for i, blocks := range content {
		for j, b := range blocks {
			var head struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				Name      string `json:"name"`
				ToolUseID string `json:"tool_use_id"`
			}
			if json.Unmarshal(b, &head) != nil {
				continue
			}
			switch head.Type {
			case "tool_use":
				open[head.ID] = len(pairs)
				pairs = append(pairs, toolPair{name: head.Name, useMsg: i, useBlock: j, resMsg: -1})
			case "tool_result":
				if k, ok := open[head.ToolUseID]; ok {
					pairs[k].resMsg, pairs[k].resBlock = i, j
				}
			}
		}
	}
	return slices.DeleteFunc(pairs, func(p toolPair) bool { return p.resMsg < 0 })
}
