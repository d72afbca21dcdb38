package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// API names in [Recorded.API].
const (
	apiAnthropic = "anthropic"
	apiOpenAI    = "openai"
)

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	status, msg := 0, ""
	var p *parsed
	switch {
	case err != nil:
		status, msg = http.StatusRequestEntityTooLarge, err.Error()
	default:
		status, msg = checkAnthropicHeaders(r)
	}
	if status == 0 {
		if p, err = parseAnthropic(body, false, betas(r)); err != nil {
			status, msg = errStatus(err), err.Error()
		}
	}
	d := s.decide(apiAnthropic, r, body, p, status, msg)
	w.Header().Set("request-id", fmt.Sprintf("req_scripted_%04d", d.rec.N))
	if p == nil {
		writeAnthropicError(w, status, msg)
		return
	}
	if f := d.fault; f != nil && f.Status != 0 {
		setRetryHeaders(w, f)
		writeAnthropicError(w, f.Status, d.rec.Error)
		return
	}
	rep, err := buildReply(d.rec.N, p.view.model, d.rule, replyEnv{search: p.view.searchTool, web: p.view.webSearch})
	if err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, "scripted: "+err.Error())
		return
	}
	if p.stream {
		writeSSE(r.Context(), w, anthropicEvents(rep, d.rec.Cache, p.applied), d.fault)
		return
	}
	if err := pace(r.Context(), w, d.fault, 0); err != nil {
		return
	}
	finish(w, d.fault)
	writeJSON(w, http.StatusOK, anthropicMessage(rep, d.rec.Cache, p.applied))
}

func (s *Server) handleCountTokens(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeAnthropicError(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	if status, msg := checkAnthropicHeaders(r); status != 0 {
		writeAnthropicError(w, status, msg)
		return
	}
	p, err := parseAnthropic(body, true, betas(r))
	if err != nil {
		writeAnthropicError(w, errStatus(err), err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": p.inputTokens()})
}

// checkAnthropicHeaders checks the headers loosely: any key is accepted, but one must be sent,
// and so must anthropic-version.
func checkAnthropicHeaders(r *http.Request) (int, string) {
	if r.Header.Get("x-api-key") == "" && r.Header.Get("authorization") == "" {
		return http.StatusUnauthorized, "x-api-key header is required"
	}
	if r.Header.Get("anthropic-version") == "" {
		return http.StatusBadRequest, "anthropic-version: header is required"
	}
	return 0, ""
}

// betas are the anthropic-beta header's values: several headers, or one with a comma-separated
// list.
func betas(r *http.Request) []string {
	var out []string
	for _, h := range r.Header.Values("anthropic-beta") {
		for _, v := range strings.Split(h, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

func errStatus(err error) int {
	var re *requestError
	if errors.As(err, &re) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func setRetryHeaders(w http.ResponseWriter, f *Fault) {
	if f.RetryAfter > 0 {
		w.Header().Set("retry-after", strconv.Itoa(f.RetryAfter))
	}
	if f.RetryAfterMS > 0 {
		w.Header().Set("retry-after-ms", strconv.Itoa(f.RetryAfterMS))
	}
}

// anthropicErrorType is the error.type the Messages API uses for a status.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func faultMessage(f *Fault) string {
	if f.Message != "" {
		return f.Message
	}
	switch f.Status {
	case 429:
		return "Number of request tokens has exceeded your per-minute rate limit (scripted)"
	case 529:
		return "Overloaded"
	case 500:
		return "Internal server error (scripted)"
	}
	return fmt.Sprintf("scripted fault: HTTP %d", f.Status)
}

// writeAnthropicError answers with the API's error body; like the API it names the request
// id (the request-id header, when already set) in the body too.
func writeAnthropicError(w http.ResponseWriter, status int, msg string) {
	type errBody struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	writeJSON(w, status, struct {
		Type      string  `json:"type"`
		Error     errBody `json:"error"`
		RequestID string  `json:"request_id,omitempty"`
	}{"error", errBody{anthropicErrorType(status), msg}, w.Header().Get("request-id")})
}

// corrupted is ev's data cut in the middle of its first nested object: the event type still
// reads, the payload does not decode.
func corrupted(ev sseEvent) []byte {
	if ev.name == "" {
		return []byte(`{"id":"chatcmpl-scripted","choices":[{"delta":{"content":`) // a chat chunk
	}
	return fmt.Appendf(nil, `{"type":%q,"message":{"id":`, ev.name)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("scripted: encode response: %v", err)) // only our own types get here
	}
	w.Header().Set("content-type", "application/json")
	w.Header().Set("content-length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

type anthropicUsage struct {
	InputTokens              int            `json:"input_tokens"`
	CacheCreationInputTokens int            `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int            `json:"cache_read_input_tokens"`
	CacheCreation            *cacheCreation `json:"cache_creation,omitempty"`
	OutputTokens             int            `json:"output_tokens"`
	ServerToolUse            *serverToolUse `json:"server_tool_use,omitempty"`
	ServiceTier              string         `json:"service_tier,omitempty"`
}

type serverToolUse struct {
	WebSearchRequests int `json:"web_search_requests"`
}

type cacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

func usageOf(acc CacheAccount, output int) anthropicUsage {
	return anthropicUsage{
		InputTokens:              acc.UncachedTokens,
		CacheCreationInputTokens: acc.CacheCreationTokens,
		CacheReadInputTokens:     acc.CacheReadTokens,
		CacheCreation:            &cacheCreation{acc.CacheCreation5m, acc.CacheCreation1h},
		OutputTokens:             output,
		ServiceTier:              "standard",
	}
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type thinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type serverToolUseBlock struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Input  json.RawMessage `json:"input"`
	Caller struct {
		Type string `json:"type"`
	} `json:"caller"`
}

type toolReference struct {
	Type     string `json:"type"`
	ToolName string `json:"tool_name"`
}

type searchResultBlock struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   struct {
		Type           string          `json:"type"`
		ToolReferences []toolReference `json:"tool_references"`
	} `json:"content"`
}

// wireBlock is a content block as the API shows it; full=false gives the empty shell of a
// content_block_start. A tool search result arrives whole in its start.
func wireBlock(b replyBlock, full bool) any {
	switch b.kind {
	case kindServerUse:
		su := serverToolUseBlock{Type: "server_tool_use", ID: b.id, Name: b.name, Input: b.input}
		su.Caller.Type = "direct"
		if !full {
			su.Input = json.RawMessage("{}")
		}
		return su
	case kindWebResult:
		return webResultWireBlock(b)
	case kindCitedText:
		if !full {
			return textBlock{Type: "text"}
		}
		return citedTextBlock{Type: "text", Text: b.text, Citations: citationsOf(b)}
	case kindSearchResult:
		r := searchResultBlock{Type: "tool_search_tool_result", ToolUseID: b.id}
		r.Content.Type = "tool_search_tool_search_result"
		r.Content.ToolReferences = []toolReference{}
		for _, name := range b.found {
			r.Content.ToolReferences = append(r.Content.ToolReferences, toolReference{"tool_reference", name})
		}
		return r
	case KindThinking:
		if !full {
			return thinkingBlock{Type: "thinking"}
		}
		return thinkingBlock{"thinking", b.text, b.signature}
	case KindToolUse:
		if !full {
			return toolUseBlock{"tool_use", b.id, b.name, json.RawMessage("{}")}
		}
		if !json.Valid(b.input) {
			return toolUseBlock{"tool_use", b.id, b.name, json.RawMessage("{}")}
		}
		return toolUseBlock{"tool_use", b.id, b.name, b.input}
	}
	if !full {
		return textBlock{Type: "text"}
	}
	return textBlock{"text", b.text}
}

type anthropicMsgBody struct {
	ID                string                 `json:"id"`
	Type              string                 `json:"type"`
	Role              string                 `json:"role"`
	Model             string                 `json:"model"`
	Content           []any                  `json:"content"`
	StopReason        *string                `json:"stop_reason"`
	StopSequence      *string                `json:"stop_sequence"`
	Usage             anthropicUsage         `json:"usage"`
	ContextManagement *contextManagementBody `json:"context_management,omitempty"`
}

// contextManagementBody is a response's context_management: what the request's edits did.
type contextManagementBody struct {
	AppliedEdits []AppliedEdit `json:"applied_edits"`
}

// managementOf is the context_management of a response to a request that asked for
// context editing (applied non-nil), else nil.
func managementOf(applied []AppliedEdit) *contextManagementBody {
	if applied == nil {
		return nil
	}
	return &contextManagementBody{AppliedEdits: applied}
}

func anthropicMessage(rep *reply, acc CacheAccount, applied []AppliedEdit) anthropicMsgBody {
	m := anthropicMsgBody{ID: rep.id, Type: "message", Role: "assistant", Model: rep.model,
		Content: []any{}, StopReason: &rep.stopReason, Usage: usageOf(acc, rep.outputTokens),
		ContextManagement: managementOf(applied)}
	if rep.webSearches > 0 {
		m.Usage.ServerToolUse = &serverToolUse{WebSearchRequests: rep.webSearches}
	}
	for _, b := range rep.blocks {
		m.Content = append(m.Content, wireBlock(b, true))
	}
	return m
}

// sseEvent is one server-sent event: its name and its JSON data line.
type sseEvent struct {
	name string
	data []byte
}

func event(name string, v any) sseEvent {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("scripted: encode %s: %v", name, err))
	}
	return sseEvent{name, b}
}

// anthropicEvents is the Messages API stream of rep, in the real order: message_start (usage
// with output_tokens 1), per block content_block_start / deltas / content_block_stop with a
// ping after the first start, message_delta (stop reason, final usage, context_management
// when the request asked for context editing), message_stop.
func anthropicEvents(rep *reply, acc CacheAccount, applied []AppliedEdit) []sseEvent {
	type delta struct {
		Type        string    `json:"type"`
		Text        string    `json:"text,omitempty"`
		Thinking    string    `json:"thinking,omitempty"`
		Signature   string    `json:"signature,omitempty"`
		PartialJSON *string   `json:"partial_json,omitempty"`
		Citation    *citation `json:"citation,omitempty"`
	}
	type blockDelta struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta delta  `json:"delta"`
	}
	start := anthropicMessage(rep, acc, nil)
	start.Content = []any{}
	start.StopReason = nil
	start.Usage.OutputTokens = 1
	evs := []sseEvent{event("message_start", struct {
		Type    string           `json:"type"`
		Message anthropicMsgBody `json:"message"`
	}{"message_start", start})}
	ping := event("ping", map[string]string{"type": "ping"})
	for i, b := range rep.blocks {
		evs = append(evs, event("content_block_start", struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock any    `json:"content_block"`
		}{"content_block_start", i, wireBlock(b, false)}))
		if i == 0 {
			evs = append(evs, ping)
		}
		add := func(d delta) {
			evs = append(evs, event("content_block_delta", blockDelta{"content_block_delta", i, d}))
		}
		switch b.kind {
		case KindText:
			for _, c := range chunks(b.text, textChunk) {
				add(delta{Type: "text_delta", Text: c})
			}
		case kindCitedText:
			for _, c := range citationsOf(b) {
				add(delta{Type: "citations_delta", Citation: &c})
			}
			for _, c := range chunks(b.text, textChunk) {
				add(delta{Type: "text_delta", Text: c})
			}
		case KindThinking:
			for _, c := range chunks(b.text, textChunk) {
				add(delta{Type: "thinking_delta", Thinking: c})
			}
			add(delta{Type: "signature_delta", Signature: b.signature})
		case KindToolUse, kindServerUse:
			empty := ""
			add(delta{Type: "input_json_delta", PartialJSON: &empty})
			for _, c := range chunks(string(b.input), inputChunk) {
				add(delta{Type: "input_json_delta", PartialJSON: &c})
			}
		}
		evs = append(evs, event("content_block_stop", struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}{"content_block_stop", i}))
	}
	if len(rep.blocks) == 0 {
		evs = append(evs, ping)
	}
	final := usageOf(acc, rep.outputTokens)
	final.CacheCreation, final.ServiceTier = nil, ""
	if rep.webSearches > 0 {
		final.ServerToolUse = &serverToolUse{WebSearchRequests: rep.webSearches}
	}
	evs = append(evs, event("message_delta", struct {
		Type              string                 `json:"type"`
		Delta             any                    `json:"delta"`
		Usage             anthropicUsage         `json:"usage"`
		ContextManagement *contextManagementBody `json:"context_management,omitempty"`
	}{"message_delta", struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}{rep.stopReason, nil}, final, managementOf(applied)}))
	evs = append(evs, event("message_stop", map[string]string{"type": "message_stop"}))
	return evs
}

// writeSSE streams events, applying the fault's delay and drop.
func writeSSE(ctx context.Context, w http.ResponseWriter, evs []sseEvent, f *Fault) {
	w.Header().Set("content-type", "text/event-stream; charset=utf-8")
	w.Header().Set("cache-control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, ev := range evs {
		if err := pace(ctx, w, f, i); err != nil {
			return
		}
		data := ev.data
		if f != nil && f.Corrupt == i+1 {
			data = corrupted(ev)
		}
		if ev.name != "" {
			fmt.Fprintf(w, "event: %s\n", ev.name)
		}
		fmt.Fprintf(w, "data: %s\n\n", data)
		if err := rc.Flush(); err != nil {
			return
		}
	}
	finish(w, f)
}
