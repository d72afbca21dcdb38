package subagent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
)

// childRequest returns the body of the first request whose last user message holds marker.
func childRequest(t *testing.T, w *world, marker string) string {
	t.Helper()
	for _, rec := range w.srv.Requests() {
		if has(string(rec.Body), marker) {
			return string(rec.Body)
		}
	}
	t.Fatalf("no request carries %q", marker)
	return ""
}

func customAgent(name string, edit func(*agentdef.Definition)) *agentdef.Definition {
	d := &agentdef.Definition{Name: name, Description: "a test agent", Prompt: "You are " + name + ".", Source: agentdef.SourceProject}
	if edit != nil {
		edit(d)
	}
	return d
}

func spawnOf(agentType, prompt string, rules ...scripted.Rule) *scripted.Scenario {
	return &scripted.Scenario{Rules: append(rules,
		scripted.Rule{Name: "spawn", When: scripted.Match{UserText: "start"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Agent",
			map[string]any{"description": "d", "prompt": prompt, "subagent_type": agentType})}},
		scripted.Rule{Name: "parent-done", When: scripted.Match{ToolResult: "Agent"}, Reply: []scripted.Block{scripted.Text("Parent done.")}},
	)}
}

func TestEffortBudget(t *testing.T) {
	for _, tt := range []struct {
		effort agentdef.Effort
		want   int64
	}{
		{agentdef.Effort{}, 0},
		{agentdef.Effort{Level: "low"}, 2048},
		{agentdef.Effort{Level: "medium"}, 8192},
		{agentdef.Effort{Level: "high"}, 16384},
		{agentdef.Effort{Level: "max"}, 31999},
		{agentdef.Effort{Tokens: 5000}, 5000},
	} {
		if got := EffortBudget(tt.effort); got != tt.want {
			t.Errorf("EffortBudget(%v) = %d, want %d", tt.effort, got, tt.want)
		}
	}

	def := customAgent("thinker", func(d *agentdef.Definition) { d.Effort = agentdef.Effort{Level: "high"} })
	w := newWorld(t, spawnOf("thinker", "THINK-TASK",
		scripted.Rule{Name: "child", When: scripted.Match{UserText: "THINK-TASK"}, Reply: []scripted.Block{scripted.Text("thought")}}),
		worldOptions{defs: []*agentdef.Definition{def}})
	w.run("start")
	var child, parent struct {
		MaxTokens int64 `json:"max_tokens"`
		Thinking  *struct {
			Type   string `json:"type"`
			Budget int64  `json:"budget_tokens"`
		} `json:"thinking"`
	}
	if err := json.Unmarshal([]byte(childRequest(t, w, "THINK-TASK")), &child); err != nil {
		t.Fatal(err)
	}
	if child.Thinking == nil || child.Thinking.Type != "enabled" || child.Thinking.Budget != 16384 || child.MaxTokens <= 16384 {
		t.Errorf("child request thinking = %+v, max_tokens %d; want enabled with 16384 under max_tokens", child.Thinking, child.MaxTokens)
	}
	if err := json.Unmarshal(w.srv.Requests()[0].Body, &parent); err != nil {
		t.Fatal(err)
	}
	if parent.Thinking != nil {
		t.Errorf("the parent's request got thinking %+v", parent.Thinking)
	}
}

func TestMemoryDir(t *testing.T) {
	for _, tt := range []struct {
		scope agentdef.MemoryScope
		name  string
		want  string
	}{
		{agentdef.MemoryUser, "keeper", "home/agent-memory/keeper"},
		{agentdef.MemoryProject, "keeper", "proj/.keel/agent-memory/keeper"},
		{agentdef.MemoryLocal, "plugin:keeper", "proj/.keel/agent-memory-local/plugin-keeper"},
	} {
		got, err := MemoryDir(tt.scope, tt.name, "home", "proj")
		if err != nil || got != filepath.FromSlash(tt.want) {
			t.Errorf("MemoryDir(%s, %s) = %q, %v; want %q", tt.scope, tt.name, got, err, tt.want)
		}
	}
	if _, err := MemoryDir(agentdef.MemoryUser, "x", "", "proj"); err == nil {
		t.Error("user memory without a home: no error")
	}
}

// TestAgentMemory: a memory agent gets its directory, its MEMORY.md in the system prompt, and
// may write there without asking, while a write elsewhere is still asked (and, headless,
// denied).
func TestAgentMemory(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	memDir := filepath.Join(dir, ".keel", "agent-memory", "keeper")
	inMemory, elsewhere := filepath.Join(memDir, "notes.md"), filepath.Join(dir, "other.txt")
	def := customAgent("keeper", func(d *agentdef.Definition) { d.Memory = agentdef.MemoryProject })
	w := newWorld(t, spawnOf("keeper", "MEM-TASK",
		scripted.Rule{Name: "child", When: scripted.Match{UserText: "MEM-TASK"}, Reply: []scripted.Block{
			scripted.ToolUse("Write", map[string]any{"file_path": inMemory, "content": "remembered\n"}),
			scripted.ToolUse("Write", map[string]any{"file_path": elsewhere, "content": "nope\n"}),
		}},
		scripted.Rule{Name: "child-done", When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("noted")}}),
		worldOptions{dir: dir, defs: []*agentdef.Definition{def}, cfg: func(c *Config) { c.ProjectDir = dir }})
	// MEMORY.md from an earlier run; the directory is created on first use otherwise.
	if err := os.MkdirAll(memDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(memDir, "MEMORY.md"), []byte("REMEMBERED-FACT: tabs not spaces\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.run("start")

	var req struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
	}
	if err := json.Unmarshal([]byte(childRequest(t, w, "MEM-TASK")), &req); err != nil {
		t.Fatal(err)
	}
	var sys string
	for _, b := range req.System {
		sys += b.Text
	}
	if !has(sys, "REMEMBERED-FACT: tabs not spaces") || !has(sys, memDir) {
		t.Errorf("child system prompt lacks the memory section: %s", sys)
	}
	if got := readFile(t, inMemory); got != "remembered\n" {
		t.Errorf("memory file = %q", got)
	}
	if _, err := os.Stat(elsewhere); !os.IsNotExist(err) {
		t.Errorf("the write outside the memory directory was allowed (stat: %v)", err)
	}
	var denied bool
	for _, rec := range w.srv.Requests() {
		if rec.Rule == "child-done" && has(string(rec.Body), "Permission to use Write was denied") {
			denied = true
		}
	}
	if !denied {
		t.Error("the child was not told its write elsewhere was denied")
	}
}

// TestAgentMemoryIndexHonoursReadDenyRules: a project agent memory's MEMORY.md that is a link
// to a file the session's Read deny rule covers, or the sandbox masks (Config.Masked), is not
// put in the child's system prompt (a repository can ship such a link): the prompt says it was
// not read and why.
func TestAgentMemoryIndexHonoursReadDenyRules(t *testing.T) {
	for _, byMask := range []bool{false, true} {
		dir, _ := filepath.EvalSymlinks(t.TempDir())
		memDir := filepath.Join(dir, ".keel", "agent-memory", "keeper")
		secrets := filepath.Join(dir, "secrets")
		def := customAgent("keeper", func(d *agentdef.Definition) { d.Memory = agentdef.MemoryProject })
		w := newWorld(t, spawnOf("keeper", "MEM-TASK",
			scripted.Rule{Name: "child", When: scripted.Match{UserText: "MEM-TASK"}, Reply: []scripted.Block{scripted.Text("noted")}}),
			worldOptions{dir: dir, defs: []*agentdef.Definition{def}, cfg: func(c *Config) {
				c.ProjectDir = dir
				if byMask {
					c.Masked = func(path string) string { // as the session's: the file a link leads to counts
						if real, err := filepath.EvalSymlinks(path); err == nil && strings.HasPrefix(real, secrets+string(filepath.Separator)) {
							return "the sandbox masks it (sandbox.filesystem.denyRead)"
						}
						return ""
					}
				}
			}})
		want := "MEMORY.md is not read: the sandbox masks it (sandbox.filesystem.denyRead)"
		if !byMask {
			deny, errs := permission.ParseRules([]string{"Read(//" + strings.TrimLeft(filepath.ToSlash(secrets), "/") + "/**)"}, permission.Deny, permission.Source{Name: "test"})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			w.checker.AddRules(deny...)
			want = "MEMORY.md is not read: a Read deny rule covers it"
		}
		for _, d := range []string{memDir, secrets} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(secrets, "token"), []byte("TOKEN-SECRET-8\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(secrets, "token"), filepath.Join(memDir, "MEMORY.md")); err != nil {
			t.Fatal(err)
		}
		w.run("start")
		body := childRequest(t, w, "MEM-TASK")
		if has(body, "TOKEN-SECRET-8") || !has(body, want) {
			t.Errorf("byMask=%v: the child's request:\n%s\nwant MEMORY.md left out: %q", byMask, body, want)
		}
	}
}

func TestLocalMemoryIsIgnored(t *testing.T) {
	dir := t.TempDir()
	m, err := openMemory(customAgent("k", func(d *agentdef.Definition) { d.Memory = agentdef.MemoryLocal }), "", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, ".keel", "agent-memory-local", ".gitignore")); !has(got, "*") {
		t.Errorf(".gitignore = %q", got)
	}
	if !has(m.text, "MEMORY.md is empty") {
		t.Errorf("memory section = %q", m.text)
	}
}

// TestRefusedMemoryIndexIsNotRead: a project agent memory's MEMORY.md that the agent's read
// filter refuses (a link a repository ships to a secret) is not put in the agent's prompt, and
// the prompt says why; without a refusal it is.
func TestRefusedMemoryIndexIsNotRead(t *testing.T) {
	dir := t.TempDir()
	def := customAgent("k", func(d *agentdef.Definition) { d.Memory = agentdef.MemoryProject })
	mdir, err := MemoryDir(def.Memory, def.Name, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mdir, "MEMORY.md"), []byte("TOKEN-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refuse := func(string) string { return "a Read deny rule covers it" }
	m, err := openMemory(def, "", dir, refuse)
	if err != nil {
		t.Fatal(err)
	}
	if has(m.text, "TOKEN-SECRET") || !has(m.text, "MEMORY.md is not read: a Read deny rule covers it.") {
		t.Errorf("memory section = %q", m.text)
	}
	m, err = openMemory(def, "", dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !has(m.text, "TOKEN-SECRET") {
		t.Errorf("an allowed MEMORY.md was not read: %q", m.text)
	}
}

func TestSkillsPreloaded(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	skillDir := filepath.Join(dir, ".keel", "skills", "house-style")
	if err := os.MkdirAll(skillDir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "---\nname: house-style\ndescription: How we write code here.\n---\nSKILL-BODY: wrap errors with context.\n"
	if err := os.WriteFile(filepath.Join(skillDir, "SKILL.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, problems := skill.Load(skill.Options{Cwd: dir, ProjectRoot: dir, NoBundled: true})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	def := customAgent("styled", func(d *agentdef.Definition) { d.Skills = []string{"house-style"} })
	w := newWorld(t, spawnOf("styled", "STYLE-TASK",
		scripted.Rule{Name: "child", When: scripted.Match{UserText: "STYLE-TASK"}, Reply: []scripted.Block{scripted.Text("styled")}}),
		worldOptions{dir: dir, defs: []*agentdef.Definition{def}, cfg: func(c *Config) { c.Skills = cat }})
	w.run("start")

	var req struct {
		Messages []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(childRequest(t, w, "STYLE-TASK")), &req); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, b := range req.Messages[0].Content {
		texts = append(texts, b.Text)
	}
	if len(texts) != 2 || !has(texts[0], `<skill name="house-style">`) || !has(texts[0], "SKILL-BODY: wrap errors with context.") {
		t.Errorf("child's first message = %q; want the skill, then the task", texts)
	}
	if diff := cmp.Diff("STYLE-TASK", texts[len(texts)-1]); diff != "" {
		t.Errorf("task block mismatch (-want +got):\n%s", diff)
	}

	// A skill that does not exist refuses the agent with the reason.
	missing := customAgent("broken", func(d *agentdef.Definition) { d.Skills = []string{"nope"} })
	w2 := newWorld(t, spawnOf("broken", "X"), worldOptions{dir: dir, defs: []*agentdef.Definition{missing}, cfg: func(c *Config) { c.Skills = cat }})
	out := w2.run("start")
	if res := toolResults(out.Messages); len(res) != 1 || !has(res[0], "preload skill nope") {
		t.Errorf("Agent result = %q", res)
	}
}

// TestBackgroundDetachThenStop: a foreground child moved to the background keeps running
// after its parent's turn, and TaskStop still reaches it.
func TestBackgroundDetachThenStop(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	sc := spawnOf("general-purpose", "WAIT-TASK",
		scripted.Rule{Name: "child", When: scripted.Match{UserText: "WAIT-TASK"}, Reply: []scripted.Block{scripted.ToolUse("mcp__test__wait", map[string]any{})}})
	w := newWorld(t, sc, worldOptions{tools: []tool.Tool{blockTool(entered, release)}})
	if n := w.runner.Background(""); n != 0 {
		t.Fatalf("Background with nothing running = %d", n)
	}
	done := make(chan []string, 1)
	go func() {
		out, err := w.main.Run(t.Context(), []message.Message{message.User(message.Text("start"))})
		if err != nil {
			t.Errorf("parent run: %v", err)
		}
		done <- toolResults(out.Messages)
	}()
	waittest.Recv(t, "the child to enter its tool", entered)
	if n := w.runner.Background(""); n != 1 {
		t.Fatalf("Background = %d, want 1", n)
	}
	res := waittest.Recv(t, "the parent's run to end", done)
	if len(res) != 1 || !has(res[0], "moved this agent to the background") {
		t.Fatalf("Agent result = %q", res)
	}
	id := agentIDRe.FindStringSubmatch(res[0])[1]
	if info, ok := w.tasks.Get(id); !ok || info.Status != background.StatusRunning {
		t.Fatalf("task after detach = %+v, %v; want running", info, ok)
	}
	if info, err := w.tasks.Stop(t.Context(), id); err != nil || info.Status != background.StatusKilled {
		t.Errorf("Stop = %+v, %v", info, err)
	}
}
