package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/subagent"
)

// AgentLister is an optional ability of a [subagent.Detacher]: the agents it still runs for
// a session, which the session mirrors again when it is opened (keel --continue after the
// process that started them exited).
type AgentLister interface {
	RunningAgents(ctx context.Context, sessionID string) ([]subagent.DetachedAgent, error)
}

// reattachAgents mirrors the background agents the supervisor still runs for this session.
func (s *Session) reattachAgents(ctx context.Context) {
	lister, ok := s.opts.Detacher.(AgentLister)
	if !ok || s.opts.DetachedFrom != "" {
		return
	}
	running, err := lister.RunningAgents(ctx, s.id)
	if err != nil {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: fmt.Sprintf("background agents in the supervisor: %v", err)})
		return
	}
	for _, a := range running {
		if err := s.agents.runner.Reattach(a); err != nil {
			s.logger.Warn("reattach background agent", "agent", a.ID, "err", err)
		}
	}
}

// RunDetached runs a background agent that another process of this session handed to the
// supervisor, to its end, and returns its final text. The session must have been opened with
// [Options.DetachedFrom].
func (a *Agents) RunDetached(ctx context.Context, d subagent.DetachedAgent) (string, error) {
	if !a.detached {
		return "", errors.New("run detached agent: the session was not opened for one (Options.DetachedFrom)")
	}
	return a.runner.RunDetached(ctx, d)
}
