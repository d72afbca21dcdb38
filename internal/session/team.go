package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/teamopen"
)

// This file wires the session's agent team; opening it, choosing its backend and listing its
// peers are teamopen's.

// Team returns the session's team handle.
func (s *Session) Team() *teamopen.Handle { return s.teams }

// team is the session's handle on its team, before the agents are built: their runner
// hosts teammates and asks whether the session has a team and where its transcripts go.
func (c *configWiring) team() *teamopen.Handle {
	s := c.s
	return teamopen.New(teamopen.Config{
		Options: s.opts.Team, Settings: s.settings, Detached: s.opts.DetachedFrom != "",
		Home: s.opts.Home, Coordination: s.opts.Coordination,
		SessionID: s.id, TranscriptPath: s.TranscriptPath(), LeadName: s.opts.Agent, Run: s.opts.Run,
		Host: teamHost{s}, LeadAsker: c.leadAsker(),
		Hooks:     s.hooks,
		HookInput: func(in hooks.Input) hooks.Input { return s.hookd.Input(s.Cwd(), in) },
		Subagents: c.subagentLines,
		Emit:      s.emitAgent, Notify: s.emit, Logger: s.logger,
	})
}

// openTeam opens the session's team (after the agents, whose runner hosts teammates) and
// gives its tools to the main agent; on resume its inbox is reconciled with the history.
func (c *configWiring) openTeam(ctx context.Context, resumed bool) error {
	s := c.s
	t, err := s.teams.Open(ctx, resumed, s.history)
	if err != nil || t == nil {
		return err
	}
	s.agents.runner.SetTeam(t)
	s.builtins = append(s.builtins, t.Tools()...)
	return nil
}

// leadAsker is the lead's UI for teammates' questions: the session's asker when someone is
// there to answer (terminal, SDK control channel, permission-prompt tool), else nil.
func (c *configWiring) leadAsker() permission.Asker {
	s := c.s
	switch {
	case s.opts.MCP.PermissionPromptTool != "":
		return promptToolAsker{s, s.opts.MCP.PermissionPromptTool}
	case s.opts.Asker != nil:
		return notifyingAsker{s, s.opts.Asker}
	}
	return nil
}

// subagentLines are the session's running subagents as ListAgents shows them beside the
// team.
func (c *configWiring) subagentLines() []string {
	s := c.s
	var out []string
	if s.agents != nil {
		for _, t := range s.agents.tasks.List() {
			if t.Kind == "local_agent" {
				out = append(out, fmt.Sprintf("subagent %s (%s) — %s, reach it with SendMessage to its id", t.ID, t.Description, t.Status))
			}
		}
	}
	return out
}

// teamHost builds teammates' loops over the subagent runner.
type teamHost struct{ s *Session }

func (h teamHost) PrepareTeammate(ctx context.Context, spec team.Spec, seams team.MemberSeams) (*team.Prepared, error) {
	if h.s.agents == nil {
		return nil, errors.New("agents are not available in this session")
	}
	return h.s.agents.runner.PrepareTeammate(ctx, spec, seams)
}
