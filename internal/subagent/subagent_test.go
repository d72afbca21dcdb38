package subagent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
)

var agentIDRe = regexp.MustCompile(`agentId: (a[0-9a-f]{16})`)

func spawnScenario(agentType string, extra ...scripted.Rule) *scripted.Scenario {
	in := map[string]any{"description": "count", "prompt": "CHILD-TASK: read notes.txt and reply 42"}
	if agentType != "" {
		in["subagent_type"] = agentType
	}
	rules := append(extra,
		scripted.Rule{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent", in)}},
		scripted.Rule{Name: "child-read", When: scripted.Match{UserText: "CHILD-TASK"}, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]any{"file_path": "notes.txt"})}},
		scripted.Rule{Name: "child-done", When: scripted.Match{ToolResult: "Read"}, Reply: []scripted.Block{scripted.Text("Child result: 42.")}},
		scripted.Rule{Name: "parent-done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("Parent done.")}},
	)
	return &scripted.Scenario{Rules: rules}
}

func TestForegroundSubagent(t *testing.T) {
	w := newWorld(t, spawnScenario("general-purpose"), worldOptions{rules: []string{"Read"}})
	if err := os.WriteFile(filepath.Join(w.dir, "notes.txt"), []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.main.Files.Record("/parent/seen.go", tool.FileRead{Hash: "x"})
	out := w.run("start")
	if out.Text != "Parent done." {
		t.Fatalf("parent text = %q", out.Text)
	}
	results := toolResults(out.Messages)
	if len(results) != 1 || !has(results[0], "Child result: 42.") || !has(results[0], "<usage>subagent_tokens: ") || !has(results[0], "tool_uses: 1") {
		t.Fatalf("Agent result = %q", results)
	}
	id := agentIDRe.FindStringSubmatch(results[0])[1]

	// The child's Read recorded into its clone, not into the parent's state.
	if n := w.main.Files.Len(); n != 1 {
		t.Errorf("parent file state has %d entries after the child read, want 1", n)
	}
	// Usage rolled up.
	if u, _, _, _ := w.runner.Ledger().Total(); u.TotalInput() == 0 || u.OutputTokens == 0 {
		t.Errorf("runner usage = %+v", u)
	}
	// Per-agent transcript and meta.
	path, metaPath := transcript.AgentPaths(w.session, id)
	meta, err := transcript.ReadAgentMeta(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(transcript.AgentMeta{AgentID: id, AgentType: "general-purpose", Description: "count", ParentSessionID: "sess-1",
		ToolUseID: "toolu_scripted_0001_0"}, meta); diff != "" {
		t.Errorf("meta mismatch (-want +got):\n%s", diff)
	}
	st, err := transcript.Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := st.Messages()
	if len(msgs) != 4 || msgs[3].TextOf() != "Child result: 42." {
		t.Errorf("child transcript = %d messages, last %q", len(msgs), msgs[len(msgs)-1].TextOf())
	}
	// The child's events reached the parent's stream with its origin.
	var childTurns int
	for _, e := range w.events {
		if a, ok := e.(event.AssistantMessage); ok && a.AgentID == id && a.AgentName == "general-purpose" && a.ParentToolUseID == "toolu_scripted_0001_0" {
			childTurns++
		}
	}
	if childTurns != 2 {
		t.Errorf("child assistant events = %d, want 2", childTurns)
	}
}

func TestOneShotAgentHasNoTrailer(t *testing.T) {
	w := newWorld(t, spawnScenario("Explore"), worldOptions{rules: []string{"Read"}})
	_ = os.WriteFile(filepath.Join(w.dir, "notes.txt"), []byte("x"), 0o644)
	out := w.run("start")
	results := toolResults(out.Messages)
	if len(results) != 1 || results[0] != "Child result: 42." {
		t.Errorf("Explore result = %q, want only the text", results)
	}
}

func TestAgentTypeChoice(t *testing.T) {
	custom := &agentdef.Definition{Name: "reviewer", Description: "reviews", Prompt: "You review.", Source: agentdef.SourceProject}
	tests := []struct {
		name     string
		defs     []*agentdef.Definition
		noGP     bool
		forks    bool
		typ      string
		wantText string
	}{
		{name: "unknown type lists the agents", typ: "nope", wantText: "Agent type 'nope' not found. Available agents: [general-purpose Explore Plan verification reviewer]", defs: []*agentdef.Definition{custom}},
		{name: "no type and no forks: general-purpose", wantText: "Child result: 42."},
		{name: "no type, no forks, no general-purpose: error", noGP: true, wantText: "subagent_type is required: forks are off and there is no general-purpose agent. Available agents: [Explore Plan verification]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := worldOptions{defs: tt.defs, forks: tt.forks, rules: []string{"Read"}}
			if tt.noGP {
				o.cfg = func(c *Config) {
					var keep []*agentdef.Definition
					for _, d := range agentdef.Builtins() {
						if d.Name != "general-purpose" {
							keep = append(keep, d)
						}
					}
					c.Defs = agentdef.NewSet(keep)
				}
			}
			w := newWorld(t, spawnScenario(tt.typ), o)
			_ = os.WriteFile(filepath.Join(w.dir, "notes.txt"), []byte("x"), 0o644)
			out := w.run("start")
			results := toolResults(out.Messages)
			if len(results) != 1 || !strings.HasPrefix(results[0], tt.wantText) {
				t.Errorf("result = %q, want prefix %q", results, tt.wantText)
			}
		})
	}
}

// TestChildPermissions: a child never gets more than its parent, a restrictive child stays
// restricted, and asks bubble to the parent's asker with the child's name and colour.
func TestChildPermissions(t *testing.T) {
	writeRule := func(path string) scripted.Rule {
		return scripted.Rule{Name: "child-write", When: scripted.Match{UserText: "CHILD-TASK"},
			Reply: []scripted.Block{scripted.ToolUse("Write", map[string]any{"file_path": path, "content": "x"})}}
	}
	after := scripted.Rule{Name: "child-after", When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("tried")}}
	tests := []struct {
		name      string
		parent    permission.Mode
		rules     []string
		child     *agentdef.Definition
		answer    permission.Answer
		wantAsks  []string
		wantWrote bool
	}{
		{name: "bubble child asks the parent's asker, with its name", parent: permission.ModeDefault,
			child:  &agentdef.Definition{Name: "writer", Description: "w", Color: "green", Source: agentdef.SourceProject},
			answer: permission.AllowOnce(), wantAsks: []string{"writer/green Write"}, wantWrote: true},
		{name: "the parent's allow rules hold for its children", parent: permission.ModeDefault, rules: []string{"Write"},
			child:  &agentdef.Definition{Name: "writer", Description: "w", Source: agentdef.SourceProject},
			answer: permission.DenyAnswer("no"), wantWrote: true},
		{name: "child asking for bypass gets no more than the parent", parent: permission.ModeDefault,
			child:  &agentdef.Definition{Name: "writer", Description: "w", PermissionMode: agentdef.ModeBypassPermissions, Source: agentdef.SourceProject},
			answer: permission.DenyAnswer("no"), wantAsks: []string{"writer/ Write"}},
		{name: "restrictive child stays restricted under a permissive parent: its plan mode asks", parent: permission.ModeBypassPermissions,
			child:  &agentdef.Definition{Name: "writer", Description: "w", PermissionMode: agentdef.ModePlan, Source: agentdef.SourceProject},
			answer: permission.DenyAnswer("no"), wantAsks: []string{"writer/ Write"}},
		{name: "child deny rule holds under a permissive parent", parent: permission.ModeBypassPermissions,
			child: &agentdef.Definition{Name: "writer", Description: "w", Source: agentdef.SourceProject,
				Permissions: &agentdef.Rules{Deny: []string{"Write"}}},
			answer: permission.AllowOnce()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var asks []string
			asker := permission.AskerFunc(func(ctx context.Context, req permission.AskRequest) (permission.Answer, error) {
				mu.Lock()
				defer mu.Unlock()
				asks = append(asks, req.Agent.Name+"/"+req.Agent.Color+" "+req.Request.Tool)
				return tt.answer, nil
			})
			// A path inside the working directory, so the modes and rules alone decide.
			w := newWorld(t, spawnScenario("writer", writeRule("out.txt"), after), worldOptions{defs: []*agentdef.Definition{tt.child}, mode: tt.parent, asker: asker, rules: tt.rules})
			w.run("start")
			_, err := os.Stat(filepath.Join(w.dir, "out.txt"))
			if got := err == nil; got != tt.wantWrote {
				t.Errorf("wrote = %v, want %v", got, tt.wantWrote)
			}
			if diff := cmp.Diff(tt.wantAsks, asks); diff != "" {
				t.Errorf("asks mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubagentHooks(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "hooks.log")
	group := func(ev, cmd string) settings.HookGroup {
		return settings.HookGroup{Event: ev, Hooks: []settings.HookCommand{{Type: "command", Command: cmd}}}
	}
	r, problems := hooks.New(hooks.Config{Trusted: true, ProjectDir: dir, Environ: []string{"PATH=" + os.Getenv("PATH")},
		Hooks: []settings.HookGroup{
			group("SubagentStart", "echo start >> "+log+"; echo 'HOOK-CONTEXT: be brief'"),
			group("SubagentStop", "cat >> "+log),
		}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	w := newWorld(t, spawnScenario("general-purpose"), worldOptions{rules: []string{"Read"}, cfg: func(c *Config) { c.Hooks = r }})
	_ = os.WriteFile(filepath.Join(w.dir, "notes.txt"), []byte("x"), 0o644)
	w.run("start")
	got := readFile(t, log)
	if !has(got, "start\n") || !has(got, `"hook_event_name":"SubagentStop"`) || !has(got, `"agent_type":"general-purpose"`) {
		t.Errorf("hook log = %s", got)
	}
	// SubagentStart's stdout joined the child's first message.
	var found bool
	for _, rec := range w.srv.Requests() {
		if has(string(rec.Body), "CHILD-TASK") && has(string(rec.Body), "HOOK-CONTEXT: be brief") {
			found = true
		}
	}
	if !found {
		t.Error("SubagentStart context not in the child's request")
	}
}

func TestNestingDepth(t *testing.T) {
	nested := scripted.Rule{Name: "child-nests", When: scripted.Match{UserText: "CHILD-TASK"}, Times: 1,
		Reply: []scripted.Block{scripted.ToolUse("Agent", map[string]any{"description": "deeper", "prompt": "GRANDCHILD", "subagent_type": "general-purpose"})}}
	grand := scripted.Rule{Name: "grandchild", When: scripted.Match{UserText: "GRANDCHILD"}, Reply: []scripted.Block{scripted.Text("grandchild here")}}
	childAfter := scripted.Rule{Name: "child-after", When: scripted.Match{ToolResult: "Agent", LacksTool: "TaskOutput"}, Times: 1,
		Reply: []scripted.Block{scripted.Text("child done")}}
	for _, tt := range []struct {
		depth    int
		wantTool bool
	}{{0, false}, {2, true}} {
		w := newWorld(t, spawnScenario("general-purpose", nested, grand, childAfter), worldOptions{maxDepth: tt.depth})
		w.run("start")
		var childHasAgent, grandRan bool
		for _, rec := range w.srv.Requests() {
			body := string(rec.Body)
			if has(body, "CHILD-TASK") && !slices.Contains(requestTools(t, rec.Body), "TaskOutput") && slices.Contains(requestTools(t, rec.Body), "Agent") {
				childHasAgent = true
			}
			if rec.Rule == "grandchild" {
				grandRan = true
			}
		}
		if childHasAgent != tt.wantTool || grandRan != tt.wantTool {
			t.Errorf("depth %d: child has Agent = %v, grandchild ran = %v; want %v", tt.depth, childHasAgent, grandRan, tt.wantTool)
		}
	}
}

func TestMaxTurnsAndModel(t *testing.T) {
	looping := scripted.Rule{Name: "child-loops", When: scripted.Match{System: "LOOPER"},
		Reply: []scripted.Block{scripted.Text("thinking out loud"), scripted.ToolUse("Glob", map[string]any{"pattern": "*.none"})}}
	def := &agentdef.Definition{Name: "looper", Description: "l", Prompt: "LOOPER", MaxTurns: 2, Model: "haiku", Source: agentdef.SourceProject}
	w := newWorld(t, spawnScenario("looper", looping), worldOptions{defs: []*agentdef.Definition{def},
		cfg: func(c *Config) { c.ResolveModel = func(s string) string { return "claude-" + s + "-4-5" } }})
	out := w.run("start")
	res := toolResults(out.Messages)
	if len(res) != 1 || !has(res[0], "stopped at its limit of 2 turns") {
		t.Errorf("result = %q", res)
	}
	var childModels []string
	for _, rec := range w.srv.Requests() {
		if rec.Rule == "child-loops" {
			childModels = append(childModels, rec.Cache.Model)
		}
	}
	if diff := cmp.Diff([]string{"claude-haiku-4-5", "claude-haiku-4-5"}, childModels); diff != "" {
		t.Errorf("child models mismatch (-want +got):\n%s", diff)
	}
}

var _ = message.User

func requestTools(t *testing.T, body []byte) []string {
	var req struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range req.Tools {
		names = append(names, x.Name)
	}
	return names
}
