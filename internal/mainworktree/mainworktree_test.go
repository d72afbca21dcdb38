package mainworktree

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
)

// fixture is a move wired to recorders: what the transcript was given, the questions asked,
// the working directory it was moved to, the warnings.
type fixture struct {
	m       *Main
	records []Record
	asks    []permission.Request
	answers []bool
	cwd     string
	warned  []string
}

func newFixture(t *testing.T, root string) *fixture {
	f := &fixture{cwd: root}
	f.m = New(Config{
		Root:   root,
		Record: func(_ context.Context, r Record) { f.records = append(f.records, r) },
		Ask: func(_ context.Context, req permission.Request, reason string) (string, bool) {
			f.asks = append(f.asks, req)
			if !strings.Contains(reason, "uncommitted changes") {
				t.Errorf("asked with reason %q", reason)
			}
			if len(f.answers) == 0 {
				t.Errorf("asked once too often: %+v", req)
				return "no answer", false
			}
			ok := f.answers[0]
			f.answers = f.answers[1:]
			return "the user said so", ok
		},
		Cwd:    func() string { return f.cwd },
		SetCwd: func(dir string) { f.cwd = dir },
		Warn:   func(text string) { f.warned = append(f.warned, text) },
	})
	return f
}

// call runs the named tool as the main agent (agent "" ) in cwd and applies its modifier.
func (f *fixture) call(t *testing.T, name, agent string, in any) tool.Result {
	t.Helper()
	raw, _ := json.Marshal(in)
	for _, tl := range f.m.Tools() {
		if tl.Name() == name {
			res := tl.Call(context.Background(), &tool.Env{State: tool.State{Cwd: f.cwd}, AgentID: agent}, raw)
			if res.Modifier != nil {
				st := tool.State{Cwd: f.cwd}
				res.Modifier(&st)
				f.cwd = st.Cwd
			}
			return res
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}
}

// TestEnterAndKeep: EnterWorktree makes .keel/worktrees/<name> on keel/<name>, moves the
// main agent there and records it; a second enter is refused; ExitWorktree keep returns to
// where it came from, records none, and leaves the worktree and branch.
func TestEnterAndKeep(t *testing.T) {
	repo := gittest.New(t)
	f := newFixture(t, repo.Dir)
	wtPath := filepath.Join(repo.Dir, ".keel", "worktrees", "feature")
	if res := f.call(t, EnterName, "", map[string]string{"name": "feature"}); res.IsError {
		t.Fatalf("EnterWorktree: %s", res.ResultText())
	}
	if f.cwd != wtPath || len(f.records) != 1 || f.records[0].Path != wtPath || f.records[0].Branch != "keel/feature" || f.records[0].From != repo.Dir {
		t.Fatalf("after enter: cwd %s, records %+v", f.cwd, f.records)
	}
	if a := f.m.Active(); a == nil || a.Slug != "feature" {
		t.Errorf("Active = %+v", a)
	}
	if res := f.call(t, EnterName, "", map[string]string{"name": "other"}); !res.IsError || !strings.Contains(res.ResultText(), "already works in worktree feature") {
		t.Errorf("second enter: %s", res.ResultText())
	}
	if res := f.call(t, ExitName, "", map[string]string{"action": "keep"}); res.IsError {
		t.Fatalf("ExitWorktree keep: %s", res.ResultText())
	}
	if f.cwd != repo.Dir || len(f.records) != 2 || f.records[1] != (Record{}) || f.m.Active() != nil {
		t.Errorf("after keep: cwd %s, records %+v, active %+v", f.cwd, f.records, f.m.Active())
	}
	if _, err := os.Stat(wtPath); err != nil {
		t.Errorf("keep removed the worktree: %v", err)
	}
	if out := repo.Git("branch", "--list", "keel/feature"); strings.TrimSpace(out) == "" {
		t.Error("keep removed the branch")
	}
	if res := f.call(t, ExitName, "", map[string]string{"action": "keep"}); !res.IsError || !strings.Contains(res.ResultText(), "nothing to leave") {
		t.Errorf("exit outside a worktree: %s", res.ResultText())
	}
	if len(f.asks) != 0 {
		t.Errorf("asked: %+v", f.asks)
	}
}

// TestRemoveAsksForChanges: removing a worktree with changes asks the user; a no keeps it
// and the agent in it, a yes removes it and its branch and returns the agent.
func TestRemoveAsksForChanges(t *testing.T) {
	repo := gittest.New(t)
	f := newFixture(t, repo.Dir)
	f.answers = []bool{false, true}
	f.call(t, EnterName, "", map[string]string{"name": "scratch"})
	wtPath := f.cwd
	if err := os.WriteFile(filepath.Join(wtPath, "draft.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	remove := map[string]any{"action": "remove", "discard_changes": true}
	if res := f.call(t, ExitName, "", remove); !res.IsError || !strings.Contains(res.ResultText(), "Nothing was removed") {
		t.Fatalf("a no: %s", res.ResultText())
	}
	if len(f.asks) != 1 || f.asks[0].Tool != ExitName || f.asks[0].Cwd != repo.Dir || f.asks[0].Paths[0] != wtPath {
		t.Fatalf("asks = %+v", f.asks)
	}
	if _, err := os.Stat(filepath.Join(wtPath, "draft.txt")); err != nil || f.cwd != wtPath || f.m.Active() == nil {
		t.Fatalf("after a no: %v, cwd %s", err, f.cwd)
	}
	if res := f.call(t, ExitName, "", remove); res.IsError {
		t.Fatalf("a yes: %s", res.ResultText())
	}
	if _, err := os.Stat(wtPath); !os.IsNotExist(err) {
		t.Errorf("after a yes the worktree is still there: %v", err)
	}
	if out := repo.Git("branch", "--list", "keel/scratch"); strings.TrimSpace(out) != "" {
		t.Errorf("after a yes the branch is still there: %q", out)
	}
	if f.cwd != repo.Dir || f.m.Active() != nil {
		t.Errorf("after removal: cwd %s, active %+v", f.cwd, f.m.Active())
	}
}

// TestRefusals: outside a git repository nothing is made; a subagent may not move; an
// unknown action is refused.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, dir)
	if res := f.call(t, EnterName, "", map[string]string{"name": "x"}); !res.IsError || !strings.Contains(res.ResultText(), "needs a git repository") {
		t.Errorf("outside git: %s", res.ResultText())
	}
	if _, err := os.Stat(filepath.Join(dir, ".keel")); err == nil || f.cwd != dir || len(f.records) != 0 {
		t.Errorf("outside git something was made or moved: cwd %s, records %+v", f.cwd, f.records)
	}
	repo := gittest.New(t)
	g := newFixture(t, repo.Dir)
	if res := g.call(t, EnterName, "agent-1", map[string]string{"name": "x"}); !res.IsError || !strings.Contains(res.ResultText(), "subagent") {
		t.Errorf("a subagent entered: %s", res.ResultText())
	}
	g.call(t, EnterName, "", map[string]string{"name": "y"})
	if res := g.call(t, ExitName, "agent-1", map[string]string{"action": "keep"}); !res.IsError || g.m.Active() == nil {
		t.Errorf("a subagent left: %s", res.ResultText())
	}
	if res := g.call(t, ExitName, "", map[string]string{"action": "drop"}); !res.IsError || !strings.Contains(res.ResultText(), "not one of keep, remove") {
		t.Errorf("unknown action: %s", res.ResultText())
	}
}

// TestRestore: a resumed session goes back into the recorded worktree while it exists;
// when it is gone it stays and is told; no record moves nothing.
func TestRestore(t *testing.T) {
	root, wt := t.TempDir(), t.TempDir()
	f := newFixture(t, root)
	f.m.Restore(nil)
	if f.cwd != root || f.m.Active() != nil {
		t.Fatalf("no record moved the session: %s", f.cwd)
	}
	raw, _ := json.Marshal(Record{Slug: "feature", Path: wt, From: root})
	f.m.Restore(raw)
	if f.cwd != wt || f.m.Active() == nil || f.m.Active().Slug != "feature" || len(f.warned) != 0 {
		t.Errorf("restore: cwd %s, active %+v, warned %q", f.cwd, f.m.Active(), f.warned)
	}
	g := newFixture(t, root)
	gone, _ := json.Marshal(Record{Slug: "gone", Path: filepath.Join(root, "gone")})
	g.m.Restore(gone)
	if g.cwd != root || g.m.Active() != nil || len(g.warned) != 1 || !strings.Contains(g.warned[0], "is gone") {
		t.Errorf("restore of a gone worktree: cwd %s, active %+v, warned %q", g.cwd, g.m.Active(), g.warned)
	}
}
