package mainworktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/worktree"
)

type enterInput struct {
	Name string `json:"name,omitempty"`
}

type exitInput struct {
	Action         string `json:"action"`
	DiscardChanges bool   `json:"discard_changes,omitempty"`
}

// Tools are EnterWorktree and ExitWorktree: the main agent moves its working directory into
// a new worktree of the repository (.keel/worktrees/<name> on branch keel/<name>), and back.
// Both are deferred (their names only reach the first request) and refuse a subagent.
func (m *Main) Tools() []tool.Tool {
	enter := tool.New(tool.Spec[enterInput]{
		Name: EnterName,
		Description: "Creates a git worktree of this repository (.keel/worktrees/<name>, on a new branch keel/<name>) and moves this session into it: " +
			"the working directory, the tools and the status line then work there, so changes stay apart from the main work tree. " +
			"Use it when the user asks to work in a worktree. ExitWorktree returns. Only in a git repository; the name must be new.",
		Schema:   json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Name of the worktree and its branch (default: a generated one)"}},"additionalProperties":false}`),
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in enterInput) tool.Result {
			if env.AgentID != "" {
				return tool.Errorf("EnterWorktree moves the main session; a subagent is given a worktree with the Agent tool's isolation: \"worktree\"")
			}
			return m.enter(ctx, env, in)
		},
	})
	exit := tool.New(tool.Spec[exitInput]{
		Name: ExitName,
		Description: "Leaves the worktree EnterWorktree made and returns the session to the directory it came from. " +
			`action "keep" leaves the worktree and its branch for the user; "remove" deletes both — while the worktree has ` +
			"uncommitted changes or new commits, the user is asked first and nothing is removed unless they agree.",
		Schema: json.RawMessage(`{"type":"object","properties":{"action":{"type":"string","enum":["keep","remove"],"description":"keep the worktree, or remove it"},` +
			`"discard_changes":{"type":"boolean","description":"with remove: you mean to discard its changes (the user is asked all the same)"}},"required":["action"],"additionalProperties":false}`),
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in exitInput) tool.Result {
			if env.AgentID != "" {
				return tool.Errorf("ExitWorktree moves the main session; a subagent cannot leave its worktree")
			}
			return m.exit(ctx, env, in)
		},
	})
	return []tool.Tool{enter, exit}
}

func (m *Main) enter(ctx context.Context, env *tool.Env, in enterInput) tool.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.active != nil {
		return tool.Errorf("this session already works in worktree %s (%s); leave it with ExitWorktree first", m.active.Slug, m.active.Path)
	}
	if _, err := os.Stat(filepath.Join(m.c.Root, ".git")); err != nil {
		return tool.Errorf("EnterWorktree needs a git repository, and %s is not in one; nothing was created", env.State.Cwd)
	}
	name := in.Name
	if name == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		name = "wt-" + hex.EncodeToString(b[:])
	}
	w := m.worktrees()
	slug := worktree.Slug(name)
	if _, err := os.Lstat(w.Path(slug)); err == nil {
		return tool.Errorf("a worktree named %s exists already (%s); choose another name, nothing was created", slug, w.Path(slug))
	}
	wt, err := w.Create(ctx, name)
	if err != nil {
		return tool.Errorf("EnterWorktree: %v; nothing was created", err)
	}
	rec := &Record{Slug: wt.Slug, Path: wt.Path, Branch: wt.Branch, Base: wt.Base, From: env.State.Cwd}
	m.active = rec
	m.c.Record(ctx, *rec)
	text := fmt.Sprintf("Now working in worktree %s at %s on branch %s (from %s). Paths resolve there; ExitWorktree returns.", wt.Slug, wt.Path, wt.Branch, rec.From)
	return tool.Result{Content: tool.Text(text).Content, Output: rec, Modifier: func(st *tool.State) { st.Cwd = wt.Path }}
}

func (m *Main) exit(ctx context.Context, env *tool.Env, in exitInput) tool.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.active
	if rec == nil {
		return tool.Errorf("this session is not in a worktree made by EnterWorktree; nothing to leave")
	}
	wt := &worktree.Worktree{Slug: rec.Slug, Path: rec.Path, Branch: rec.Branch, Base: rec.Base}
	w := m.worktrees()
	text := fmt.Sprintf("Left worktree %s; back in %s. The worktree and branch %s are kept at %s.", rec.Slug, rec.From, rec.Branch, rec.Path)
	switch in.Action {
	case "keep":
	case "remove":
		changed, err := w.Changed(ctx, wt)
		if err != nil {
			return tool.Errorf("ExitWorktree: cannot tell whether worktree %s has changes (%v); nothing was removed", rec.Slug, err)
		}
		if changed {
			if why, ok := m.askDiscard(ctx, env, rec); !ok {
				return tool.Errorf("worktree %s has uncommitted changes or new commits, and removing it was not allowed (%s). Nothing was removed; keep it with action keep", rec.Slug, why)
			}
		}
		if err := w.Remove(ctx, wt); err != nil {
			return tool.Errorf("ExitWorktree: %v", err)
		}
		text = fmt.Sprintf("Left and removed worktree %s (and branch %s); back in %s.", rec.Slug, rec.Branch, rec.From)
	default:
		return tool.Errorf(`action %q is not one of keep, remove`, in.Action)
	}
	m.active = nil
	m.c.Record(ctx, Record{})
	from := rec.From
	return tool.Result{Content: tool.Text(text).Content, Output: rec, Modifier: func(st *tool.State) { st.Cwd = from }}
}

// askDiscard asks the user whether the worktree's changes may be discarded. It asks whatever
// the rules and the mode say: removing uncommitted work cannot be undone, so the model's
// discard_changes is not enough. A headless run has no one to ask and refuses.
func (m *Main) askDiscard(ctx context.Context, env *tool.Env, rec *Record) (string, bool) {
	input, _ := json.Marshal(map[string]string{"action": "remove", "worktree": rec.Path, "branch": rec.Branch})
	req := permission.Request{Tool: ExitName, Paths: []string{rec.Path}, Cwd: rec.From, Input: input}
	if env != nil {
		req.ToolUseID = env.ToolUseID
	}
	reason := fmt.Sprintf("worktree %s (branch %s) has uncommitted changes or new commits; removing it discards them", rec.Slug, rec.Branch)
	return m.c.Ask(ctx, req, reason)
}
