package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/settings"
)

// ifHooks parses a hooks document the way a settings or plugin hooks file is read, so the
// `if` field goes through the real decoder.
func (e env) ifHooks(doc string) ([]settings.HookGroup, []settings.Problem) {
	e.t.Helper()
	groups, problems := settings.PluginHooks(filepath.Join(e.dir, "hooks.json"), []byte(doc), "hooks")
	for i := range groups {
		groups[i].From.Scope = settings.ScopeUser
		for j := range groups[i].Hooks {
			groups[i].Hooks[j].From.Scope = settings.ScopeUser
		}
	}
	return groups, problems
}

// TestIfFiltersHooksByPermissionRule runs hooks whose `if` holds a permission rule: only those
// whose rule matches the tool call spawn, on every tool event; the rest are never started.
func TestIfFiltersHooksByPermissionRule(t *testing.T) {
	e := newEnv(t)
	mark := func(name string) string { return e.script(name+".sh", "cat >/dev/null; echo x >> "+name+".ran") }
	git, push, ts, always := mark("git"), mark("push"), mark("ts"), mark("always")
	doc := `{"hooks":{
	  "PreToolUse":[{"matcher":"Bash|Edit","hooks":[
	    {"type":"command","command":"` + git + `","if":"Bash(git *)"},
	    {"type":"command","command":"` + push + `","if":"Bash(git push *)"},
	    {"type":"command","command":"` + ts + `","if":"Edit(*.ts)"},
	    {"type":"command","command":"` + always + `"}]}]}}`
	groups, problems := e.ifHooks(doc)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	r := e.runner(groups...)
	calls := []Input{
		{Cwd: e.dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls -la"}`)},
		{Cwd: e.dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"git status"}`)},
		{Cwd: e.dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"npm test && git push origin main"}`)},
		{Cwd: e.dir, ToolName: "Edit", ToolInput: json.RawMessage(`{"file_path":"src/app.ts"}`)},
		{Cwd: e.dir, ToolName: "Edit", ToolInput: json.RawMessage(`{"file_path":"main.go"}`)},
	}
	var ran []int
	for _, in := range calls {
		ran = append(ran, len(r.Run(t.Context(), PreToolUse, in).Results))
	}
	if diff := cmp.Diff([]int{1, 2, 3, 2, 1}, ran); diff != "" {
		t.Errorf("hooks run per call mismatch (-want +got):\n%s", diff)
	}
	count := func(name string) int {
		data, _ := os.ReadFile(filepath.Join(e.dir, name+".ran"))
		return strings.Count(string(data), "x")
	}
	got := map[string]int{"git": count("git"), "push": count("push"), "ts": count("ts"), "always": count("always")}
	if diff := cmp.Diff(map[string]int{"git": 2, "push": 1, "ts": 1, "always": 5}, got); diff != "" {
		t.Errorf("processes started mismatch (-want +got):\n%s", diff)
	}
}

// TestIfOnEveryToolEvent: the condition is evaluated on each of the five tool events.
func TestIfOnEveryToolEvent(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("h.sh", "cat >/dev/null")
	for _, ev := range []Event{PreToolUse, PostToolUse, PostToolUseFailure, PermissionRequest, PermissionDenied} {
		g := userHook(string(ev), "", 0, cmd)
		g.Hooks[0].If = "Bash(rm *)"
		r := e.runner(g)
		match := r.Run(t.Context(), ev, Input{Cwd: e.dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"rm -f x"}`)})
		miss := r.Run(t.Context(), ev, Input{Cwd: e.dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`)})
		if len(match.Results) != 1 || len(miss.Results) != 0 {
			t.Errorf("%s: ran %d hooks for rm and %d for ls, want 1 and 0", ev, len(match.Results), len(miss.Results))
		}
	}
}

// TestIfOnOtherEventsNeverRuns: on an event that is not about a tool call, Claude Code never
// runs a hook with `if` set; keel does the same and says so when the hooks are loaded.
func TestIfOnOtherEventsNeverRuns(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("h.sh", "cat >/dev/null")
	g := userHook("Stop", "", 0, cmd, e.script("plain.sh", "cat >/dev/null"))
	g.Hooks[0].If = "Bash(git *)"
	r, problems := New(Config{Hooks: []settings.HookGroup{g}, ProjectDir: e.dir, Trusted: true})
	if len(problems) != 1 || !strings.Contains(problems[0].Msg, "never runs") || problems[0].Line != 2 {
		t.Errorf("problems = %v, want one warning at line 2 that the hook never runs", problems)
	}
	out := r.Run(t.Context(), Stop, Input{Cwd: e.dir})
	if len(out.Results) != 1 || out.Results[0].Command != "./plain.sh" {
		t.Errorf("results = %+v, want only the hook without if", out.Results)
	}
}

// TestIfThatDoesNotParseFailsOpen: a condition keel cannot read is reported, and the hook runs
// as if it had none (a filter, never the enforcement).
func TestIfThatDoesNotParseFailsOpen(t *testing.T) {
	e := newEnv(t)
	g := userHook("PreToolUse", "Bash", 0, e.script("h.sh", "cat >/dev/null"))
	g.Hooks[0].If = "Bash(git status; rm x)"
	r, problems := New(Config{Hooks: []settings.HookGroup{g}, ProjectDir: e.dir, Trusted: true})
	if len(problems) != 1 || !strings.Contains(problems[0].Msg, "runs on every matching call") {
		t.Errorf("problems = %v, want one saying the hook runs unfiltered", problems)
	}
	out := r.Run(t.Context(), PreToolUse, Input{Cwd: e.dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls"}`)})
	if len(out.Results) != 1 {
		t.Errorf("ran %d hooks, want 1", len(out.Results))
	}
}

// TestIfDoesNotHideADuplicate: identical commands run once, but a copy whose `if` does not
// match must not stop a copy whose `if` does.
func TestIfDoesNotHideADuplicate(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("h.sh", "cat >/dev/null")
	g := userHook("PreToolUse", "", 0, cmd, cmd)
	g.Hooks[0].If, g.Hooks[1].If = "Bash(npm *)", "Bash(git *)"
	out := e.runner(g).Run(t.Context(), PreToolUse, Input{Cwd: e.dir, ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"git log"}`)})
	if len(out.Results) != 1 {
		t.Errorf("ran %d hooks, want 1", len(out.Results))
	}
}

func TestSettingsRejectEmptyIf(t *testing.T) {
	e := newEnv(t)
	_, problems := e.ifHooks(`{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"x","if":""}]}]}}`)
	if len(problems) == 0 {
		t.Error("an empty if was accepted")
	}
}

// TestHasIgnoresHooksThatNeverRun: an event whose only hooks carry an `if` it never evaluates
// has no hook, so what Has guards (elicitation) is left out as if none were configured.
func TestHasIgnoresHooksThatNeverRun(t *testing.T) {
	e := newEnv(t)
	g := userHook(string(Elicitation), "", 0, e.script("h.sh", "cat >/dev/null"))
	g.Hooks[0].If = "Bash(git *)"
	r, _ := New(Config{Hooks: []settings.HookGroup{g}, ProjectDir: e.dir, Trusted: true})
	if r.Has(Elicitation) {
		t.Error("Has(Elicitation) = true for a hook that never runs")
	}
}
