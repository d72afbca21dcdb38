package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/lazy"
)

// view is the API-independent picture of a request that rules match against.
type view struct {
	model    string
	system   string
	tools    []string
	userText string   // text blocks of the last user message, joined by newlines, system reminders cut out
	userAll  string   // the last user message with tool-result contents
	results  []string // tool names of the tool results in the last user message
	history  string   // every message's text and tool results, joined by newlines
	thinking bool     // the request asks for extended thinking
	// searchTool is the name of the request's server-side tool search tool, if any.
	searchTool string
	// webSearch is the request's web_search server tool, if any.
	webSearch *webSearchTool
}

// cacheBlock is one unit of the prompt prefix: a tool definition, a system block or a message
// content block (a chat-completions message is one block). Tokens come from its canonical
// JSON, which excludes cache_control so moving a breakpoint never changes a prefix.
type cacheBlock struct {
	tag    string // section and position: "tool", "system", "msg 3 user"
	canon  []byte
	tokens int
	bp     *breakpoint
}

type breakpoint struct {
	ttl time.Duration
}

// parsed is a request turned into its view and its cache blocks.
type parsed struct {
	view   view
	blocks []cacheBlock
	stream bool
	// includeUsage is stream_options.include_usage of a chat-completions request.
	includeUsage bool
	// applied is what the request's context_management edits did (empty when none applied);
	// nil when it asked for none.
	applied []AppliedEdit
}

// requestError is a 400 invalid_request_error.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}

// tokensOf is the documented token approximation: one token per started 4 bytes of canonical
// JSON.
func tokensOf(b []byte) int { return (len(b) + 3) / 4 }

// canonical decodes a JSON value, removes its cache_control and re-encodes it with sorted keys,
// returning the decoded object and the cache_control it held.
func canonical(raw json.RawMessage) (map[string]any, []byte, *cacheControl, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, nil, nil, err
	}
	var cc *cacheControl
	if v, ok := obj["cache_control"]; ok {
		b, _ := json.Marshal(v)
		cc = &cacheControl{}
		if err := json.Unmarshal(b, cc); err != nil {
			return nil, nil, nil, fmt.Errorf("cache_control: %w", err)
		}
		delete(obj, "cache_control")
	}
	// Without HTML escaping: a tokenizer sees "<", not the "\u003c" encoding/json would write.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, nil, nil, err
	}
	return obj, bytes.TrimSuffix(buf.Bytes(), []byte("\n")), cc, nil
}

type cacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl"`
}

func (c *cacheControl) breakpoint() (*breakpoint, error) {
	if c == nil {
		return nil, nil
	}
	if c.Type != "ephemeral" {
		return nil, badRequest("cache_control.type: Input should be 'ephemeral'")
	}
	switch c.TTL {
	case "", "5m":
		return &breakpoint{ttl: 5 * time.Minute}, nil
	case "1h":
		return &breakpoint{ttl: time.Hour}, nil
	}
	return nil, badRequest("cache_control.ttl: Input should be '5m' or '1h'")
}

type anthropicRequest struct {
	Model        string            `json:"model"`
	MaxTokens    *int              `json:"max_tokens"`
	Stream       bool              `json:"stream"`
	System       json.RawMessage   `json:"system"`
	Tools        []json.RawMessage `json:"tools"`
	Messages     []anthropicMsg    `json:"messages"`
	CacheControl *cacheControl     `json:"cache_control"`
	// ContextManagement is the beta's server-side context editing (contextedit.go).
	ContextManagement json.RawMessage `json:"context_management"`
	Thinking          *struct {
		Type         string `json:"type"`
		BudgetTokens *int   `json:"budget_tokens"`
	} `json:"thinking"`
}

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// parseAnthropic checks a Messages API body the way the real API does for the features the
// scripted model understands, and builds its view and cache blocks. countOnly skips the
// max_tokens requirement of count_tokens; betas are the anthropic-beta header's values.
// Context editing applies before anything else reads the prompt: the view and the cache
// blocks are those of the edited prompt, as the model and the prompt cache see it.
func parseAnthropic(body []byte, countOnly bool, betas []string) (*parsed, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("invalid JSON body: %v", err)
	}
	if err := checkAnthropic(&req, countOnly); err != nil {
		return nil, err
	}
	cm, err := parseContextManagement(req.ContextManagement, betas)
	if err != nil {
		return nil, err
	}
	p, err := buildAnthropic(&req, req.Messages)
	if err != nil || cm == nil {
		return p, err
	}
	edited, applied, err := cm.apply(req.Messages, p.inputTokens())
	if err != nil {
		return nil, err
	}
	if len(applied) > 0 {
		if p, err = buildAnthropic(&req, edited); err != nil {
			return nil, err
		}
	}
	p.applied = applied
	return p, nil
}

// inputTokens is the whole prompt's token count.
func (p *parsed) inputTokens() int {
	n := 0
	for _, b := range p.blocks {
		n += b.tokens
	}
	return n
}

// buildAnthropic builds the view and cache blocks of a checked request whose messages are msgs.
func buildAnthropic(req *anthropicRequest, msgs []anthropicMsg) (*parsed, error) {
	p := &parsed{stream: req.Stream}
	p.view.model = req.Model
	p.view.thinking = req.Thinking != nil && req.Thinking.Type != "disabled"
	deferred, err := p.anthropicTools(req.Tools)
	if err != nil {
		return nil, err
	}
	if err := p.anthropicSystem(req.System); err != nil {
		return nil, err
	}
	if err := p.anthropicMessages(msgs, deferred); err != nil {
		return nil, err
	}
	if req.CacheControl != nil { // automatic caching: a breakpoint on the last block
		bp, err := req.CacheControl.breakpoint()
		if err != nil {
			return nil, err
		}
		if p.blocks[len(p.blocks)-1].bp == nil {
			p.blocks[len(p.blocks)-1].bp = bp
		}
	}
	if err := checkBreakpoints(p.blocks); err != nil {
		return nil, err
	}
	return p, nil
}

// checkAnthropic refuses what the Messages API refuses before it reads the content: a
// missing model, max_tokens or message, a thinking setting it does not take.
func checkAnthropic(req *anthropicRequest, countOnly bool) error {
	if req.Model == "" {
		return badRequest("model: Field required")
	}
	if req.MaxTokens == nil && !countOnly {
		return badRequest("max_tokens: Field required")
	}
	if len(req.Messages) == 0 {
		return badRequest("messages: at least one message is required")
	}
	t := req.Thinking
	if t == nil {
		return nil
	}
	switch t.Type {
	case "enabled":
		switch {
		case t.BudgetTokens == nil:
			return badRequest("thinking.enabled.budget_tokens: Field required")
		case *t.BudgetTokens < 1024:
			return badRequest("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
		case req.MaxTokens != nil && *t.BudgetTokens >= *req.MaxTokens:
			return badRequest("`max_tokens` must be greater than `thinking.budget_tokens`")
		}
	case "disabled", "adaptive":
	default:
		return badRequest("thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'")
	}
	return nil
}

// addBlock adds a block of the prompt prefix; tag names it in errors, key in the prefix
// hash.
func (p *parsed) addBlock(tag, key string, raw json.RawMessage) (map[string]any, error) {
	obj, canon, cc, err := canonical(raw)
	if err != nil {
		return nil, badRequest("%s: %v", tag, err)
	}
	bp, err := cc.breakpoint()
	if err != nil {
		return nil, err
	}
	p.blocks = append(p.blocks, cacheBlock{tag: key, canon: canon, tokens: tokensOf(canon), bp: bp})
	return obj, nil
}

// anthropicTools reads the tool list into the prefix. Deferred tools (defer_loading) are not
// part of it: the API loads each one where a tool_reference names it, so its definition
// counts there (loadReferenced); they are returned by name.
func (p *parsed) anthropicTools(tools []json.RawMessage) (map[string][]byte, error) {
	deferred := map[string][]byte{}
	sent := 0 // tools in the prefix: a deferred tool added or removed moves none of them
	names := map[string]bool{}
	for i, t := range tools {
		tag := fmt.Sprintf("tools.%d", i)
		var head struct {
			Type         string `json:"type"`
			Name         string `json:"name"`
			DeferLoading bool   `json:"defer_loading"`
		}
		if err := json.Unmarshal(t, &head); err != nil {
			return nil, badRequest("%s: %v", tag, err)
		}
		if names[head.Name] {
			return nil, badRequest("tools: Tool names must be unique.")
		}
		names[head.Name] = true
		if head.DeferLoading {
			_, canon, cc, err := canonical(t)
			if err != nil {
				return nil, badRequest("%s: %v", tag, err)
			}
			if cc != nil {
				return nil, badRequest("%s: a tool with defer_loading cannot have cache_control", tag)
			}
			deferred[head.Name] = canon
			p.view.tools = append(p.view.tools, head.Name)
			continue
		}
		if strings.HasPrefix(head.Type, "tool_search_tool_") {
			p.view.searchTool = head.Name
		}
		if strings.HasPrefix(head.Type, "web_search_") {
			def, err := parseWebSearchTool(tag, t, head.Type, head.Name)
			if err != nil {
				return nil, err
			}
			p.view.webSearch = def
		}
		obj, err := p.addBlock(tag, fmt.Sprintf("tools.%d", sent), t)
		sent++
		if err != nil {
			return nil, err
		}
		name, _ := obj["name"].(string)
		p.view.tools = append(p.view.tools, name)
	}
	// The API also accepts deferred tools with a search of the client's own (an ordinary tool
	// whose results hold tool_reference blocks, as Claude Code sends): only a request whose
	// every tool is deferred has nothing to search with.
	if len(deferred) > 0 && p.view.searchTool == "" && sent == 0 {
		return nil, badRequest("tools: deferred tools (defer_loading) need a tool search tool in the request")
	}
	return deferred, nil
}

// anthropicSystem reads the system prompt into the prefix.
func (p *parsed) anthropicSystem(system json.RawMessage) error {
	sys, err := contentBlocks(system)
	if err != nil {
		return badRequest("system: %v", err)
	}
	var sysText []string
	for i, b := range sys {
		tag := fmt.Sprintf("system.%d", i)
		obj, err := p.addBlock(tag, tag, b)
		if err != nil {
			return err
		}
		s, _ := obj["text"].(string)
		if s == "" {
			return badRequest("system: text content blocks must be non-empty")
		}
		sysText = append(sysText, s)
	}
	p.view.system = strings.Join(sysText, "\n")
	return nil
}

// anthropicMessages reads the conversation into the prefix and the view rules match on,
// and refuses what the API refuses of its shape.
func (p *parsed) anthropicMessages(msgs []anthropicMsg, deferred map[string][]byte) error {
	toolNames := map[string]string{} // tool_use id → tool name, from assistant messages
	roles := make([]string, len(msgs))
	convo := make([][]msgBlock, len(msgs))
	for i, m := range msgs {
		roles[i] = m.Role
		if m.Role != "user" && m.Role != "assistant" {
			return badRequest("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		blocks, err := contentBlocks(m.Content)
		if err != nil {
			return badRequest("messages.%d.content: %v", i, err)
		}
		last := i == len(msgs)-1 && m.Role == "user"
		var texts, all []string
		for j, b := range blocks {
			tag := fmt.Sprintf("messages.%d.content.%d", i, j)
			obj, err := p.addBlock(tag, tag, b)
			if err != nil {
				return err
			}
			convo[i] = append(convo[i], blockOf(obj))
			typ, _ := obj["type"].(string)
			switch typ {
			case "tool_use":
				id, _ := obj["id"].(string)
				name, _ := obj["name"].(string)
				toolNames[id] = name
			case "text":
				s, _ := obj["text"].(string)
				texts = append(texts, s)
				all = append(all, s)
			case "tool_result":
				id, _ := obj["tool_use_id"].(string)
				p.view.results = appendIf(p.view.results, last, toolNames[id])
				all = append(all, resultText(obj["content"]))
			case "tool_search_tool_result":
				if err := p.loadReferenced(obj, deferred, tag); err != nil {
					return err
				}
			}
		}
		if last {
			p.view.userText = withoutReminders(strings.Join(texts, "\n"))
			p.view.userAll = strings.Join(all, "\n")
		}
		p.addHistory(blocks)
	}
	return checkConversation(roles, convo)
}

// addHistory adds the texts of a message's blocks to what History matches.
func (p *parsed) addHistory(blocks []json.RawMessage) {
	for _, b := range blocks {
		var obj map[string]any
		if json.Unmarshal(b, &obj) == nil {
			if s, ok := obj["text"].(string); ok {
				p.view.history += s + "\n"
			}
			if obj["type"] == "tool_result" {
				p.view.history += resultText(obj["content"]) + "\n"
			}
		}
	}
}

// loadReferenced adds the definitions of the deferred tools a tool search result references to
// that block, where the API inlines them: they join the prefix from there on. A reference to a
// tool that is not deferred in this request is an error, as the API reports it.
func (p *parsed) loadReferenced(obj map[string]any, deferred map[string][]byte, tag string) error {
	content, _ := obj["content"].(map[string]any)
	refs, _ := content["tool_references"].([]any)
	b := &p.blocks[len(p.blocks)-1]
	for k, r := range refs {
		ref, _ := r.(map[string]any)
		name, _ := ref["tool_name"].(string)
		def, ok := deferred[name]
		if !ok {
			return badRequest("%s.content.tool_references.%d: tool %q is not a deferred tool of this request", tag, k, name)
		}
		b.canon = append(append(b.canon, '\n'), def...)
	}
	b.tokens = tokensOf(b.canon)
	return nil
}

func appendIf(list []string, ok bool, s string) []string {
	if ok {
		return append(list, s)
	}
	return list
}

// contentBlocks turns a string or an array of blocks into blocks; a string becomes one text
// block, as the API treats it.
func contentBlocks(raw json.RawMessage) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{b}, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("must be a string or a list of content blocks")
	}
	return blocks, nil
}

// resultText flattens a tool_result content (a string or text blocks) for matching.
func resultText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, e := range c {
			if m, ok := e.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// maxBreakpoints is the Messages API's limit on cache_control blocks per request.
const maxBreakpoints = 4

// checkBreakpoints enforces the API's breakpoint rules: at most four, and a 1 h entry never
// after a 5 m one.
func checkBreakpoints(blocks []cacheBlock) error {
	n := 0
	var prev *breakpoint
	for _, b := range blocks {
		if b.bp == nil {
			continue
		}
		n++
		if prev != nil && b.bp.ttl > prev.ttl {
			return badRequest("%s: a cache_control block with ttl='1h' must not come after one with ttl='5m'", b.tag)
		}
		prev = b.bp
	}
	if n > maxBreakpoints {
		return badRequest("A maximum of %d blocks with cache_control may be provided. Found %d.", maxBreakpoints, n)
	}
	return nil
}

// reminder matches a <system-reminder> block a harness adds to a user message.
var reminder = lazy.Regexp{Expr: `(?s)<system-reminder>.*?</system-reminder>`}

// withoutReminders cuts the harness's system reminders out of user text: a rule's user_text
// is about what the user wrote, not the listings and notes the harness adds beside it.
func withoutReminders(s string) string {
	return strings.TrimSpace(reminder.Get().ReplaceAllString(s, ""))
}
