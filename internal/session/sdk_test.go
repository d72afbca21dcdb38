package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/waittest"
)

var answerSchema = json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}`)

func TestStructuredOutput(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "wrong", When: scripted.Match{UserText: "give the answer"}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("StructuredOutput", map[string]any{"answer": 42})}},
		{Name: "right", When: scripted.Match{ToolResult: "StructuredOutput", Contains: "answer"},
			Reply: []scripted.Block{scripted.ToolUse("StructuredOutput", map[string]any{"answer": "forty-two"})}},
	}}
	h := newHarness(t, sc, Options{SDK: SDKOptions{JSONSchema: answerSchema}})
	res := result(t, h.send(t, "give the answer"))
	if res.Subtype != "success" || string(res.StructuredOutput) != `{"answer":"forty-two"}` || res.Text != `{"answer":"forty-two"}` {
		t.Fatalf("result = %s %q structured %s, want the second, valid answer", res.Subtype, res.Text, res.StructuredOutput)
	}
	// The mismatch went back to the model; the valid answer ended the turn without another request.
	if n := len(h.srv.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2 (the wrong answer, the corrected one)", n)
	}
}

func TestStructuredOutputGivesUp(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "prose", Reply: []scripted.Block{scripted.Text("The answer is 42.")}},
	}}
	h := newHarness(t, sc, Options{SDK: SDKOptions{JSONSchema: answerSchema}})
	res := result(t, h.send(t, "give the answer"))
	if res.Subtype != "error_max_structured_output_retries" || !res.IsError {
		t.Fatalf("result = %s, want error_max_structured_output_retries", res.Subtype)
	}
	if n := len(h.srv.Requests()); n != maxStructuredRetries {
		t.Errorf("%d requests, want %d: each answer without the tool is one attempt", n, maxStructuredRetries)
	}
}

func TestAutoModeClassifier(t *testing.T) {
	classifier := func(command, verdict string) scripted.Rule {
		return scripted.Rule{When: scripted.Match{Model: "haiku", System: "permission classifier", UserText: command},
			Reply: []scripted.Block{scripted.Text(verdict)}}
	}
	call := func(word, command string) scripted.Rule {
		return scripted.Rule{When: scripted.Match{UserText: word}, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{"command": command})}}
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		classifier("touch safe.txt", `{"decision":"allow","reason":"creates a file the user asked for"}`),
		classifier("rm -rf data", `{"decision":"block","reason":"deletes the user's data"}`),
		classifier("touch unsure.txt", `{"decision":"unsure","reason":"cannot tell"}`),
		call("make safe", "touch safe.txt"), call("wipe", "rm -rf data"), call("maybe", "touch unsure.txt"),
		{When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	dir := t.TempDir()
	var asked []string
	asker := permission.AskerFunc(func(_ context.Context, r permission.AskRequest) (permission.Answer, error) {
		asked = append(asked, r.Request.Command)
		return permission.DenyAnswer("the user said no"), nil
	})
	h := newHarness(t, sc, Options{Cwd: dir, PermissionMode: "auto", Asker: asker})

	h.send(t, "make safe")
	if _, err := os.Stat(filepath.Join(dir, "safe.txt")); err != nil {
		t.Errorf("the classifier allowed touch safe.txt, but it did not run: %v", err)
	}
	res := result(t, h.send(t, "wipe"))
	if len(res.Denials) != 1 || !strings.Contains(res.Denials[0].Reason, "deletes the user's data") {
		t.Errorf("denials = %+v, want the classifier's block with its reason", res.Denials)
	}
	h.send(t, "maybe")
	if diff := cmp.Diff([]string{"touch unsure.txt"}, asked); diff != "" {
		t.Errorf("asked mismatch (-want +got): only the unsure call goes to the user\n%s", diff)
	}
	var classified int
	for _, r := range h.srv.Requests() {
		if strings.Contains(string(r.Body), "permission classifier") {
			classified++
			if !strings.Contains(string(r.Body), `"model":"claude-haiku`) {
				t.Errorf("the classifier did not use the haiku model: %.200s", r.Body)
			}
		}
	}
	if classified != 3 {
		t.Errorf("%d classifier requests, want 3", classified)
	}
}

func TestMaxBudget(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "go"}, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "a.txt"})}},
		{When: scripted.Match{ToolResult: "Read"}, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "a.txt"})}},
	}}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	h := newHarness(t, sc, Options{Cwd: dir, SDK: SDKOptions{MaxBudgetUSD: 0.000001}})
	res := result(t, h.send(t, "go"))
	// One request; its tool batch began the second turn, which Claude Code counts too.
	if res.Subtype != "error_max_budget_usd" || res.NumTurns != 2 {
		t.Errorf("result = %s after %d turns, want error_max_budget_usd after the first request (num_turns 2)", res.Subtype, res.NumTurns)
	}
}

func TestFallbackModel(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{Model: "claude-sonnet"}, Fault: &scripted.Fault{Status: 404, Message: "model: claude-sonnet-4-5 not found"}},
		{When: scripted.Match{Model: "claude-probe-fallback"}, Reply: []scripted.Block{scripted.Text("the fallback answered")}},
	}}
	h := newHarness(t, sc, Options{SDK: SDKOptions{FallbackModel: "claude-probe-fallback"}})
	events := h.send(t, "hi")
	if res := result(t, events); res.Subtype != "success" || res.Text != "the fallback answered" {
		t.Fatalf("result = %s %q, want the fallback model's answer", res.Subtype, res.Text)
	}
	if !slices.ContainsFunc(events, func(e event.Event) bool {
		n, ok := e.(event.Notice)
		return ok && strings.Contains(n.Text, "fallback model claude-probe-fallback")
	}) {
		t.Error("no notice says the fallback model answered")
	}
}

func TestThinkingOptions(t *testing.T) {
	yes, no := true, false
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{Thinking: &yes}, Reply: []scripted.Block{scripted.Text("thought")}},
		{When: scripted.Match{Thinking: &no}, Reply: []scripted.Block{scripted.Text("did not think")}},
	}}
	for _, tt := range []struct {
		name string
		o    SDKOptions
		want string
	}{
		{"effort", SDKOptions{Effort: "high"}, "thought"},
		{"budget", SDKOptions{MaxThinkingTokens: 4096}, "thought"},
		{"adaptive", SDKOptions{ThinkingMode: "adaptive"}, "thought"},
		{"disabled wins", SDKOptions{ThinkingMode: "disabled", Effort: "high"}, "did not think"},
		{"none", SDKOptions{}, "did not think"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, sc, Options{SDK: tt.o})
			if got := result(t, h.send(t, "hi")).Text; got != tt.want {
				t.Errorf("reply %q, want %q", got, tt.want)
			}
		})
	}
	h := newHarness(t, sc, Options{})
	h.sess.switches.SetMaxThinkingTokens(2048)
	if got := result(t, h.send(t, "hi")).Text; got != "thought" {
		t.Errorf("after SetMaxThinkingTokens: %q, want thought", got)
	}
}

func TestToolsAndDenyRulesNarrowThePool(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{
		SettingsFlags: settings.Flags{DisallowedTools: []string{"Bash", "Edit(src/**)"}},
		SDK:           SDKOptions{LimitTools: true, BuiltinTools: []string{"Read", "Bash", "Edit", "Task"}},
	})
	got := h.sess.ToolNames()
	// Bash is denied outright; Edit has only a narrow deny rule and stays; Task is the Agent tool.
	if diff := cmp.Diff([]string{"Read", "Edit", "Agent"}, got); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
	none := newHarness(t, &scripted.Scenario{}, Options{SDK: SDKOptions{LimitTools: true, BuiltinTools: []string{}}})
	if got := none.sess.ToolNames(); len(got) != 0 {
		t.Errorf("--tools \"\" still offers %v", got)
	}
}

func TestSettingSources(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "CLAUDE.md"), []byte("PROJECT-MEMORY-MARK\n"), 0o644)
	os.MkdirAll(filepath.Join(home, ".claude"), 0o755)
	os.WriteFile(filepath.Join(home, ".claude", "CLAUDE.md"), []byte("USER-MEMORY-MARK\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"permissions":{"deny":["Bash"]}}`), 0o644)
	for _, tt := range []struct {
		name    string
		sources []string
		want    []string // marks the system prompt holds
		bash    bool     // Bash offered (the project's deny rule not read)
	}{
		{"project", []string{"project"}, []string{"PROJECT-MEMORY-MARK"}, false},
		{"user", []string{"user"}, []string{"USER-MEMORY-MARK"}, true},
		{"none", []string{}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &scripted.Scenario{}, Options{Cwd: dir, SDK: SDKOptions{LimitSources: true, SettingSources: tt.sources}})
			h.send(t, "hi")
			body := string(h.srv.Requests()[0].Body)
			for _, mark := range []string{"PROJECT-MEMORY-MARK", "USER-MEMORY-MARK"} {
				if want := slices.Contains(tt.want, mark); strings.Contains(body, mark) != want {
					t.Errorf("request holds %s: %v, want %v", mark, !want, want)
				}
			}
			if got := slices.Contains(h.sess.ToolNames(), "Bash"); got != tt.bash {
				t.Errorf("Bash offered: %v, want %v", got, tt.bash)
			}
		})
	}
}

func TestResumeSessionAt(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "first"}, Reply: []scripted.Block{scripted.Text("ONE")}},
		{When: scripted.Match{UserText: "second"}, Reply: []scripted.Block{scripted.Text("TWO")}},
		{When: scripted.Match{UserText: "third", History: "TWO"}, Reply: []scripted.Block{scripted.Text("saw two")}},
		{When: scripted.Match{UserText: "third"}, Reply: []scripted.Block{scripted.Text("no two")}},
	}}
	home := t.TempDir()
	h := newHarness(t, sc, Options{Home: home})
	var at string
	for _, e := range h.send(t, "first") {
		if a, ok := e.(event.AssistantMessage); ok {
			at = a.UUID
		}
	}
	h.send(t, "second")
	id, cwd := h.sess.ID(), h.sess.Cwd()
	h.sess.Close()
	if at == "" {
		t.Fatal("the assistant event carries no uuid")
	}
	r := newHarness(t, sc, Options{Home: home, Cwd: cwd, Resume: id, SDK: SDKOptions{ResumeSessionAt: at}})
	if got := result(t, r.send(t, "third")).Text; got != "no two" {
		t.Errorf("reply %q: the history after the resume point was kept", got)
	}
}

func TestFileChangedHooks(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	log := filepath.Join(logDir, "changed.log")
	hooksJSON, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command",
			"command": `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","watchPaths":["watched.txt"]}}'`}}}},
		"FileChanged": []any{map[string]any{"matcher": "watched.txt", "hooks": []any{map[string]any{"type": "command",
			"command": "cat >> " + log + "; echo >> " + log}}}},
	}})
	h := newHarness(t, &scripted.Scenario{}, Options{Cwd: dir, SettingsArgs: []string{string(hooksJSON)}})
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("not watched"), 0o644)
	os.WriteFile(filepath.Join(dir, "watched.txt"), []byte("v1"), 0o644)
	waittest.Until(t, "a FileChanged hook for watched.txt", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), `"file_path":"`+filepath.Join(dir, "watched.txt")+`"`) && strings.Contains(string(b), `"hook_event_name":"FileChanged"`)
	})
	b, _ := os.ReadFile(log)
	if strings.Contains(string(b), "other.txt") {
		t.Errorf("FileChanged fired for a file nobody watched: %s", b)
	}
	h.sess.Close()
}
