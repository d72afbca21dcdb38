package worktree

import (
	"context"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/hooks"
)

// HookStrategy lets WorktreeCreate / WorktreeRemove hooks replace the git strategy, as in
// Claude Code: a WorktreeCreate hook prints the absolute path of the worktree it made on
// stdout; a WorktreeRemove hook gets worktree_path. With no hook configured for an event,
// the git strategy runs.
type HookStrategy struct {
	Runner hooks.EventRunner
	// Input fills the fields every hook input carries (session id, cwd, …).
	Input func(hooks.Input) hooks.Input
}

var _ Hooks = HookStrategy{}

func (h HookStrategy) input(in hooks.Input) hooks.Input {
	if h.Input != nil {
		return h.Input(in)
	}
	return in
}

// CreateWorktree runs the WorktreeCreate hooks with the worktree's name.
func (h HookStrategy) CreateWorktree(ctx context.Context, name string) (string, bool, error) {
	out := h.Runner.Run(ctx, hooks.WorktreeCreate, h.input(hooks.Input{Extra: map[string]any{"name": name}}))
	if len(out.Results) == 0 {
		return "", false, nil
	}
	for _, r := range out.Results {
		if r.Err != nil {
			return "", true, r.Err
		}
		if r.ExitCode != 0 {
			return "", true, fmt.Errorf("%s exited %d: %s", r.Command, r.ExitCode, strings.TrimSpace(r.Stderr))
		}
	}
	path := strings.TrimSpace(out.Results[len(out.Results)-1].Stdout)
	if path == "" {
		return "", true, fmt.Errorf("the hook printed no worktree path")
	}
	return path, true, nil
}

// RemoveWorktree runs the WorktreeRemove hooks with the worktree's path.
func (h HookStrategy) RemoveWorktree(ctx context.Context, path string) (bool, error) {
	out := h.Runner.Run(ctx, hooks.WorktreeRemove, h.input(hooks.Input{WorktreePath: path}))
	if len(out.Results) == 0 {
		return false, nil
	}
	for _, r := range out.Results {
		if r.Err != nil {
			return true, r.Err
		}
	}
	return true, nil
}
