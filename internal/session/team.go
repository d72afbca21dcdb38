package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/teamstore"
	"github.com/keel-dev/keel/internal/transcript"
)

// TeamOptions configure agent teams.
type TeamOptions struct {
	// Enabled turns teams on (the teams setting and CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1 in
	// the environment or in settings' env do too).
	Enabled bool
	// Name names a new team; empty derives it from the session id.
	Name string
	// Mode is teammateMode (flag --teammate-mode); empty takes the setting, else in-process.
	Mode string
	// WorkerCommand starts a teammate as a process: the program and leading arguments of
	// `keel team worker` (with the provider flags); nil allows in-process teammates only.
	WorkerCommand []string
	// WorkerEnv is the workers' environment; nil inherits this process's.
	WorkerEnv []string
	// InTmux says the session runs inside tmux.
	InTmux bool
	// Lease is the claim lease (default team.DefaultLease); ShutdownTimeout bounds a
	// graceful shutdown.
	Lease           time.Duration
	ShutdownTimeout time.Duration
	// Worker makes this session the host of one teammate of an existing team (`keel team
	// worker`) instead of a lead.
	Worker *TeamWorker
}

// TeamWorker names the teammate a worker session runs.
type TeamWorker struct {
	Team, Member string
	Resume       bool
	// LeadTranscript is the lead session's transcript: the teammate's own transcript lives
	// beside it, so the lead's --continue finds it.
	LeadTranscript string
	// Events receives the teammate's events (the worker prints them).
	Events func(event.Event)
	// Remote says the worker joined the team by itself (`keel worker`, on any host) rather
	// than being started by the lead: it becomes a member of its own, which claims tasks
	// from the board.
	Remote bool
}

// teamFile is the session's note of its team, beside its transcript, so --continue finds
// the team again.
type teamFile struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
	Dir     string `json:"dir"`
}

// TeamHandle is the session's agent team: it opens the team (picking its backend), brings
// a resumed lead's teammates back, runs a worker's teammate and closes the team with the
// session. Opening is wiring of the whole session (hooks, agents, transcript), hence s.
type TeamHandle struct {
	s *Session
	// team is nil when the session has none; backend is its store; temp a directory to
	// remove when the session has no keel directory.
	team    *team.Team
	backend coord.Backend
	temp    string
}

// Team returns the session's team handle.
func (s *Session) Team() *TeamHandle { return &s.teams }

// teamsEnabled says whether this session has a team.
func (h *TeamHandle) teamsEnabled() bool {
	s := h.s
	o := s.opts.Team
	if o.Worker == nil && s.opts.DetachedFrom != "" {
		// A supervisor's job (a background agent, a scheduled run) runs one agent for its
		// session; settings that switch teams on must not make it lead that team again.
		return false
	}
	if o.Enabled || o.Worker != nil || s.settings.Teams.V {
		return true
	}
	if v, ok := s.settings.Env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"]; ok && runconfig.Truthy(v.V) {
		return true
	}
	return false
}

// buildTeam opens the session's team (after the agents, whose runner hosts teammates) and,
// on resume, brings its teammates back.
func (h *TeamHandle) buildTeam(ctx context.Context, resumed bool) error {
	s := h.s
	if !h.teamsEnabled() {
		return nil
	}
	o := s.opts.Team
	store, name, err := h.teamLocation(resumed)
	if err != nil {
		return err
	}
	dir := store.TeamDir(name)
	be, err := h.openTeamBackend(ctx, store, name)
	if err != nil {
		return err
	}
	mode := o.Mode
	if mode == "" {
		mode = s.settings.TeammateMode.V
	}
	cfg := team.Config{
		Name: name, Backend: be, Lead: o.Worker == nil, LeadName: s.opts.Agent,
		Host: teamHost{s}, Mode: mode, LeadAsker: h.leadAsker(),
		Hooks:     s.hooks,
		HookInput: func(in hooks.Input) hooks.Input { return s.hookd.hookInput(s.Cwd(), in) },
		Lease:     o.Lease, ShutdownTimeout: o.ShutdownTimeout,
		Peers: h.teamPeers, Emit: s.emitAgent, Logger: s.logger,
		LeadTranscript: h.agentSessionPath(),
	}
	if len(o.WorkerCommand) > 0 && o.Worker == nil {
		launcher, err := h.teammateLauncher(dir)
		if err != nil {
			_ = be.Close()
			return err
		}
		cfg.Launcher = launcher
	}
	t, err := team.Open(ctx, cfg)
	if err != nil {
		_ = be.Close()
		return err
	}
	h.team, h.backend = t, be
	s.agents.runner.SetTeam(t)
	s.builtins = append(s.builtins, t.Tools()...)
	if o.Worker == nil {
		if in := t.LeadInbox(); in != nil && len(s.history) > 0 {
			in.Reconcile(ctx, s.history)
		}
	}
	return nil
}

// teammateLauncher starts process teammates with `keel team worker --config FILE`, FILE
// holding this session's configuration (runconfig.Config.Teammate makes each member's of
// it): a process teammate is configured as its lead was, flags, agents and coordination
// included.
func (h *TeamHandle) teammateLauncher(dir string) (*team.ExecLauncher, error) {
	s := h.s
	o := s.opts.Team
	path := filepath.Join(dir, "launch.json")
	if err := s.opts.Run.Write(path); err != nil {
		return nil, fmt.Errorf("team %s: %w", filepath.Base(dir), err)
	}
	command := append(slices.Clip(o.WorkerCommand), "--config", path)
	return &team.ExecLauncher{Command: command, Env: o.WorkerEnv, LogDir: filepath.Join(dir, "logs"), Tmux: o.InTmux,
		TmuxEnv: []string{"KEEL_*", "ANTHROPIC_*", "OPENAI_*", "CLAUDE_*", "HOME", "PATH"}, Logger: s.logger}, nil
}

// resumeTeam brings a resumed lead's teammates back, once the main agent is wired.
func (h *TeamHandle) resumeTeam(ctx context.Context) {
	s := h.s
	if h.team == nil || s.opts.Team.Worker != nil {
		return
	}
	back, err := h.team.Resume(ctx)
	if err != nil {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: err.Error()})
	}
	if len(back) > 0 {
		s.notices = append(s.notices, event.Notice{Level: "info", Text: fmt.Sprintf("team %s: resumed %s", h.team.Name(), strings.Join(back, ", "))})
	}
}

// teamLocation picks the team's store and name: the worker's team, the one a resumed
// session had, or a new one.
func (h *TeamHandle) teamLocation(resumed bool) (teamstore.Store, string, error) {
	s := h.s
	home := s.opts.Home
	if home == "" {
		dir, err := os.MkdirTemp("", "keel-team-")
		if err != nil {
			return teamstore.Store{}, "", fmt.Errorf("team directory: %w", err)
		}
		h.temp = dir
		home = dir
	}
	store := h.teamStore(home)
	if w := s.opts.Team.Worker; w != nil {
		if err := coord.CheckName(w.Team); err != nil {
			return store, "", fmt.Errorf("team worker: %w", err)
		}
		return store, w.Team, nil
	}
	side := h.teamFilePath()
	if resumed && side != "" {
		var f teamFile
		if b, err := os.ReadFile(side); err == nil && json.Unmarshal(b, &f) == nil && f.Name != "" {
			return store, f.Name, nil
		}
	}
	name := s.opts.Team.Name
	if name == "" {
		name = "team-" + strings.ReplaceAll(s.id, "-", "")[:8]
	}
	if err := coord.CheckName(name); err != nil {
		return store, "", fmt.Errorf("team name: %w", err)
	}
	if side != "" {
		b, _ := json.MarshalIndent(teamFile{Name: name, Backend: store.Backend, Dir: store.TeamDir(name)}, "", "  ")
		if err := os.MkdirAll(filepath.Dir(side), 0o700); err == nil {
			_ = os.WriteFile(side, append(b, '\n'), 0o600)
		}
	}
	return store, name, nil
}

// agentSessionPath is the transcript subagents' and teammates' transcripts go beside: the
// session's own, or for a team worker the lead's.
func (h *TeamHandle) agentSessionPath() string {
	s := h.s
	if w := s.opts.Team.Worker; w != nil && w.LeadTranscript != "" {
		return w.LeadTranscript
	}
	return s.TranscriptPath()
}

func (h *TeamHandle) teamFilePath() string {
	s := h.s
	if p := s.TranscriptPath(); p != "" {
		return filepath.Join(transcript.SessionDir(p), "team.json")
	}
	return ""
}

// leadAsker is the lead's UI for teammates' questions: the session's asker when someone is
// there to answer (terminal, SDK control channel, permission-prompt tool), else nil.
func (h *TeamHandle) leadAsker() permission.Asker {
	s := h.s
	switch {
	case s.opts.MCP.PermissionPromptTool != "":
		return promptToolAsker{s, s.opts.MCP.PermissionPromptTool}
	case s.opts.Asker != nil:
		return notifyingAsker{s, s.opts.Asker}
	}
	return nil
}

// teamPeers lists what ListAgents shows besides the team: running subagents and the leads
// of other teams on this machine.
func (h *TeamHandle) teamPeers(ctx context.Context) []string {
	s := h.s
	var out []string
	if s.agents != nil {
		for _, t := range s.agents.tasks.List() {
			if t.Kind == "local_agent" {
				out = append(out, fmt.Sprintf("subagent %s (%s) — %s, reach it with SendMessage to its id", t.ID, t.Description, t.Status))
			}
		}
	}
	if h.backend == nil {
		return out
	}
	// The other teams of the store, on either backend: their leads' records say whether a
	// session leads them now.
	teams, _ := h.backend.Teams(ctx, "members/"+team.LeadAlias)
	for _, t := range teams {
		var r team.Record
		if t.Name == h.team.Name() || t.Record.Revision == 0 || json.Unmarshal(t.Record.Value, &r) != nil {
			continue
		}
		if r.State != team.StateStopped && time.Since(r.Heartbeat) < time.Minute {
			out = append(out, fmt.Sprintf("keel session leading team %s (pid %d) — another session; not reachable from this team", t.Name, r.PID))
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

// Current returns the session's team, or nil.
func (h *TeamHandle) Current() *team.Team {
	return h.team
}

// RunTeammate runs the teammate a worker session hosts until it stops.
func (h *TeamHandle) RunTeammate(ctx context.Context) error {
	s := h.s
	w := s.opts.Team.Worker
	if w == nil || h.team == nil {
		return errors.New("this session is not a team worker")
	}
	if w.Remote {
		return h.team.JoinRemote(ctx, w.Member, w.Resume)
	}
	return h.team.Join(ctx, w.Member, w.Resume)
}

func (h *TeamHandle) closeTeam() {
	if h.team != nil {
		_ = h.team.Close()
	}
	if h.backend != nil {
		_ = h.backend.Close()
	}
	if h.temp != "" {
		_ = os.RemoveAll(h.temp)
	}
}

// waitTeam is WaitBackground's part for the team: it returns how many messages wait for
// the lead, or 0 once the team has settled — after shutting it down.
func (h *TeamHandle) waitTeam(ctx context.Context) (int, error) {
	s := h.s
	if h.team == nil || h.team.LeadInbox() == nil {
		return 0, nil
	}
	n, err := h.team.WaitLead(ctx)
	if err != nil || n > 0 {
		return n, err
	}
	if err := h.team.Shutdown(ctx, "the lead's work is done"); err != nil {
		s.logger.Warn("shut down team", "err", err)
		s.emit(event.Notice{Level: "warn", Text: err.Error()})
	}
	return 0, nil
}

// LeadUnread counts the messages waiting for the team lead that should wake it.
func (h *TeamHandle) LeadUnread(ctx context.Context) int {
	if h.team == nil || h.team.LeadInbox() == nil {
		return 0
	}
	return h.team.LeadInbox().Unread(ctx)
}
