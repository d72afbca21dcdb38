package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
)

// TestAutoMemoryOpensWithAGrant: with a keel home and auto memory on, the project's auto
// memory directory is created, the main agent is granted Read, Write and Edit there, and
// its index joins the memory files after the prompt's, as it is on disk now.
func TestAutoMemoryOpensWithAGrant(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	var granted []permission.Rule
	i := New(Config{
		Home: home, Cwd: cwd,
		AutoMemoryOn: func() bool { return true },
		Grant:        func(r ...permission.Rule) { granted = append(granted, r...) },
		Warn:         func(text string) { t.Errorf("warned %q", text) },
		Memory:       func() []memory.File { return []memory.File{{Path: "/p/KEEL.md", Content: "project"}} },
	})
	i.OpenAutoMemory()
	dir := i.AutoMemoryDir()
	if dir == "" || dir != memory.AutoDir(home, cwd) {
		t.Fatalf("AutoMemoryDir = %q", dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("auto memory directory not made: %v", err)
	}
	tools := map[string]bool{}
	for _, r := range granted {
		if r.Behavior != permission.Allow {
			t.Errorf("granted %+v, want allow rules", r)
		}
		tools[r.Tool] = true
	}
	for _, name := range []string{"Read", "Write", "Edit"} {
		if !tools[name] {
			t.Errorf("no %s rule in the grant %+v", name, granted)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, memory.AutoIndexName), []byte("- build: make check\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := i.MemoryFiles()
	if len(files) != 2 || files[0].Path != "/p/KEEL.md" || files[1].Kind != memory.KindAuto ||
		strings.TrimSpace(files[1].Content) != "- build: make check" || files[1].Size == 0 {
		t.Fatalf("MemoryFiles = %+v", files)
	}
	if a, problem := i.AutoMemory(); a == nil || problem != "" {
		t.Errorf("AutoMemory = %v, %q", a, problem)
	}
}

// TestAutoMemoryOffOrUnavailable: switched off, or without a keel home, nothing is opened or
// granted; a directory that cannot be made is a warning and a problem for the prompt, and
// grants nothing.
func TestAutoMemoryOffOrUnavailable(t *testing.T) {
	grant := func(t *testing.T) func(...permission.Rule) {
		return func(r ...permission.Rule) { t.Errorf("granted %+v", r) }
	}
	off := New(Config{Home: t.TempDir(), Cwd: t.TempDir(), AutoMemoryOn: func() bool { return false }, Grant: grant(t)})
	off.OpenAutoMemory()
	if off.AutoMemoryDir() != "" || len(off.MemoryFiles()) != 0 {
		t.Errorf("auto memory off: dir %q, files %+v", off.AutoMemoryDir(), off.MemoryFiles())
	}
	noHome := New(Config{Cwd: t.TempDir(), AutoMemoryOn: func() bool { return true }, Grant: grant(t)})
	noHome.OpenAutoMemory()
	if noHome.AutoMemoryDir() != "" {
		t.Errorf("no home: dir %q", noHome.AutoMemoryDir())
	}

	// A file where the projects directory should be: the directory cannot be made.
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "projects"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	bad := New(Config{Home: home, Cwd: t.TempDir(), AutoMemoryOn: func() bool { return true }, Grant: grant(t),
		Warn: func(text string) { warned = append(warned, text) }})
	bad.OpenAutoMemory()
	a, problem := bad.AutoMemory()
	if a != nil || problem == "" || len(warned) != 1 || warned[0] != problem {
		t.Errorf("unavailable auto memory: %v, problem %q, warned %q", a, problem, warned)
	}
}

type fakeTool struct{ name, desc string }

func (f fakeTool) Name() string                       { return f.name }
func (f fakeTool) Description() string                { return f.desc }
func (f fakeTool) InputSchema() json.RawMessage       { return json.RawMessage(`{}`) }
func (f fakeTool) ReadOnly(json.RawMessage) bool      { return true }
func (fakeTool) ConcurrencySafe(json.RawMessage) bool { return true }
func (fakeTool) Call(context.Context, *tool.Env, json.RawMessage) tool.Result {
	return tool.Result{}
}

// TestContextUsageByPart: the system prompt is counted less the memory files in it, MCP
// tools apart from the others, the buffer is the window less the compaction threshold and
// the free space what is left; every part is a quarter of its bytes.
func TestContextUsageByPart(t *testing.T) {
	mem := strings.Repeat("m", 400) // 100 tokens
	i := New(Config{
		Memory: func() []memory.File {
			return []memory.File{{Path: "/p/KEEL.md", Content: mem, Kind: memory.KindProject}}
		},
		System: func(context.Context) []provider.SystemBlock {
			return []provider.SystemBlock{{Text: strings.Repeat("s", 800)}, {Text: mem}} // 300 tokens
		},
		Tools: func(context.Context) []tool.Tool {
			return []tool.Tool{fakeTool{"Read", strings.Repeat("r", 194)}, fakeTool{"mcp__srv__get", strings.Repeat("g", 385)}}
		},
		History: func() []message.Message {
			return []message.Message{message.User(message.Text(strings.Repeat("h", 100)))}
		},
		Window:    func() int64 { return 10_000 },
		Threshold: func() int64 { return 8_000 },
		Model:     func() string { return "claude-x" },
	})
	u := i.ContextUsage(context.Background())
	got := map[string]int64{}
	for _, p := range u.Parts {
		got[p.ID] = p.Tokens
	}
	hist, _ := json.Marshal(message.User(message.Text(strings.Repeat("h", 100))).Content)
	want := map[string]int64{
		"system_prompt": 200, "system_tools": 50, "mcp_tools": 100, "memory_files": 100,
		"messages": tokensOf(len(hist)), "autocompact_buffer": 2_000,
	}
	want["free_space"] = 10_000 - 2_000 - (200 + 50 + 100 + 100 + want["messages"])
	for id, n := range want {
		if got[id] != n {
			t.Errorf("%s = %d tokens, want %d (all: %v)", id, got[id], n, got)
		}
	}
	if u.Window != 10_000 || u.Model != "claude-x" || len(u.Memory) != 1 || u.Memory[0].Tokens != 100 {
		t.Errorf("usage = %+v", u)
	}
}

// TestLastContextTokens: nothing before the first request, a quarter of what the newest
// carried after it.
func TestLastContextTokens(t *testing.T) {
	var last []message.Message
	i := New(Config{LastRequest: func() []message.Message { return last }})
	if n := i.LastContextTokens(); n != 0 {
		t.Errorf("before the first request: %d", n)
	}
	last = []message.Message{message.User(message.Text(strings.Repeat("x", 4000)))}
	b, _ := json.Marshal(last)
	if n := i.LastContextTokens(); n != tokensOf(len(b)) || n < 1000 {
		t.Errorf("after a request: %d, want %d", n, tokensOf(len(b)))
	}
}

type fakeShells struct{ killed []string }

func (f *fakeShells) List() []shell.Info { return []shell.Info{{ID: "b1"}} }
func (f *fakeShells) Kill(id string) (shell.Snapshot, error) {
	if id != "b1" {
		return shell.Snapshot{}, shell.ErrNoJob
	}
	f.killed = append(f.killed, id)
	return shell.Snapshot{}, nil
}

// TestTodosAndShells: the todos and shells are the session's, and a kill reaches its shell
// or says there is none.
func TestTodosAndShells(t *testing.T) {
	sh := &fakeShells{}
	i := New(Config{Shells: sh, Todos: func() []event.Todo { return []event.Todo{{Content: "ship"}} }})
	if todos := i.Todos(); len(todos) != 1 || todos[0].Content != "ship" {
		t.Errorf("Todos = %+v", todos)
	}
	if got := i.Shells(); len(got) != 1 || got[0].ID != "b1" {
		t.Errorf("Shells = %+v", got)
	}
	if err := i.KillShell("b1"); err != nil || len(sh.killed) != 1 {
		t.Errorf("KillShell(b1) = %v, killed %v", err, sh.killed)
	}
	if err := i.KillShell("b9"); !errors.Is(err, shell.ErrNoJob) {
		t.Errorf("KillShell(b9) = %v, want ErrNoJob", err)
	}
	if err := New(Config{}).KillShell("b1"); !errors.Is(err, shell.ErrNoJob) {
		t.Errorf("KillShell without shells = %v", err)
	}
}
