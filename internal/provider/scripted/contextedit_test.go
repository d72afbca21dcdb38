package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// postBeta sends body to /v1/messages with the given anthropic-beta header ("" for none).
func postBeta(t *testing.T, s *Server, beta string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/v1/messages", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", "2023-06-01")
	if beta != "" {
		req.Header.Set("anthropic-beta", beta)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// readConvo is a conversation of n Reads: each tool_use asks for file i, each tool_result
// holds size bytes. The last message is the n-th result; the result of read k carries a
// cache breakpoint when k is in marks.
func readConvo(n, size int, marks ...int) []any {
	out := []any{user("read the files")}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("toolu_%02d", i)
		out = append(out, assistant([]any{map[string]any{"type": "tool_use", "id": id, "name": "Read",
			"input": map[string]any{"file_path": fmt.Sprintf("f%02d.go", i)}}}))
		res := map[string]any{"type": "tool_result", "tool_use_id": id,
			"content": fmt.Sprintf("MARK-%02d ", i) + strings.Repeat("x", size)}
		for _, m := range marks {
			if m == i {
				res["cache_control"] = map[string]any{"type": "ephemeral"}
			}
		}
		out = append(out, user([]any{res}))
	}
	return out
}

// clearing is a context_management object with one clear_tool_uses edit of the given fields.
func clearing(fields map[string]any) map[string]any {
	edit := map[string]any{"type": ClearToolUsesEdit}
	for k, v := range fields {
		edit[k] = v
	}
	return map[string]any{"edits": []any{edit}}
}

func tv(typ string, v int) map[string]any { return map[string]any{"type": typ, "value": v} }

func TestContextEditingRefusesWhatTheAPIRefuses(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	convo := readConvo(2, 100)
	cases := []struct {
		name, beta string
		cm         any
		want       string
	}{
		{"no beta header", "", clearing(nil), "context_management: Extra inputs are not permitted"},
		{"another beta only", "files-api-2025-04-14", clearing(nil), "anthropic-beta header " + ContextManagementBeta},
		{"unknown edit field", ContextManagementBeta, clearing(map[string]any{"keep_last": 2}), "keep_last: Extra inputs are not permitted"},
		{"unknown top-level field", ContextManagementBeta, map[string]any{"edits": []any{}, "mode": "auto"}, "mode: Extra inputs are not permitted"},
		{"unknown edit type", ContextManagementBeta, map[string]any{"edits": []any{map[string]any{"type": "clear_all"}}}, "edits.0.type: Input should be"},
		{"edit given twice", ContextManagementBeta, map[string]any{"edits": []any{map[string]any{"type": ClearToolUsesEdit}, map[string]any{"type": ClearToolUsesEdit}}}, "edits.1: each edit type may be given only once"},
		{"trigger type", ContextManagementBeta, clearing(map[string]any{"trigger": tv("messages", 3)}), "trigger.type: Input should be 'input_tokens' or 'tool_uses'"},
		{"trigger zero", ContextManagementBeta, clearing(map[string]any{"trigger": tv("input_tokens", 0)}), "trigger.value: Input should be greater than or equal to 1"},
		{"keep type", ContextManagementBeta, clearing(map[string]any{"keep": tv("input_tokens", 3)}), "keep.type: Input should be 'tool_uses'"},
		{"keep negative", ContextManagementBeta, clearing(map[string]any{"keep": tv("tool_uses", -1)}), "keep.value: Input should be greater than or equal to 0"},
		{"keep without value", ContextManagementBeta, clearing(map[string]any{"keep": map[string]any{"type": "tool_uses"}}), "keep.value: Field required"},
		{"clear_at_least type", ContextManagementBeta, clearing(map[string]any{"clear_at_least": tv("tool_uses", 3)}), "clear_at_least.type: Input should be 'input_tokens'"},
		{"clear_tool_inputs type", ContextManagementBeta, clearing(map[string]any{"clear_tool_inputs": "yes"}), "clear_tool_inputs: Input should be a valid boolean or a list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := msgs(false, []any{tool("Read")}, convo...)
			body["context_management"] = c.cm
			status, out := postBeta(t, s, c.beta, body)
			if status != http.StatusBadRequest || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "invalid_request_error") {
				t.Errorf("status %d, body %s; want 400 invalid_request_error naming %q", status, out, c.want)
			}
		})
	}
	// The beta among others, in one comma-separated header, is accepted.
	body := msgs(false, []any{tool("Read")}, convo...)
	body["context_management"] = clearing(nil)
	if status, out := postBeta(t, s, "files-api-2025-04-14, "+ContextManagementBeta, body); status != http.StatusOK {
		t.Errorf("beta in a list: status %d: %s", status, out)
	}
}

// editedTokens is what the scripted model counts for the prompt of body with its results
// cleared by hand: the request without context_management, the results' content replaced.
func editedTokens(t *testing.T, body map[string]any, cleared ...int) int {
	t.Helper()
	plain := map[string]any{}
	for k, v := range body {
		plain[k] = v
	}
	delete(plain, "context_management")
	var messages []any
	for i, m := range body["messages"].([]any) {
		msg := m.(map[string]any)
		for _, c := range cleared {
			if i == 2*c { // the user message holding the result of read c
				res := msg["content"].([]any)[0].(map[string]any)
				res2 := map[string]any{}
				for k, v := range res {
					res2[k] = v
				}
				res2["content"] = ClearedToolResult
				msg = user([]any{res2})
			}
		}
		messages = append(messages, msg)
	}
	plain["messages"] = messages
	b, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseAnthropic(b, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.inputTokens()
}

func TestContextEditingClearsOldToolResults(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{
		{Name: "sees-3", When: Match{History: "MARK-03"}, Reply: []Block{Text("result 3 is still there")}},
		{Name: "no-3", Reply: []Block{Text("result 3 is gone")}},
	}}, Options{})
	body := msgs(false, []any{tool("Read")}, readConvo(5, 2000)...)
	full := editedTokens(t, body)
	body["context_management"] = clearing(map[string]any{"trigger": tv("input_tokens", 1000), "keep": tv("tool_uses", 2)})
	status, out := postBeta(t, s, ContextManagementBeta, body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, out)
	}
	edited := editedTokens(t, body, 1, 2, 3)
	var resp struct {
		ContextManagement struct {
			AppliedEdits []AppliedEdit `json:"applied_edits"`
		} `json:"context_management"`
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	want := []AppliedEdit{{Type: ClearToolUsesEdit, ClearedToolUses: 3, ClearedInputTokens: full - edited}}
	if diff := cmp.Diff(want, resp.ContextManagement.AppliedEdits); diff != "" {
		t.Errorf("applied_edits (-want +got):\n%s", diff)
	}
	if want[0].ClearedInputTokens < 3*400 {
		t.Errorf("cleared %d tokens; three results of 2,000 bytes are ~1,500", want[0].ClearedInputTokens)
	}
	// The model sees the edited prompt: result 3 is gone, and the accounting is of what it saw.
	if len(resp.Content) != 1 || resp.Content[0].Text != "result 3 is gone" {
		t.Errorf("reply %+v: the rules should match the edited history", resp.Content)
	}
	rec := s.Requests()[len(s.Requests())-1]
	if rec.Cache.InputTokens != edited {
		t.Errorf("accounted %d input tokens, want the edited prompt's %d (unedited %d)", rec.Cache.InputTokens, edited, full)
	}
	if diff := cmp.Diff(want, rec.AppliedEdits); diff != "" {
		t.Errorf("recorded applied edits (-want +got):\n%s", diff)
	}

	// Streaming: the same in message_delta.
	body["stream"] = true
	status, out = postBeta(t, s, ContextManagementBeta, body)
	if status != http.StatusOK {
		t.Fatalf("stream: status %d: %s", status, out)
	}
	var delta string
	for _, ev := range parseSSE(t, out) {
		if ev.Event == "message_delta" {
			delta = ev.Data
		}
	}
	wantJSON := fmt.Sprintf(`"context_management":{"applied_edits":[{"type":"clear_tool_uses_20250919","cleared_tool_uses":3,"cleared_input_tokens":%d}]}`, full-edited)
	if !strings.Contains(delta, wantJSON) {
		t.Errorf("message_delta %s\nwant it to hold %s", delta, wantJSON)
	}
}

func TestContextEditingTriggerKeepAndClearAtLeast(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	cases := []struct {
		name   string
		fields map[string]any
		// cleared is the reads whose results are cleared; nil means no edit applied.
		cleared []int
	}{
		{"defaults: below 100,000 tokens", nil, nil},
		{"below the trigger", map[string]any{"trigger": tv("input_tokens", 100_000), "keep": tv("tool_uses", 1)}, nil},
		{"tool_uses trigger reached", map[string]any{"trigger": tv("tool_uses", 3), "keep": tv("tool_uses", 1)}, []int{1, 2, 3}},
		{"tool_uses trigger not reached", map[string]any{"trigger": tv("tool_uses", 4)}, nil},
		{"default keep is 3", map[string]any{"trigger": tv("input_tokens", 1000)}, []int{1}},
		{"keep 0 clears the newest too", map[string]any{"trigger": tv("input_tokens", 1000), "keep": tv("tool_uses", 0)}, []int{1, 2, 3, 4}},
		{"keep covers every use", map[string]any{"trigger": tv("input_tokens", 1000), "keep": tv("tool_uses", 4)}, nil},
		{"excluded tools stay", map[string]any{"trigger": tv("input_tokens", 1000), "keep": tv("tool_uses", 1), "exclude_tools": []string{"Read"}}, nil},
		{"clear_at_least met", map[string]any{"trigger": tv("input_tokens", 1000), "keep": tv("tool_uses", 2), "clear_at_least": tv("input_tokens", 900)}, []int{1, 2}},
		{"clear_at_least not met", map[string]any{"trigger": tv("input_tokens", 1000), "keep": tv("tool_uses", 2), "clear_at_least": tv("input_tokens", 5000)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := msgs(false, []any{tool("Read")}, readConvo(4, 2000)...)
			full := editedTokens(t, body)
			body["context_management"] = clearing(c.fields)
			status, out := postBeta(t, s, ContextManagementBeta, body)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, out)
			}
			rec := s.Requests()[len(s.Requests())-1]
			want := []AppliedEdit{}
			if c.cleared != nil {
				want = append(want, AppliedEdit{Type: ClearToolUsesEdit, ClearedToolUses: len(c.cleared),
					ClearedInputTokens: full - editedTokens(t, body, c.cleared...)})
			}
			if diff := cmp.Diff(want, rec.AppliedEdits); diff != "" {
				t.Errorf("applied edits (-want +got):\n%s", diff)
			}
			if got, wantIn := rec.Cache.InputTokens, editedTokens(t, body, c.cleared...); got != wantIn {
				t.Errorf("input %d, want %d", got, wantIn)
			}
			if !strings.Contains(string(out), `"context_management":{"applied_edits":[`) {
				t.Errorf("response lacks context_management: %s", out)
			}
		})
	}
}

func TestContextEditingClearsToolInputs(t *testing.T) {
	convo := readConvo(3, 10)
	for _, v := range []any{true, []string{"Read"}} {
		s := start(t, &Scenario{}, Options{})
		body := msgs(false, []any{tool("Read")}, convo...)
		body["context_management"] = clearing(map[string]any{"trigger": tv("tool_uses", 1), "keep": tv("tool_uses", 1), "clear_tool_inputs": v})
		if status, out := postBeta(t, s, ContextManagementBeta, body); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, out)
		}
		rec := s.Requests()[0]
		// Two inputs {"file_path":"f0N.go"} become {}: 5 tokens less each, the tiny results
		// replaced by the longer placeholder notwithstanding.
		onlyResults := editedTokens(t, body, 1, 2)
		if rec.Cache.InputTokens >= onlyResults {
			t.Errorf("clear_tool_inputs %v: input %d, want below %d (results cleared, inputs kept)", v, rec.Cache.InputTokens, onlyResults)
		}
	}
}

// TestContextEditingAndThePromptCache follows a session whose client marks, on each request,
// the newest result the edit clears: the next request, which clears one more, reads the cache
// up to that mark and writes from there — the edit is applied before the cache is consulted.
func TestContextEditingAndThePromptCache(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	cm := clearing(map[string]any{"trigger": tv("input_tokens", 1000), "keep": tv("tool_uses", 2)})
	system := "You are keel. " + strings.Repeat("Be brief. ", 500) // past the 1,024 tokens a cache entry needs
	send := func(n int) Recorded {
		t.Helper()
		convo := readConvo(n, 2000, n-2)
		last := convo[len(convo)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
		last["cache_control"] = map[string]any{"type": "ephemeral"}
		body := msgs(false, []any{tool("Read")}, convo...)
		body["system"] = system
		body["context_management"] = cm
		if status, out := postBeta(t, s, ContextManagementBeta, body); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, out)
		}
		return s.Requests()[len(s.Requests())-1]
	}
	first := send(5)
	if first.Cache.CacheReadTokens != 0 || first.Cache.CacheCreationTokens != first.Cache.InputTokens {
		t.Fatalf("first request %+v: want everything written", first.Cache)
	}
	second := send(6)
	// Identical to the first request up to and including the cleared result 3 (the first
	// request's mark): blocks up to message 6 of the conversation.
	prefix := map[string]any{"model": "claude-test", "max_tokens": 1024, "system": system, "tools": []any{tool("Read")}}
	convo := readConvo(6, 2000)[:7]
	prefix["messages"] = convo
	want := editedTokens(t, prefix, 1, 2, 3)
	if second.Cache.CacheReadTokens != want {
		t.Errorf("second request read %d tokens, want %d: the edited prefix up to the first request's mark", second.Cache.CacheReadTokens, want)
	}
	if second.Cache.CacheReadTokens+second.Cache.CacheCreationTokens != second.Cache.InputTokens {
		t.Errorf("second request %+v: want the rest written", second.Cache)
	}
	if second.AppliedEdits[0].ClearedToolUses != 4 {
		t.Errorf("second request cleared %d tool uses, want 4: the server keeps no state, it clears the whole history again", second.AppliedEdits[0].ClearedToolUses)
	}
}

func TestNoContextManagementNoField(t *testing.T) {
	s := start(t, &Scenario{}, Options{})
	status, out := postBeta(t, s, ContextManagementBeta, msgs(false, []any{tool("Read")}, readConvo(2, 10)...))
	if status != http.StatusOK || strings.Contains(string(out), "context_management") {
		t.Errorf("status %d, body %s: a request without context_management gets none back", status, out)
	}
	if rec := s.Requests()[0]; rec.AppliedEdits != nil {
		t.Errorf("recorded %v, want nil", rec.AppliedEdits)
	}
}

// thinkingConvo is n turns, each an assistant message with a thinking block THINK-i and a
// Read, answered.
func thinkingConvo(n int) []any {
	out := []any{user("read the files")}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("toolu_%02d", i)
		think := fmt.Sprintf("THINK-%d ", i) + strings.Repeat("t", 400)
		out = append(out,
			assistant([]any{
				map[string]any{"type": "thinking", "thinking": think, "signature": thinkingSignature(i, 0, think)},
				map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": "f.go"}},
			}),
			user([]any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}}))
	}
	return out
}

// The thinking edit (which Claude Code sends with every request) keeps the thinking of the
// newest keep turns that have any, one by default, and drops the older turns' from the
// prompt the model sees and the cache accounts; "all" keeps every one; it must come before
// the tool-use edit.
func TestContextEditingClearsOldThinking(t *testing.T) {
	s := start(t, &Scenario{Rules: []Rule{{Name: "any", Reply: []Block{Text("ok")}}}}, Options{})
	send := func(edits ...any) (int, []AppliedEdit) {
		t.Helper()
		body := msgs(false, []any{tool("Read")}, thinkingConvo(3)...)
		body["context_management"] = map[string]any{"edits": edits}
		if status, out := postBeta(t, s, ContextManagementBeta, body); status != http.StatusOK {
			t.Fatalf("status %d: %s", status, out)
		}
		rec := s.Requests()[len(s.Requests())-1]
		return rec.Cache.InputTokens, rec.AppliedEdits
	}
	full, applied := send(map[string]any{"type": ClearThinkingEdit, "keep": "all"})
	if len(applied) != 0 {
		t.Errorf(`keep "all": applied %+v, want nothing cleared`, applied)
	}
	one, applied := send(map[string]any{"type": ClearThinkingEdit})
	if len(applied) != 1 || applied[0].Type != ClearThinkingEdit || applied[0].ClearedThinkingTurns != 2 ||
		applied[0].ClearedInputTokens != full-one || full-one < 2*100 {
		t.Errorf("default keep: applied %+v, %d of %d tokens left; want turns 1 and 2 cleared", applied, one, full)
	}
	two, applied := send(map[string]any{"type": ClearThinkingEdit, "keep": tv("thinking_turns", 2)})
	if len(applied) != 1 || applied[0].ClearedThinkingTurns != 1 || applied[0].ClearedInputTokens != full-two || two <= one {
		t.Errorf("keep 2: applied %+v, %d tokens left (keep 1: %d); want turn 1 cleared", applied, two, one)
	}
	body := msgs(false, []any{tool("Read")}, thinkingConvo(3)...)
	body["context_management"] = map[string]any{"edits": []any{clearing(nil)["edits"].([]any)[0], map[string]any{"type": ClearThinkingEdit}}}
	if status, out := postBeta(t, s, ContextManagementBeta, body); status != http.StatusBadRequest {
		t.Errorf("the thinking edit after the tool-use edit: status %d %s, want 400", status, out)
	}
}
