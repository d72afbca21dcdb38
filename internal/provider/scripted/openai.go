package scripted

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type chatRequest struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Tools         []json.RawMessage `json:"tools"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// parseOpenAI builds the view and cache blocks of a chat-completions body. Each tool and each
// message is one cache block. The last user message is the run of user and tool messages
// after the last assistant message.
func parseOpenAI(body []byte) (*parsed, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("invalid JSON body: %v", err)
	}
	if req.Model == "" {
		return nil, badRequest("you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("messages: at least one message is required")
	}
	p := &parsed{stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	p.view.model = req.Model
	add := func(tag string, raw json.RawMessage) error {
		_, canon, _, err := canonical(raw)
		if err != nil {
			return badRequest("%s: %v", tag, err)
		}
		p.blocks = append(p.blocks, cacheBlock{tag: tag, canon: canon, tokens: tokensOf(canon)})
		return nil
	}
	for i, t := range req.Tools {
		if err := add(fmt.Sprintf("tools.%d", i), t); err != nil {
			return nil, err
		}
		var tool struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		_ = json.Unmarshal(t, &tool)
		p.view.tools = append(p.view.tools, tool.Function.Name)
	}
	msgs := make([]chatMessage, len(req.Messages))
	lastAssistant := -1
	for i, raw := range req.Messages {
		if err := add(fmt.Sprintf("messages.%d", i), raw); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &msgs[i]); err != nil {
			return nil, badRequest("messages.%d: %v", i, err)
		}
		if msgs[i].Role == "assistant" {
			lastAssistant = i
		}
	}
	toolNames := map[string]string{}
	var system, texts, all []string
	for i, m := range msgs {
		text := chatText(m.Content)
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "assistant":
			for _, tc := range m.ToolCalls {
				toolNames[tc.ID] = tc.Function.Name
			}
		case "user":
			if i > lastAssistant {
				texts = append(texts, text)
				all = append(all, text)
			}
		case "tool":
			if i > lastAssistant {
				p.view.results = append(p.view.results, toolNames[m.ToolCallID])
				all = append(all, text)
			}
		default:
			return nil, badRequest("messages.%d.role: %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
	}
	p.view.system = strings.Join(system, "\n")
	p.view.userText = strings.Join(texts, "\n")
	p.view.userAll = strings.Join(all, "\n")
	return p, nil
}

// chatText flattens message content: a string or a list of parts with text.
func chatText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	status, msg := 0, ""
	var p *parsed
	if err != nil {
		status, msg = http.StatusRequestEntityTooLarge, err.Error()
	} else if p, err = parseOpenAI(body); err != nil {
		status, msg = errStatus(err), err.Error()
	}
	d := s.decide(apiOpenAI, r, body, p, status, msg)
	w.Header().Set("x-request-id", fmt.Sprintf("req_scripted_%04d", d.rec.N))
	if p == nil {
		writeOpenAIError(w, status, msg)
		return
	}
	if f := d.fault; f != nil && f.Status != 0 {
		setRetryHeaders(w, f)
		writeOpenAIError(w, f.Status, d.rec.Error)
		return
	}
	rep, err := buildReply(d.rec.N, p.view.model, d.rule, replyEnv{search: p.view.searchTool, chat: true})
	if err != nil {
		writeOpenAIError(w, http.StatusInternalServerError, "scripted: "+err.Error())
		return
	}
	created := s.now().Unix()
	if p.stream {
		writeSSE(r.Context(), w, chatChunks(rep, d.rec.Cache, created, p.includeUsage), d.fault)
		return
	}
	if err := pace(r.Context(), w, d.fault, 0); err != nil {
		return
	}
	finish(w, d.fault)
	writeJSON(w, http.StatusOK, chatCompletion(rep, d.rec.Cache, created))
}

func writeOpenAIError(w http.ResponseWriter, status int, msg string) {
	typ, code := "server_error", ""
	switch status {
	case 400:
		typ = "invalid_request_error"
	case 401:
		typ, code = "invalid_request_error", "invalid_api_key"
	case 404:
		typ = "invalid_request_error"
	case 429:
		typ, code = "requests", "rate_limit_exceeded"
	case 529:
		code = "overloaded"
	}
	type errBody struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	var c *string
	if code != "" {
		c = &code
	}
	writeJSON(w, status, struct {
		Error errBody `json:"error"`
	}{errBody{msg, typ, nil, c}})
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func chatUsageOf(acc CacheAccount, output int) *chatUsage {
	u := &chatUsage{PromptTokens: acc.InputTokens, CompletionTokens: output, TotalTokens: acc.InputTokens + output}
	u.PromptTokensDetails.CachedTokens = acc.CacheReadTokens
	return u
}

func finishReason(stop string) string {
	switch stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

func callID(toolUseID string) string { return strings.Replace(toolUseID, "toolu_", "call_", 1) }

type chatChoiceMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

func chatCompletion(rep *reply, acc CacheAccount, created int64) any {
	msg := chatChoiceMessage{Role: "assistant"}
	var text, thinking strings.Builder
	for _, b := range rep.blocks {
		switch b.kind {
		case KindText:
			text.WriteString(b.text)
		case KindThinking:
			thinking.WriteString(b.text)
		case KindToolUse:
			msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: callID(b.id), Type: "function",
				Function: chatFunction{Name: b.name, Arguments: string(b.input)}})
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	msg.ReasoningContent = thinking.String()
	type choice struct {
		Index        int               `json:"index"`
		Message      chatChoiceMessage `json:"message"`
		FinishReason string            `json:"finish_reason"`
	}
	return struct {
		ID      string     `json:"id"`
		Object  string     `json:"object"`
		Created int64      `json:"created"`
		Model   string     `json:"model"`
		Choices []choice   `json:"choices"`
		Usage   *chatUsage `json:"usage"`
	}{chatID(rep), "chat.completion", created, rep.model,
		[]choice{{0, msg, finishReason(rep.stopReason)}}, chatUsageOf(acc, rep.outputTokens)}
}

func chatID(rep *reply) string {
	return strings.Replace(rep.id, "msg_scripted_", "chatcmpl-scripted-", 1)
}

// chatChunks is the chat-completions stream of rep: a role chunk, content / reasoning /
// tool-call fragments, a chunk with finish_reason, with includeUsage a usage chunk with no
// choices, and [DONE].
func chatChunks(rep *reply, acc CacheAccount, created int64, includeUsage bool) []sseEvent {
	type delta struct {
		Role             string         `json:"role,omitempty"`
		Content          *string        `json:"content,omitempty"`
		ReasoningContent string         `json:"reasoning_content,omitempty"`
		ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	}
	type chunk struct {
		ID      string     `json:"id"`
		Object  string     `json:"object"`
		Created int64      `json:"created"`
		Model   string     `json:"model"`
		Choices []choice   `json:"choices"`
		Usage   *chatUsage `json:"usage,omitempty"`
	}
	id := chatID(rep)
	var evs []sseEvent
	add := func(c []choice, u *chatUsage) {
		evs = append(evs, event("", chunk{id, "chat.completion.chunk", created, rep.model, c, u}))
	}
	one := func(d delta) { add([]choice{{Delta: d}}, nil) }
	empty := ""
	one(delta{Role: "assistant", Content: &empty})
	tools := 0
	for _, b := range rep.blocks {
		switch b.kind {
		case KindText:
			for _, c := range chunks(b.text, textChunk) {
				one(delta{Content: &c})
			}
		case KindThinking:
			for _, c := range chunks(b.text, textChunk) {
				one(delta{ReasoningContent: c})
			}
		case KindToolUse:
			idx := tools
			tools++
			one(delta{ToolCalls: []chatToolCall{{Index: &idx, ID: callID(b.id), Type: "function",
				Function: chatFunction{Name: b.name}}}})
			for _, c := range chunks(string(b.input), inputChunk) {
				one(delta{ToolCalls: []chatToolCall{{Index: &idx, Function: chatFunction{Arguments: c}}}})
			}
		}
	}
	fr := finishReason(rep.stopReason)
	add([]choice{{Delta: delta{}, FinishReason: &fr}}, nil)
	if includeUsage {
		add([]choice{}, chatUsageOf(acc, rep.outputTokens))
	}
	evs = append(evs, sseEvent{data: []byte("[DONE]")})
	return evs
}
