package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/waittest"
)

// sdkSide reads what keel writes and plays the SDK's answers, as the SDK's transport does.
type sdkSide struct {
	lines chan map[string]any
}

func newPair(t *testing.T) (*controller, *sdkSide) {
	t.Helper()
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close() })
	wr := &writer{w: w}
	c := &controller{w: wr, out: newOutbox(wr), logger: slog.New(slog.DiscardHandler), handlers: map[string]context.CancelFunc{}}
	s := &sdkSide{lines: make(chan map[string]any, 16)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				s.lines <- m
			}
		}
	}()
	return c, s
}

func (s *sdkSide) next(t *testing.T) map[string]any {
	t.Helper()
	return waittest.Recv(t, "a line from keel", s.lines)
}

func TestElicit(t *testing.T) {
	c, sdk := newPair(t)
	type answer struct {
		res *mcp.ElicitResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.elicit(t.Context(), "github", &mcp.ElicitParams{Message: "Which repository?", Mode: "form",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}}})
		done <- answer{res, err}
	}()
	req := sdk.next(t)
	body, _ := req["request"].(map[string]any)
	want := map[string]any{"subtype": "elicitation", "mcp_server_name": "github", "message": "Which repository?", "mode": "form",
		"requested_schema": map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}}}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Fatalf("elicitation request mismatch (-want +got):\n%s", diff)
	}
	c.out.deliver(responseBody{Subtype: "success", RequestID: req["request_id"].(string),
		Response: json.RawMessage(`{"action":"accept","content":{"repo":"keel-dev/keel"}}`)})
	got := waittest.Recv(t, "the elicitation answer", done)
	if got.err != nil || got.res.Action != "accept" || got.res.Content["repo"] != "keel-dev/keel" {
		t.Errorf("answer = %+v, %v", got.res, got.err)
	}

	// An SDK without onElicitation declines; an answer of the wrong shape is an error.
	go func() {
		res, err := c.elicit(t.Context(), "github", &mcp.ElicitParams{Message: "again"})
		done <- answer{res, err}
	}()
	req = sdk.next(t)
	c.out.deliver(responseBody{Subtype: "success", RequestID: req["request_id"].(string), Response: json.RawMessage(`{"action":"maybe"}`)})
	if got := waittest.Recv(t, "the second answer", done); got.err == nil || !strings.Contains(got.err.Error(), `action "maybe"`) {
		t.Errorf("a bad action was accepted: %+v %v", got.res, got.err)
	}
}

func TestOutbox(t *testing.T) {
	c, sdk := newPair(t)
	var unknown []string
	c.out.onUnknown = func(id string) { unknown = append(unknown, id) }

	// A scripted program answers ahead of time: the id is known because ids are sequential.
	c.out.deliver(responseBody{Subtype: "success", RequestID: "keel_req_1", Response: json.RawMessage(`{"ok":1}`)})
	resp, err := c.out.request(t.Context(), map[string]any{"subtype": "hook_callback"})
	if err != nil || string(resp) != `{"ok":1}` {
		t.Fatalf("early answer: %s %v", resp, err)
	}
	sdk.next(t)

	// An error response is an error; a response to no request is reported.
	done := make(chan error, 1)
	go func() { _, err := c.out.request(t.Context(), map[string]any{"subtype": "hook_callback"}); done <- err }()
	req := sdk.next(t)
	c.out.deliver(responseBody{Subtype: "success", RequestID: "nobody"})
	c.out.deliver(responseBody{Subtype: "error", RequestID: req["request_id"].(string), Error: "callback threw"})
	if err := waittest.Recv(t, "the error answer", done); err == nil || err.Error() != "callback threw" {
		t.Errorf("err = %v", err)
	}
	if diff := cmp.Diff([]string{"nobody"}, unknown); diff != "" {
		t.Errorf("unknown ids mismatch (-want +got):\n%s", diff)
	}

	// A request whose context ends is withdrawn with a control_cancel_request.
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() { _, err := c.out.request(ctx, map[string]any{"subtype": "can_use_tool"}); done <- err }()
	req = sdk.next(t)
	cancel(errors.New("interrupted"))
	if err := waittest.Recv(t, "the cancelled request", done); err == nil || err.Error() != "interrupted" {
		t.Errorf("err = %v, want the context's cause", err)
	}
	if cr := sdk.next(t); cr["type"] != "control_cancel_request" || cr["request_id"] != req["request_id"] {
		t.Errorf("after cancelling: %v", cr)
	}

	// After stdin closed, pending requests fail at once and new ones are not sent.
	go func() { _, err := c.out.request(t.Context(), map[string]any{"subtype": "hook_callback"}); done <- err }()
	sdk.next(t)
	if !c.out.close() {
		t.Error("close reported no pending request")
	}
	if err := waittest.Recv(t, "the pending request", done); !errors.Is(err, errSDKGone) {
		t.Errorf("pending: %v", err)
	}
	if _, err := c.out.request(t.Context(), map[string]any{"subtype": "hook_callback"}); !errors.Is(err, errSDKGone) {
		t.Errorf("after close: %v", err)
	}
}

func TestParseInit(t *testing.T) {
	init, err := parseInit(json.RawMessage(`{"subtype":"initialize","systemPrompt":[""],"appendSystemPrompt":"more",
		"hooks":{"Stop":[{"hookCallbackIds":["hook_1"]}],"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["hook_0"],"timeout":5}]},
		"sdkMcpServers":["probe"],"jsonSchema":{"type":"object"},"agents":{"a":{"description":"d","prompt":"p"}},
		"title":"x","promptSuggestions":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if init.SystemPrompt == nil || *init.SystemPrompt != MinimalSystemPrompt || init.AppendSystemPrompt != "more" {
		t.Errorf("system prompt = %v %q", init.SystemPrompt, init.AppendSystemPrompt)
	}
	if len(init.Hooks) != 2 || init.Hooks[0].Event != "PreToolUse" || init.Hooks[0].Matcher != "Bash" || init.Hooks[0].Timeout != 5 || init.Hooks[1].IDs[0] != "hook_1" {
		t.Errorf("hooks = %+v", init.Hooks)
	}
	if diff := cmp.Diff([]string{"title"}, init.Ignored); diff != "" {
		t.Errorf("ignored mismatch (-want +got):\n%s", diff)
	}
	preset, err := parseInit(json.RawMessage(`{"subtype":"initialize","appendSystemPrompt":"x"}`))
	if err != nil || preset.SystemPrompt != nil {
		t.Errorf("the preset (no systemPrompt) replaced keel's prompt: %v %v", preset.SystemPrompt, err)
	}
	for _, bad := range []string{`{"systemPrompt":5}`, `{"agents":[1]}`, `{"jsonSchema":"x"}`, `[]`} {
		if _, err := parseInit(json.RawMessage(bad)); err == nil {
			t.Errorf("parseInit(%s) accepted it", bad)
		}
	}
}

// TestSessionEndAfterStdin: once stdin has ended, a SessionEnd callback is still sent to the
// SDK (which reads stdout until keel exits and runs it) and nothing waits for its answer;
// any other callback then fails at once, as no answer can come.
func TestSessionEndAfterStdin(t *testing.T) {
	c, sdk := newPair(t)
	c.out.close()
	out, err := c.callHook(waittest.Context(t), "hook_7", json.RawMessage(`{"hook_event_name":"SessionEnd","reason":"other"}`), "")
	if err != nil || string(out) != "{}" {
		t.Fatalf("SessionEnd callback = %s, %v; want {} at once", out, err)
	}
	req := sdk.next(t)
	inner, _ := req["request"].(map[string]any)
	if req["type"] != "control_request" || inner["subtype"] != "hook_callback" || inner["callback_id"] != "hook_7" {
		t.Errorf("sent %v, want the hook_callback request", req)
	}
	if _, err := c.callHook(waittest.Context(t), "hook_8", json.RawMessage(`{"hook_event_name":"Stop"}`), ""); !errors.Is(err, errSDKGone) {
		t.Errorf("Stop callback after stdin ended = %v, want errSDKGone", err)
	}
}
