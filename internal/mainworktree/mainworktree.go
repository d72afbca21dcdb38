// Package mainworktree moves a session's main agent into a new worktree of the project and
// back: the EnterWorktree and ExitWorktree tools change the main agent's working directory —
// and so its tools, the status line and the paths its permissions resolve — and record the
// move in the transcript, so a resumed session lands where it was ([Main.Restore]). A
// subagent is given a worktree otherwise (the Agent tool's isolation), by internal/subagent;
// both make worktrees with internal/worktree, with the same safety.
//
// What it needs of the session it names in [Config], as fields and functions: the package
// knows no session, so the move can be built and tested on its own.
package mainworktree

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/worktree"
)

// Tool names, as in Claude Code.
const (
	EnterName = "EnterWorktree"
	ExitName  = "ExitWorktree"
)

// Record is the main agent's worktree as the transcript records it
// (transcript.TypeWorktree); the zero value is none.
type Record struct {
	Slug   string `json:"slug,omitempty"`
	Path   string `json:"path,omitempty"`
	Branch string `json:"branch,omitempty"`
	Base   string `json:"base,omitempty"`
	// From is the working directory the session left for it, where ExitWorktree returns.
	From string `json:"from,omitempty"`
}

// Config is what the move needs. Root, Record and Ask are required; a nil Hooks runs no
// WorktreeCreate or WorktreeRemove hooks, a nil Trusted is an untrusted workspace.
type Config struct {
	// Root is the project's main work tree.
	Root string
	// Trusted says the workspace is trusted: git runs the repository's hooks and filters.
	Trusted func() bool
	// Hooks run the WorktreeCreate and WorktreeRemove hooks, which may take over; HookInput
	// fills the fields every hook input carries.
	Hooks     hooks.EventRunner
	HookInput func(hooks.Input) hooks.Input
	// Record keeps the main agent's worktree in the transcript (the zero Record: none).
	Record func(ctx context.Context, r Record)
	// Ask asks the user whether req may go ahead whatever the rules and the mode say (only
	// deny rules and dontAsk refuse first); it returns the decision's reason and whether it
	// was allowed.
	Ask func(ctx context.Context, req permission.Request, reason string) (why string, ok bool)
	// Cwd is the main agent's working directory; SetCwd moves it, on resume.
	Cwd    func() string
	SetCwd func(dir string)
	// Warn tells the user of a problem: the worktree a resumed session worked in is gone.
	Warn   func(text string)
	Logger *slog.Logger
}

// Main is the worktree the main agent works in. It is safe for concurrent use.
type Main struct {
	c Config
	// mu guards active.
	mu     sync.Mutex
	active *Record
}

// New returns the main agent's worktree move, in no worktree yet.
func New(c Config) *Main { return &Main{c: c} }

// Active is the worktree the main agent works in, nil when none.
func (m *Main) Active() *Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.active == nil {
		return nil
	}
	r := *m.active
	return &r
}

// worktrees is the manager of the project's worktrees, with the same safety as agent
// worktrees: git through gitexec, the repository's hooks and filters off until the workspace
// is trusted, WorktreeCreate/WorktreeRemove hooks honoured.
func (m *Main) worktrees() *worktree.Manager {
	w := &worktree.Manager{Root: m.c.Root, Trusted: m.c.Trusted != nil && m.c.Trusted(), Logger: m.c.Logger}
	if m.c.Hooks != nil {
		w.Hooks = worktree.HookStrategy{Runner: m.c.Hooks, Input: m.c.HookInput}
	}
	return w
}

// Restore puts a resumed session back in the worktree its transcript recorded (raw, the
// transcript's TypeWorktree metadata), if that worktree still exists; else it warns and the
// session stays where it is.
func (m *Main) Restore(raw json.RawMessage) {
	var rec Record
	if len(raw) == 0 || json.Unmarshal(raw, &rec) != nil || rec.Path == "" {
		return
	}
	if fi, err := os.Stat(rec.Path); err != nil || !fi.IsDir() {
		if m.c.Warn != nil {
			m.c.Warn(fmt.Sprintf("the worktree this session worked in (%s) is gone; it continues in %s", rec.Path, m.c.Cwd()))
		}
		return
	}
	m.mu.Lock()
	m.active = &rec
	m.mu.Unlock()
	m.c.SetCwd(rec.Path)
}
