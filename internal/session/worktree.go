package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/worktree"
)

// Tool names, as in Claude Code.
const (
	EnterWorktreeName = "EnterWorktree"
	ExitWorktreeName  = "ExitWorktree"
)

// worktrees is the manager of the project's worktrees, with the same safety as agent
// worktrees: git through gitexec, the repository's hooks and filters off until the workspace
// is trusted, WorktreeCreate/WorktreeRemove hooks honoured.
func (wk *mainWorktree) worktrees() *worktree.Manager {
	s := wk.s
	return &worktree.Manager{Root: s.projectDir, Trusted: s.conf.trusted(), Logger: s.logger,
		Hooks: worktree.HookStrategy{Runner: s.hooks, Input: func(in hooks.Input) hooks.Input { return s.hookd.Input(s.Cwd(), in) }}}
}

type enterWorktreeInput struct {
	Name string `json:"name,omitempty"`
}

type exitWorktreeInput struct {
	Action         string `json:"action"`
	DiscardChanges bool   `json:"discard_changes,omitempty"`
}

// worktreeTools are EnterWorktree and ExitWorktree: the main session moves its working
// directory — and so its tools, the status line and the paths its permissions resolve —
// into a new worktree of the repository (.keel/worktrees/<name> on branch keel/<name>), and
// back. Both are recorded in the transcript, so a resumed session lands where it was.
func (s *Session) worktreeTools() []tool.Tool {
	enter := tool.New(tool.Spec[enterWorktreeInput]{
		Name: EnterWorktreeName,
		Description: "Creates a git worktree of this repository (.keel/worktrees/<name>, on a new branch keel/<name>) and moves this session into it: " +
			"the working directory, the tools and the status line then work there, so changes stay apart from the main work tree. " +
			"Use it when the user asks to work in a worktree. ExitWorktree returns. Only in a git repository; the name must be new.",
		Schema:   json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Name of the worktree and its branch (default: a generated one)"}},"additionalProperties":false}`),
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in enterWorktreeInput) tool.Result {
			if env.AgentID != "" {
				return tool.Errorf("EnterWorktree moves the main session; a subagent is given a worktree with the Agent tool's isolation: \"worktree\"")
			}
			return s.wtree.enterWorktree(ctx, env, in)
		},
	})
	exit := tool.New(tool.Spec[exitWorktreeInput]{
		Name: ExitWorktreeName,
		Description: "Leaves the worktree EnterWorktree made and returns the session to the directory it came from. " +
			`action "keep" leaves the worktree and its branch for the user; "remove" deletes both — while the worktree has ` +
			"uncommitted changes or new commits, the user is asked first and nothing is removed unless they agree.",
		Schema: json.RawMessage(`{"type":"object","properties":{"action":{"type":"string","enum":["keep","remove"],"description":"keep the worktree, or remove it"},` +
			`"discard_changes":{"type":"boolean","description":"with remove: you mean to discard its changes (the user is asked all the same)"}},"required":["action"],"additionalProperties":false}`),
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in exitWorktreeInput) tool.Result {
			if env.AgentID != "" {
				return tool.Errorf("ExitWorktree moves the main session; a subagent cannot leave its worktree")
			}
			return s.wtree.exitWorktree(ctx, env, in)
		},
	})
	return []tool.Tool{enter, exit}
}

func (wk *mainWorktree) enterWorktree(ctx context.Context, env *tool.Env, in enterWorktreeInput) tool.Result {
	s := wk.s
	wk.wt.mu.Lock()
	defer wk.wt.mu.Unlock()
	if wk.wt.active != nil {
		return tool.Errorf("this session already works in worktree %s (%s); leave it with ExitWorktree first", wk.wt.active.Slug, wk.wt.active.Path)
	}
	if _, err := os.Stat(filepath.Join(s.projectDir, ".git")); err != nil {
		return tool.Errorf("EnterWorktree needs a git repository, and %s is not in one; nothing was created", env.State.Cwd)
	}
	name := in.Name
	if name == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		name = "wt-" + hex.EncodeToString(b[:])
	}
	m := wk.worktrees()
	slug := worktree.Slug(name)
	if _, err := os.Lstat(m.Path(slug)); err == nil {
		return tool.Errorf("a worktree named %s exists already (%s); choose another name, nothing was created", slug, m.Path(slug))
	}
	wt, err := m.Create(ctx, name)
	if err != nil {
		return tool.Errorf("EnterWorktree: %v; nothing was created", err)
	}
	rec := &worktreeRecord{Slug: wt.Slug, Path: wt.Path, Branch: wt.Branch, Base: wt.Base, From: env.State.Cwd}
	wk.wt.active = rec
	s.persist.recordMetadata(ctx, transcript.TypeWorktree, rec)
	text := fmt.Sprintf("Now working in worktree %s at %s on branch %s (from %s). Paths resolve there; ExitWorktree returns.", wt.Slug, wt.Path, wt.Branch, rec.From)
	return tool.Result{Content: tool.Text(text).Content, Output: rec, Modifier: func(st *tool.State) { st.Cwd = wt.Path }}
}

func (wk *mainWorktree) exitWorktree(ctx context.Context, env *tool.Env, in exitWorktreeInput) tool.Result {
	s := wk.s
	wk.wt.mu.Lock()
	defer wk.wt.mu.Unlock()
	rec := wk.wt.active
	if rec == nil {
		return tool.Errorf("this session is not in a worktree made by EnterWorktree; nothing to leave")
	}
	wt := &worktree.Worktree{Slug: rec.Slug, Path: rec.Path, Branch: rec.Branch, Base: rec.Base}
	m := wk.worktrees()
	text := fmt.Sprintf("Left worktree %s; back in %s. The worktree and branch %s are kept at %s.", rec.Slug, rec.From, rec.Branch, rec.Path)
	switch in.Action {
	case "keep":
	case "remove":
		changed, err := m.Changed(ctx, wt)
		if err != nil {
			return tool.Errorf("ExitWorktree: cannot tell whether worktree %s has changes (%v); nothing was removed", rec.Slug, err)
		}
		if changed {
			if why, ok := wk.askDiscard(ctx, env, rec); !ok {
				return tool.Errorf("worktree %s has uncommitted changes or new commits, and removing it was not allowed (%s). Nothing was removed; keep it with action keep", rec.Slug, why)
			}
		}
		if err := m.Remove(ctx, wt); err != nil {
			return tool.Errorf("ExitWorktree: %v", err)
		}
		text = fmt.Sprintf("Left and removed worktree %s (and branch %s); back in %s.", rec.Slug, rec.Branch, rec.From)
	default:
		return tool.Errorf(`action %q is not one of keep, remove`, in.Action)
	}
	wk.wt.active = nil
	s.persist.recordMetadata(ctx, transcript.TypeWorktree, worktreeRecord{})
	from := rec.From
	return tool.Result{Content: tool.Text(text).Content, Output: rec, Modifier: func(st *tool.State) { st.Cwd = from }}
}

// restoreWorktree puts a resumed session back in the worktree its transcript says it was in,
// if that worktree still exists.
func (wk *mainWorktree) restoreWorktree(st *transcript.State) {
	s := wk.s
	var rec worktreeRecord
	if raw := st.Metadata[transcript.TypeWorktree]; len(raw) == 0 || json.Unmarshal(raw, &rec) != nil || rec.Path == "" {
		return
	}
	if fi, err := os.Stat(rec.Path); err != nil || !fi.IsDir() {
		s.notices = append(s.notices, event.Notice{Level: "warn",
			Text: fmt.Sprintf("the worktree this session worked in (%s) is gone; it continues in %s", rec.Path, s.state.Cwd)})
		return
	}
	wk.wt.active = &rec
	s.state.Cwd = rec.Path
}

// askDiscard asks the user, through the session's permission asker, whether the worktree's
// changes may be discarded. It asks whatever the rules and the mode say (only deny rules
// and dontAsk refuse first): removing uncommitted work cannot be undone, so the model's
// discard_changes is not enough. A headless run has no one to ask and refuses.
func (wk *mainWorktree) askDiscard(ctx context.Context, env *tool.Env, rec *worktreeRecord) (string, bool) {
	s := wk.s
	input, _ := json.Marshal(map[string]string{"action": "remove", "worktree": rec.Path, "branch": rec.Branch})
	req := permission.Request{Tool: ExitWorktreeName, Paths: []string{rec.Path}, Cwd: rec.From, Input: input}
	if env != nil {
		req.ToolUseID = env.ToolUseID
	}
	reason := fmt.Sprintf("worktree %s (branch %s) has uncommitted changes or new commits; removing it discards them", rec.Slug, rec.Branch)
	d := s.checker.AskAnyway(ctx, req, reason, "")
	return d.Reason, d.Behavior == permission.Allow
}
