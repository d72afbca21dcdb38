package scripted

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func chat(stream bool, messages ...any) map[string]any {
	body := map[string]any{
		"model":    "gpt-test",
		"messages": messages,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "Read", "parameters": map[string]any{"type": "object"}}}},
	}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	return body
}

func TestOpenAIStream(t *testing.T) {
	s := start(t, replyScenario(), Options{})
	resp, body := post(t, s, "/v1/chat/completions", chat(true,
		map[string]any{"role": "system", "content": "You are keel."},
		map[string]any{"role": "user", "content": "fix the test"}))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	evs := parseSSE(t, body)
	if last := evs[len(evs)-1].Data; last != "[DONE]" {
		t.Fatalf("stream ends with %q, want [DONE]", last)
	}
	type call struct{ ID, Name, Args string }
	var (
		content, reasoning strings.Builder
		calls              []call
		finish             string
		usage              json.RawMessage
	)
	for _, ev := range evs[:len(evs)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role             string  `json:"role"`
					Content          *string `json:"content"`
					ReasoningContent string  `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			t.Fatalf("chunk %s: %v", ev.Data, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object = %q", c.Object)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 {
				t.Errorf("usage chunk has choices: %s", ev.Data)
			}
			usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			reasoning.WriteString(ch.Delta.ReasoningContent)
			for _, tc := range ch.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, call{})
				}
				if tc.ID != "" {
					calls[tc.Index].ID = tc.ID
				}
				calls[tc.Index].Name += tc.Function.Name
				calls[tc.Index].Args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if got := content.String(); got != "Let me read calc.go first." {
		t.Errorf("content = %q", got)
	}
	if got := reasoning.String(); got != "I should read the file before changing it." {
		t.Errorf("reasoning = %q", got)
	}
	wantCalls := []call{{"call_scripted_0001_0", "Read", `{"file_path":"calc.go","limit":20}`}}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
	if finish != "tool_calls" {
		t.Errorf("finish_reason = %q", finish)
	}
	if n := strings.Count(string(body), `"arguments"`); n < 3 {
		t.Errorf("arguments came in %d chunks, want several", n)
	}
	rec := s.Requests()[0]
	want := `{"prompt_tokens":` + itoa(rec.Cache.InputTokens) + `,"completion_tokens":28,"total_tokens":` +
		itoa(rec.Cache.InputTokens+28) + `,"prompt_tokens_details":{"cached_tokens":0}}`
	if string(usage) != want {
		t.Errorf("usage mismatch (-want +got):\n%s", cmp.Diff(want, string(usage)))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestOpenAINonStreamingAndCache(t *testing.T) {
	s := start(t, replyScenario(), Options{})
	long := strings.Repeat("All work and no play. ", 250) // well past 1024 tokens
	first := []any{
		map[string]any{"role": "system", "content": long},
		map[string]any{"role": "user", "content": "fix the test"},
	}
	resp, body := post(t, s, "/v1/chat/completions", chat(false, first...))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got struct {
		ID      string `json:"id"`
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	c := got.Choices[0]
	if got.ID != "chatcmpl-scripted-0001" || c.FinishReason != "tool_calls" || c.Message.ToolCalls[0].Function.Name != "Read" ||
		c.Message.Content == nil || *c.Message.Content != "Let me read calc.go first." {
		t.Errorf("unexpected completion: %s", body)
	}
	if got.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("first request cached_tokens = %d, want 0", got.Usage.PromptTokensDetails.CachedTokens)
	}

	// The second turn shares the first request's whole prompt: automatic caching reads it.
	second := append(first,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_scripted_0001_0", "type": "function",
			"function": map[string]any{"name": "Read", "arguments": `{"file_path":"calc.go"}`}}}},
		map[string]any{"role": "tool", "tool_call_id": "call_scripted_0001_0", "content": "package calc"},
	)
	_, body = post(t, s, "/v1/chat/completions", chat(false, second...))
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	recs := s.Requests()
	if got.Usage.PromptTokensDetails.CachedTokens != recs[0].Cache.InputTokens || recs[1].Cache.SharedPrefixTokens != recs[0].Cache.InputTokens {
		t.Errorf("second request cached_tokens = %d, shared %d, want the first prompt's %d tokens",
			got.Usage.PromptTokensDetails.CachedTokens, recs[1].Cache.SharedPrefixTokens, recs[0].Cache.InputTokens)
	}
}
