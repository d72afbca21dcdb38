package hooks

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/settings"
)

func TestElicitationHookAnswers(t *testing.T) {
	e := newEnv(t)
	accept := e.script("accept.sh", `cat > input.json; echo '{"hookSpecificOutput":{"hookEventName":"Elicitation","action":"accept","content":{"name":"Ada"}}}'`)
	refuse := e.script("refuse.sh", `echo "not this server" >&2; exit 2`)
	r := e.runner(userHook("Elicitation", "github", 0, accept), userHook("Elicitation", "other", 0, refuse))
	in := Input{MCPServerName: "github", Message: "Who are you?", Mode: "form", RequestedSchema: json.RawMessage(`{"type":"object"}`)}
	out := r.Run(context.Background(), Elicitation, in)
	if out.Action != "accept" || string(out.Content) != `{"name":"Ada"}` {
		t.Fatalf("github: action %q content %s, want accept {\"name\":\"Ada\"}", out.Action, out.Content)
	}
	got := readJSON(t, e.dir+"/input.json")
	want := map[string]any{"hook_event_name": "Elicitation", "mcp_server_name": "github", "message": "Who are you?", "mode": "form",
		"requested_schema": map[string]any{"type": "object"}, "session_id": "", "transcript_path": "", "cwd": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("hook input mismatch (-want +got):\n%s", d)
	}
	out = r.Run(context.Background(), Elicitation, Input{MCPServerName: "other"})
	if out.Decision != DecisionBlock || !strings.Contains(out.Reason, "not this server") {
		t.Errorf("other: decision %v reason %q, want block with the hook's stderr", out.Decision, out.Reason)
	}
	out = r.Run(context.Background(), Elicitation, Input{MCPServerName: "nobody"})
	if out.Action != "" || out.Decision != DecisionNone {
		t.Errorf("no matching hook: action %q decision %v, want none", out.Action, out.Decision)
	}
}

func TestElicitationActionValidated(t *testing.T) {
	e := newEnv(t)
	bad := e.script("bad.sh", `echo '{"hookSpecificOutput":{"action":"maybe"}}'`)
	wrong := e.script("wrong.sh", `echo '{"hookSpecificOutput":{"action":"accept"}}'`)
	r := e.runner(userHook("Elicitation", "", 0, bad), userHook("PreToolUse", "", 0, wrong))
	out := r.Run(context.Background(), Elicitation, Input{MCPServerName: "s"})
	if out.Action != "" || !strings.Contains(out.Results[0].Warning, "not one of accept, decline, cancel") {
		t.Errorf("action maybe: got action %q warning %q", out.Action, out.Results[0].Warning)
	}
	out = r.Run(context.Background(), PreToolUse, editInput())
	if out.Action != "" || !strings.Contains(out.Results[0].Warning, "no effect on PreToolUse") {
		t.Errorf("action on PreToolUse: got action %q warning %q", out.Action, out.Results[0].Warning)
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func TestHas(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("x.sh", "true")
	r := e.runner(userHook("Elicitation", "github", 0, cmd))
	if !r.Has(Elicitation) || r.Has(ElicitationResult) {
		t.Errorf("Has(Elicitation)=%v Has(ElicitationResult)=%v, want true false", r.Has(Elicitation), r.Has(ElicitationResult))
	}
	untrusted, _ := New(Config{Hooks: []settings.HookGroup{hookFrom(settings.ScopeProject, "Elicitation", "", 0, cmd)}, ProjectDir: e.dir})
	if untrusted.Has(Elicitation) {
		t.Error("an untrusted project's hook counts as an answerer")
	}
}
