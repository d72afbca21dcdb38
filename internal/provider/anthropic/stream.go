package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// wireEvent is one SSE data payload of a streaming Messages response. keel decodes it into its
// own type rather than the SDK's union so that usage fields can be told absent from zero.
type wireEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID                string                 `json:"id"`
		Model             string                 `json:"model"`
		Usage             wireUsage              `json:"usage"`
		ContextManagement *wireContextManagement `json:"context_management"`
	} `json:"message"`
	// ContentBlock stays raw until content_block_start reads it: a server tool's block is
	// kept as sent (see message.Block.Raw).
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
		// Citation is one source a text block cites (citations_delta), kept as sent.
		Citation json.RawMessage `json:"citation"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	// ContextManagement is what the request's context editing did (message_delta).
	ContextManagement *wireContextManagement `json:"context_management"`
}

// wireContextManagement is a response's context_management: the edits the API applied to the
// request's prompt before the model saw it.
type wireContextManagement struct {
	AppliedEdits []struct {
		Type               string `json:"type"`
		ClearedToolUses    int64  `json:"cleared_tool_uses"`
		ClearedInputTokens int64  `json:"cleared_input_tokens"`
	} `json:"applied_edits"`
}

// setCleared takes the tool-result clearing a context_management reports; a later report
// replaces an earlier one.
func (a *assembler) setCleared(cm *wireContextManagement) {
	if cm == nil {
		return
	}
	a.clearedUses, a.clearedTokens = 0, 0
	for _, e := range cm.AppliedEdits {
		if e.Type == ClearToolUsesEdit {
			a.clearedUses += e.ClearedToolUses
			a.clearedTokens += e.ClearedInputTokens
		}
	}
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Citations json.RawMessage `json:"citations"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// wireUsage has pointers because message_delta repeats only some counts: a count it leaves out
// keeps the value from message_start, a count it gives replaces it (they are cumulative).
type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral1h *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	ServerToolUse *struct {
		WebSearchRequests *int64 `json:"web_search_requests"`
	} `json:"server_tool_use"`
}

func (w wireUsage) mergeInto(u *message.Usage) {
	set := func(dst *int64, src *int64) {
		if src != nil {
			*dst = *src
		}
	}
	set(&u.InputTokens, w.InputTokens)
	set(&u.OutputTokens, w.OutputTokens)
	set(&u.CacheCreationInputTokens, w.CacheCreationInputTokens)
	set(&u.CacheReadInputTokens, w.CacheReadInputTokens)
	if w.CacheCreation != nil {
		set(&u.CacheCreation1hInputTokens, w.CacheCreation.Ephemeral1h)
	}
	if w.ServerToolUse != nil {
		set(&u.WebSearchRequests, w.ServerToolUse.WebSearchRequests)
	}
}

// assembler builds the assistant message from stream events and says which provider events
// each one yields.
type assembler struct {
	logger    *slog.Logger
	blocks    map[int]*message.Block
	inputs    map[int]*bytes.Buffer     // accumulated input_json_delta per tool_use block
	servers   map[int]*bytes.Buffer     // the same for server tool blocks
	citations map[int][]json.RawMessage // the citations of text blocks, in order
	skipped   map[int]bool              // blocks without a type, left out
	usage     message.Usage
	stop      message.StopReason
	model     string
	requestID string
	started   bool // message_start was seen
	stopped   bool
	// clearedUses and clearedTokens are what the API's context editing cleared.
	clearedUses, clearedTokens int64
}

// malformed is an event that does not fit the stream: retried like a dropped connection.
func malformed(format string, args ...any) error {
	return fmt.Errorf("anthropic stream: %w: "+format, append([]any{provider.ErrMalformedStream}, args...)...)
}

func newAssembler(logger *slog.Logger) *assembler {
	return &assembler{logger: logger, blocks: map[int]*message.Block{}, inputs: map[int]*bytes.Buffer{},
		servers: map[int]*bytes.Buffer{}, citations: map[int][]json.RawMessage{}, skipped: map[int]bool{}}
}

func (a *assembler) add(ev *wireEvent) ([]provider.Event, error) {
	switch ev.Type {
	case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
		if !a.started {
			return nil, malformed("%s before message_start", ev.Type)
		}
	}
	switch ev.Type {
	case "message_start":
		if a.started {
			return nil, malformed("a second message_start")
		}
		a.started = true
		if ev.Message != nil {
			a.model = ev.Message.Model
			ev.Message.Usage.mergeInto(&a.usage)
			a.setCleared(ev.Message.ContextManagement)
		}
	case "content_block_start":
		return a.blockStart(ev)
	case "content_block_delta":
		return a.blockDelta(ev)
	case "content_block_stop":
		return nil, a.blockStop(ev)
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			a.stop = message.StopReason(ev.Delta.StopReason)
		}
		if ev.Usage != nil {
			ev.Usage.mergeInto(&a.usage)
		}
		a.setCleared(ev.ContextManagement)
	case "message_stop":
		a.stopped = true
	}
	return nil, nil
}

// blockStart opens a content block: text, thinking, a tool call, or a server tool's block
// kept as sent.
func (a *assembler) blockStart(ev *wireEvent) ([]provider.Event, error) {
	if len(ev.ContentBlock) == 0 || string(ev.ContentBlock) == "null" {
		return nil, malformed("content_block_start %d without content_block", ev.Index)
	}
	if a.blocks[ev.Index] != nil {
		return nil, malformed("content_block_start %d for a block already started", ev.Index)
	}
	cb := &wireBlock{}
	if err := json.Unmarshal(ev.ContentBlock, cb); err != nil {
		return nil, malformed("content_block_start %d: %v", ev.Index, err)
	}
	switch cb.Type {
	case message.TypeText:
		a.blocks[ev.Index] = &message.Block{Type: cb.Type, Text: cb.Text}
		var given []json.RawMessage
		if json.Unmarshal(cb.Citations, &given) == nil && len(given) > 0 {
			a.citations[ev.Index] = given
		}
		if cb.Text != "" {
			return []provider.Event{provider.TextDelta{Index: ev.Index, Text: cb.Text}}, nil
		}
	case message.TypeThinking:
		a.blocks[ev.Index] = &message.Block{Type: cb.Type, Thinking: cb.Thinking, Signature: cb.Signature}
		if cb.Thinking != "" {
			return []provider.Event{provider.ThinkingDelta{Index: ev.Index, Thinking: cb.Thinking}}, nil
		}
	case message.TypeRedactedThinking:
		a.blocks[ev.Index] = &message.Block{Type: cb.Type, Data: cb.Data}
	case message.TypeToolUse:
		b := &message.Block{Type: cb.Type, ID: cb.ID, Name: cb.Name}
		if len(cb.Input) > 0 && !bytes.Equal(cb.Input, []byte("{}")) {
			b.Input = slices.Clone(cb.Input)
		}
		a.blocks[ev.Index] = b
		a.inputs[ev.Index] = &bytes.Buffer{}
		return []provider.Event{provider.ToolUseStart{Index: ev.Index, ID: cb.ID, Name: cb.Name}}, nil
	case "":
		a.logger.Warn("anthropic stream: skipping content block without a type", "index", ev.Index)
		a.skipped[ev.Index] = true
	default:
		// Server tool blocks (server_tool_use, tool_search_tool_result, …) run on the API's
		// side: kept as sent, to be replayed, never run here. A server_tool_use streams its
		// input like a tool_use; it is spliced in when the block stops.
		a.blocks[ev.Index] = &message.Block{Type: cb.Type, Raw: bytes.Clone(ev.ContentBlock)}
		a.servers[ev.Index] = &bytes.Buffer{}
	}
	return nil, nil
}

// blockDelta adds a delta to its block and streams what a reader sees of it.
func (a *assembler) blockDelta(ev *wireEvent) ([]provider.Event, error) {
	d := ev.Delta
	b := a.blocks[ev.Index]
	switch {
	case d == nil:
		return nil, malformed("content_block_delta %d without delta", ev.Index)
	case b == nil && !a.skipped[ev.Index]:
		return nil, malformed("content_block_delta for block %d, which was never started", ev.Index)
	case b == nil:
		return nil, nil
	}
	switch d.Type {
	case "text_delta":
		b.Text += d.Text
		return []provider.Event{provider.TextDelta{Index: ev.Index, Text: d.Text}}, nil
	case "thinking_delta":
		b.Thinking += d.Thinking
		return []provider.Event{provider.ThinkingDelta{Index: ev.Index, Thinking: d.Thinking}}, nil
	case "signature_delta":
		b.Signature += d.Signature
	case "citations_delta":
		if len(d.Citation) > 0 && b.Type == message.TypeText {
			a.citations[ev.Index] = append(a.citations[ev.Index], bytes.Clone(d.Citation))
		}
	case "input_json_delta":
		if buf := a.servers[ev.Index]; buf != nil {
			buf.WriteString(d.PartialJSON)
			return nil, nil
		}
		if buf := a.inputs[ev.Index]; buf != nil {
			buf.WriteString(d.PartialJSON)
		}
		return []provider.Event{provider.InputDelta{Index: ev.Index, PartialJSON: d.PartialJSON}}, nil
	}
	return nil, nil
}

// blockStop closes a block: citations joined, a server tool's streamed input spliced in, a
// tool call's input parsed.
func (a *assembler) blockStop(ev *wireEvent) error {
	if a.blocks[ev.Index] == nil && !a.skipped[ev.Index] {
		return malformed("content_block_stop for block %d, which was never started", ev.Index)
	}
	if cs := a.citations[ev.Index]; len(cs) > 0 {
		all := []byte{'['}
		for i, c := range cs {
			if i > 0 {
				all = append(all, ',')
			}
			all = append(all, c...)
		}
		a.blocks[ev.Index].Citations = append(all, ']')
	}
	if buf := a.servers[ev.Index]; buf != nil && len(bytes.TrimSpace(buf.Bytes())) > 0 {
		b := a.blocks[ev.Index]
		raw, err := withInput(b.Raw, buf.Bytes())
		if err != nil {
			return malformed("%s block %d: %v", b.Type, ev.Index, err)
		}
		b.Raw = raw
	}
	if buf := a.inputs[ev.Index]; buf != nil {
		a.blocks[ev.Index].Input = a.toolInput(a.blocks[ev.Index], buf.Bytes())
	}
	return nil
}

// toolInput is the compact JSON input of a finished tool_use block. Input that is not valid
// JSON (a reply cut off by max_tokens) becomes {} so the history stays sendable; the tool's
// schema check then reports what is missing.
func (a *assembler) toolInput(b *message.Block, streamed []byte) json.RawMessage {
	in := streamed
	if len(bytes.TrimSpace(in)) == 0 {
		in = b.Input
	}
	if len(in) == 0 {
		return json.RawMessage(`{}`)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, in); err != nil {
		// Passed on as is: the loop answers the call with an error naming the bad input and
		// keeps {} in the history so it stays sendable.
		a.logger.Warn("anthropic stream: tool_use input is not valid JSON", "tool", b.Name, "id", b.ID, "err", err)
		return json.RawMessage(bytes.Clone(in))
	}
	return out.Bytes()
}

func (a *assembler) done() provider.Done {
	idx := make([]int, 0, len(a.blocks))
	for i := range a.blocks {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	content := make([]message.Block, 0, len(idx))
	for _, i := range idx {
		b := a.blocks[i]
		if b.Type == message.TypeToolUse && b.Input == nil {
			b.Input = json.RawMessage(`{}`)
		}
		content = append(content, *b)
	}
	return provider.Done{
		Message:    message.Message{Role: message.RoleAssistant, Content: content},
		StopReason: a.stop,
		Usage:      a.usage,
		Model:      a.model,
		RequestID:  a.requestID,

		ClearedToolUses:    a.clearedUses,
		ClearedInputTokens: a.clearedTokens,
	}
}

// withInput returns the JSON object raw with the value of its "input" field replaced by the
// compacted streamed input, every other field kept in its order and bytes (a field the API adds
// later survives the round trip). It fails when the input is not valid JSON.
func withInput(raw, streamed []byte) (json.RawMessage, error) {
	var in bytes.Buffer
	if err := json.Compact(&in, streamed); err != nil {
		return nil, fmt.Errorf("streamed input: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("content block is not a JSON object")
	}
	out := []byte{'{'}
	replaced := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("content block: %w", err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, fmt.Errorf("content block field %q: %w", key, err)
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendString(out, key)
		out = append(out, ':')
		if key == "input" {
			val, replaced = in.Bytes(), true
		}
		out = append(out, val...)
	}
	if !replaced {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, `"input":`...)
		out = append(out, in.Bytes()...)
	}
	return append(out, '}'), nil
}
