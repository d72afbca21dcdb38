package subagent

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/keel-dev/keel/internal/compact"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/transcript"
)

// mate is what makes a child a teammate: its name and colour, the team's asker for its
// permission questions, its system prompt, its inbox and what acks it.
type mate struct {
	name, color string
	asker       permission.Asker
	addendum    string
	mode        string
	observers   []loop.Observer
	synced      func(ctx context.Context, err error) error
	// systemMode is default, replace or append (see [mate.system]); systemPrompt goes with
	// the last two.
	systemMode   string
	systemPrompt string
}

func (s spawn) permissionMode() string {
	if s.mate != nil && s.mate.mode != "" {
		return s.mate.mode
	}
	return string(s.def.PermissionMode)
}

// system renders a teammate's system prompt. default: the lead's whole prompt, the team
// addendum and the definition's instructions; replace: only the given prompt; append: the
// default and then the given prompt. The teammate's name comes last, so teammates of one
// lead share every cached byte before it.
func (m *mate) system(parent func(context.Context) loop.System, def *agentdef.Definition) func(context.Context) loop.System {
	return func(ctx context.Context) loop.System {
		var sys loop.System
		if m.systemMode == "replace" {
			sys = loop.System{Blocks: []provider.SystemBlock{{Text: m.systemPrompt}}, Names: []string{"teammate:replace"}}
		} else {
			base := parent(ctx)
			sys.Blocks = append(sys.Blocks, base.Blocks...)
			sys.Names = append(sys.Names, base.Names...)
			sys.Blocks = append(sys.Blocks, provider.SystemBlock{Text: m.addendum})
			sys.Names = append(sys.Names, "teammate")
			if def.Prompt != "" {
				sys.Blocks = append(sys.Blocks, provider.SystemBlock{Text: "# Custom Agent Instructions\n" + def.Prompt})
				sys.Names = append(sys.Names, "agent:"+def.Name)
			}
			if m.systemMode == "append" && m.systemPrompt != "" {
				sys.Blocks = append(sys.Blocks, provider.SystemBlock{Text: m.systemPrompt})
				sys.Names = append(sys.Names, "teammate:append")
			}
		}
		sys.Blocks = append(sys.Blocks, provider.SystemBlock{Text: fmt.Sprintf("Your name in the team is %s.", m.name)})
		sys.Names = append(sys.Names, "teammate:name")
		return sys
	}
}

// PrepareTeammate builds the loop of a teammate started by the main thread: a child of the
// main agent (cloned file state, fresh denial tracking, its own transcript
// agent-<id>.jsonl beside the session's), asking through asker, with the team's tools and
// without the Agent tool. With spec.Resume it continues from that transcript. The team
// package runs the loop; Prepared.Close ends what this started.
func (r *Runner) PrepareTeammate(ctx context.Context, spec team.Spec, seams team.MemberSeams) (*team.Prepared, error) {
	main := r.node("")
	if main == nil {
		return nil, errors.New("the session has not started its main agent yet")
	}
	agentType := spec.AgentType
	if agentType == "" {
		agentType = "general-purpose"
	}
	def, ok := r.cfg.Defs.Get(agentType)
	if !ok {
		return nil, fmt.Errorf("agent type %q not found; available agents: %s", agentType, r.available())
	}
	s := spawn{parent: main, def: def, id: spec.ID, foreground: true,
		in: Input{Description: "teammate " + spec.Name, Prompt: spec.Prompt, Model: spec.Model, Isolation: spec.Isolation},
		mate: &mate{name: spec.Name, color: spec.Color, asker: seams.Asker, addendum: seams.Addendum, mode: spec.Mode,
			systemMode: spec.SystemPromptMode, systemPrompt: spec.SystemPrompt, observers: seams.Observers, synced: seams.Synced}}
	path := ""
	if r.cfg.SessionPath != "" {
		path, _ = transcript.AgentPaths(r.cfg.SessionPath, spec.ID)
		if _, err := os.Stat(path); err == nil && spec.Resume {
			w, st, err := transcript.Resume(ctx, path, transcript.Options{SessionID: r.cfg.SessionID, Version: r.cfg.Version})
			if err != nil {
				return nil, fmt.Errorf("resume teammate %s: %w", spec.Name, err)
			}
			s.writer, s.history = w, append([]message.Message{}, compact.History(st)...)
		}
	}
	c, err := r.prepare(ctx, s)
	if err != nil {
		if s.writer != nil {
			_ = s.writer.Close()
		}
		return nil, err
	}
	r.mu.Lock()
	r.agents[c.n.id] = c.n
	r.mu.Unlock()
	if c.sink.w != nil {
		path = c.sink.w.Path()
	}
	closed := false
	lead := main.p.Checker
	return &team.Prepared{
		Agent: c.agent, History: c.history, Initial: c.initial, Transcript: path,
		LeavePlan: func() {
			if c.checker.Policy().Mode == permission.ModePlan {
				c.checker.SetMode(lead.Policy().Mode)
			}
		},
		Close: func() {
			if closed {
				return
			}
			closed = true
			r.mu.Lock()
			delete(r.agents, c.n.id)
			r.mu.Unlock()
			if err := r.cfg.Tasks.Adopt(c.n.id, background.MainOwner); err != nil {
				r.logger.Warn("hand teammate's background tasks to the lead", "agent", c.n.id, "err", err)
			}
			c.closeMCP(r)
			if c.wt != nil {
				r.finishWorktree(context.Background(), c)
			}
			if c.sink.w != nil {
				if err := c.sink.w.Close(); err != nil {
					r.logger.Error("close teammate transcript", "agent", c.n.id, "err", err)
				}
			}
		},
	}, nil
}
