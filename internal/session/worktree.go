package session

import (
	"context"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/mainworktree"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/transcript"
)

// Tool names, as in Claude Code.
const (
	EnterWorktreeName = mainworktree.EnterName
	ExitWorktreeName  = mainworktree.ExitName
)

// newMainWorktree wires the main agent's move into a worktree (internal/mainworktree) to the
// project, trust, hooks, transcript, permission asker and working directory. It is built once
// the transcript opened (its records go there, and its logger names the session's id); the
// hooks and the checker are reached when called.
func newMainWorktree(s *Session) *mainworktree.Main {
	return mainworktree.New(mainworktree.Config{
		Root:      s.projectDir,
		Trusted:   s.conf.trusted,
		Hooks:     sessionHooks{s},
		HookInput: func(in hooks.Input) hooks.Input { return s.hookd.Input(s.Cwd(), in) },
		Record: func(ctx context.Context, r mainworktree.Record) {
			s.persist.recordMetadata(ctx, transcript.TypeWorktree, r)
		},
		Ask: func(ctx context.Context, req permission.Request, reason string) (string, bool) {
			d := s.checker.AskAnyway(ctx, req, reason, "")
			return d.Reason, d.Behavior == permission.Allow
		},
		Cwd: s.Cwd,
		SetCwd: func(dir string) {
			s.mu.Lock()
			s.state.Cwd = dir
			s.mu.Unlock()
		},
		Warn:   func(text string) { s.notices = append(s.notices, event.Notice{Level: "warn", Text: text}) },
		Logger: s.logger,
	})
}
