package team

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/tool"
)

// SpawnInput is the part of an Agent call that spawns a teammate.
type SpawnInput struct {
	Name         string
	TeamName     string
	Prompt       string
	Description  string
	SubagentType string
	Model        string
	Isolation    string
	// Mode is the teammate's permission mode (Claude Code's mode field).
	Mode string
}

// SpawnOutput is the structured result of a spawn (hooks' tool_response).
type SpawnOutput struct {
	Status   string `json:"status"` // teammate_spawned
	Name     string `json:"name"`
	AgentID  string `json:"agent_id"`
	Color    string `json:"color"`
	TeamName string `json:"team_name"`
	Runner   string `json:"runner"`
	Resumed  bool   `json:"resumed,omitempty"`
}

// Spawn starts a teammate for an Agent call with a name, from agent agentID (only the lead
// spawns). A name that is taken by a live member is refused — message it instead; a
// stopped or dead member of that name comes back with its history.
func (t *Team) Spawn(ctx context.Context, agentID string, in SpawnInput) tool.Result {
	if !t.cfg.Lead || agentID != "" {
		return tool.Errorf("only the team lead spawns teammates; ask the lead with SendMessage if the team needs more hands")
	}
	if err := validName(in.Name); err != nil {
		return tool.Errorf("%v", err)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return tool.Errorf("prompt is required: the teammate's first task, self-contained (it does not see this conversation)")
	}
	// One spawn at a time: parallel Agent calls must not pick the same colour or name.
	t.spawnMu.Lock()
	defer t.spawnMu.Unlock()
	recs, _ := t.records(ctx)
	spec := Spec{Name: in.Name, AgentType: in.SubagentType, Prompt: in.Prompt, Model: in.Model, Isolation: in.Isolation, Mode: in.Mode}
	resumed := false
	for _, r := range recs {
		if r.Name != in.Name {
			continue
		}
		switch state := t.liveness(r); state {
		case StateStopped, StateDead:
			spec = r.Spec
			spec.Resume, resumed = true, true
		default:
			return tool.Errorf("a teammate named %s already exists and is %s; send it the work with SendMessage instead of spawning a duplicate (which would lose its context)", in.Name, state)
		}
	}
	if spec.AgentType == "" {
		spec.AgentType = "general-purpose"
	}
	if spec.ID == "" {
		spec.ID = newAgentID()
	}
	if spec.Color == "" {
		spec.Color = nextColor(recs)
	}
	runner, err := t.runnerFor()
	if err != nil {
		return tool.Errorf("%v", err)
	}
	if resumed {
		spec.Resume = true
		if err := t.reviveMail(ctx, spec.Name, in.Prompt); err != nil {
			return tool.Errorf("%v", err)
		}
	}
	if err := t.launch(ctx, spec, runner); err != nil {
		return tool.Errorf("start teammate %s: %v", in.Name, err)
	}
	var b strings.Builder
	verb := "Spawned"
	if resumed {
		verb = "Resumed"
	}
	fmt.Fprintf(&b, "%s teammate %s (agent id %s, colour %s) in team %s, running %s.\n", verb, spec.Name, spec.ID, spec.Color, t.cfg.Name, runner)
	if in.TeamName != "" && in.TeamName != t.cfg.Name {
		fmt.Fprintf(&b, "(This session's team is %s; team_name %q was taken to mean it.)\n", t.cfg.Name, in.TeamName)
	}
	b.WriteString("It works on its own from the prompt you gave and the team's task board; its messages reach you as <teammate-message> blocks. " +
		"Message it with SendMessage (to: its name). Do not wait for it by polling: you are woken when a teammate writes to you.")
	return tool.Result{Content: tool.Text(b.String()).Content,
		Output: SpawnOutput{Status: "teammate_spawned", Name: spec.Name, AgentID: spec.ID, Color: spec.Color, TeamName: t.cfg.Name, Runner: runner, Resumed: resumed}}
}

// reviveMail hands a resumed teammate the prompt it was spawned again with, as a message.
func (t *Team) reviveMail(ctx context.Context, name, prompt string) error {
	msg := coord.Message{ID: newID(), From: LeadAlias, To: name, Text: prompt, Summary: "resumed"}
	return t.be.Mailbox().Send(ctx, msg)
}

// runnerFor picks where a new teammate runs, from teammateMode.
func (t *Team) runnerFor() (string, error) {
	switch t.cfg.Mode {
	case "", "in-process":
		return RunnerInProcess, nil
	case "auto":
		if t.cfg.Launcher != nil && t.cfg.Launcher.InTmux() {
			return RunnerTmux, nil
		}
		return RunnerInProcess, nil
	case "process", "tmux":
		if t.cfg.Launcher == nil {
			return "", fmt.Errorf("teammateMode %s needs keel to start teammates as processes, which this session cannot (a library session); use in-process", t.cfg.Mode)
		}
		if t.cfg.Mode == "tmux" {
			return RunnerTmux, nil
		}
		return RunnerProcess, nil
	}
	return "", fmt.Errorf("teammateMode %q is not one of in-process, process, tmux, auto", t.cfg.Mode)
}

// launch starts a teammate in this process or as a process of its own.
func (t *Team) launch(ctx context.Context, spec Spec, runner string) error {
	if runner == RunnerInProcess {
		_, err := t.start(ctx, spec, runner)
		return err
	}
	now := t.cfg.Now()
	rec := Record{ID: spec.ID, Name: spec.Name, Color: spec.Color, AgentType: spec.AgentType, Model: spec.Model, Runner: runner,
		State: StateWorking, Host: t.host, Heartbeat: now, Started: now, Spec: spec}
	if old, err := t.record(ctx, spec.Name); err == nil {
		rec.Started, rec.Transcript, rec.Usage, rec.Turns = old.Started, old.Transcript, old.Usage, old.Turns
	}
	if err := t.putRecord(ctx, rec); err != nil {
		return err
	}
	p, err := t.cfg.Launcher.Launch(ctx, Launch{Team: t.cfg.Name, Member: spec.Name, LeadTranscript: t.cfg.LeadTranscript, Tmux: runner == RunnerTmux, Resume: spec.Resume})
	if err != nil {
		rec.State = StateStopped
		_ = t.putRecord(ctx, rec)
		return err
	}
	return t.updateRecord(ctx, spec.Name, func(r *Record) {
		if r.PID == 0 {
			r.PID = p.PID
		}
		if p.Pane != "" {
			r.Pane = p.Pane
		}
	})
}

// Join runs one member in this process (a `keel team worker` process): the member whose
// record names it, resumed from its transcript when it has one. It returns when the member
// stops.
func (t *Team) Join(ctx context.Context, name string, resume bool) error {
	rec, err := t.record(ctx, name)
	if err != nil {
		return fmt.Errorf("join team %s as %s: %w", t.cfg.Name, name, err)
	}
	spec := rec.Spec
	spec.Resume = resume || rec.Transcript != ""
	runner := rec.Runner
	if runner == "" || runner == RunnerInProcess {
		runner = RunnerProcess
	}
	m, err := t.start(ctx, spec, runner)
	if err != nil {
		return err
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		m.cancel(context.Cause(ctx))
		<-m.done
	}
	return nil
}

func newAgentID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "a" + hex.EncodeToString(b[:])
}
