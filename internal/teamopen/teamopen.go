// Package teamopen opens a session's agent team: whether the session has one, which team it
// is (a worker's, the one a resumed session noted beside its transcript, or a new one), the
// backend it is kept on (teamstore's one choice, NATS or files), how process teammates are
// launched, and what ListAgents shows besides the team — the session's subagents and the
// leads of the store's other teams, listed through the backend ([coord.Backend.Teams]) so
// both backends answer alike. It closes the team with the session and, for WaitBackground,
// waits for it to settle.
//
// The session gives it what it uses (settings, directories, hooks, the teammates' host, its
// emitters) in a [Config]; nothing here reaches back into the session.
package teamopen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/envvar"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/teamstore"
	"github.com/keel-dev/keel/internal/transcript"
)

// Options configure agent teams.
type Options struct {
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
	Worker *Worker
}

// Worker names the teammate a worker session runs.
type Worker struct {
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

// Config is what a session gives its team: its options and settings, where it keeps its
// files, and the parts of the session a team uses, each as narrow as the team needs it.
type Config struct {
	Options Options
	// Settings are the session's merged settings: teams, the agent-teams variable of env,
	// teammateMode and the coordination backend are read.
	Settings *settings.Settings
	// Detached says the session runs a supervisor's job (a background agent, a scheduled
	// run) for another session.
	Detached bool
	// Home is keel's directory; empty keeps the team in a temporary directory, removed by
	// Close.
	Home string
	// Coordination says how the team reaches NATS when settings choose that backend.
	Coordination teamstore.Options
	// SessionID names a new team; TranscriptPath is the session's transcript ("" without
	// one), beside which team.json notes the team for --continue.
	SessionID, TranscriptPath string
	// LeadName is the definition the lead's main thread runs as.
	LeadName string
	// Run is the configuration the session was opened from: process teammates start from it
	// (written as the team's launch.json).
	Run runconfig.Config
	// Host builds the loops of in-process teammates; LeadAsker is the lead's UI for their
	// questions (nil when nobody is there to answer).
	Host      team.Host
	LeadAsker permission.Asker
	Hooks     hooks.EventRunner
	HookInput func(hooks.Input) hooks.Input
	// Subagents lists the session's running subagents, one line each, for ListAgents.
	Subagents func() []string
	// Emit receives the team's events and the NATS connection's notices; Notify shows a
	// notice in the prompt in progress.
	Emit   func(event.Event)
	Notify func(event.Event)
	Logger *slog.Logger
}

// teamFile is the session's note of its team, beside its transcript, so --continue finds
// the team again.
type teamFile struct {
	Name    string `json:"name"`
	Backend string `json:"backend"`
	Dir     string `json:"dir"`
}

// Handle is a session's agent team: it opens the team (picking its backend), brings a
// resumed lead's teammates back, runs a worker's teammate and closes the team with the
// session. A nil Handle has no team.
type Handle struct {
	cfg Config
	// team is nil when the session has none; backend is its store; temp a directory to
	// remove when the session has no keel directory.
	team    *team.Team
	backend coord.Backend
	temp    string
}

// New returns the session's handle on its team, not yet open.
func New(cfg Config) *Handle {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handle{cfg: cfg}
}

// Enabled says whether this session has a team.
func (h *Handle) Enabled() bool {
	o := h.cfg.Options
	if o.Worker == nil && h.cfg.Detached {
		// A supervisor's job (a background agent, a scheduled run) runs one agent for its
		// session; settings that switch teams on must not make it lead that team again.
		return false
	}
	st := h.cfg.Settings
	if o.Enabled || o.Worker != nil || (st != nil && st.Teams.V) {
		return true
	}
	if st == nil {
		return false
	}
	if v, ok := st.Env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"]; ok && envvar.Truthy(v.V) {
		return true
	}
	return false
}

// AgentTranscript is the transcript subagents' and teammates' transcripts go beside: the
// session's own, or for a team worker the lead's.
func (h *Handle) AgentTranscript() string {
	if w := h.cfg.Options.Worker; w != nil && w.LeadTranscript != "" {
		return w.LeadTranscript
	}
	return h.cfg.TranscriptPath
}

// Open opens the session's team, if it has one (after the agents, whose runner hosts
// teammates), and returns it; nil without a team. A lead that was resumed finds its team
// again and reconciles its inbox with history, the conversation so far.
func (h *Handle) Open(ctx context.Context, resumed bool, history []message.Message) (*team.Team, error) {
	if !h.Enabled() {
		return nil, nil
	}
	o := h.cfg.Options
	store, name, err := h.location(resumed)
	if err != nil {
		return nil, err
	}
	dir := store.TeamDir(name)
	be, err := h.openBackend(ctx, store, name)
	if err != nil {
		return nil, err
	}
	mode := o.Mode
	if mode == "" && h.cfg.Settings != nil {
		mode = h.cfg.Settings.TeammateMode.V
	}
	cfg := team.Config{
		Name: name, Backend: be, Lead: o.Worker == nil, LeadName: h.cfg.LeadName,
		Host: h.cfg.Host, Mode: mode, LeadAsker: h.cfg.LeadAsker,
		Hooks: h.cfg.Hooks, HookInput: h.cfg.HookInput,
		Lease: o.Lease, ShutdownTimeout: o.ShutdownTimeout,
		Peers: h.Peers, Emit: h.cfg.Emit, Logger: h.cfg.Logger,
		LeadTranscript: h.AgentTranscript(),
	}
	if len(o.WorkerCommand) > 0 && o.Worker == nil {
		launcher, err := h.launcher(dir)
		if err != nil {
			_ = be.Close()
			return nil, err
		}
		cfg.Launcher = launcher
	}
	t, err := team.Open(ctx, cfg)
	if err != nil {
		_ = be.Close()
		return nil, err
	}
	h.team, h.backend = t, be
	if o.Worker == nil {
		if in := t.LeadInbox(); in != nil && len(history) > 0 {
			in.Reconcile(ctx, history)
		}
	}
	return t, nil
}

// launcher starts process teammates with `keel team worker --config FILE`, FILE holding
// the session's configuration (runconfig.Config.Teammate makes each member's of it): a
// process teammate is configured as its lead was, flags, agents and coordination included.
func (h *Handle) launcher(dir string) (*team.ExecLauncher, error) {
	o := h.cfg.Options
	path := filepath.Join(dir, "launch.json")
	if err := h.cfg.Run.Write(path); err != nil {
		return nil, fmt.Errorf("team %s: %w", filepath.Base(dir), err)
	}
	command := append(slices.Clip(o.WorkerCommand), "--config", path)
	return &team.ExecLauncher{Command: command, Env: o.WorkerEnv, LogDir: filepath.Join(dir, "logs"), Tmux: o.InTmux,
		TmuxEnv: []string{"KEEL_*", "ANTHROPIC_*", "OPENAI_*", "CLAUDE_*", "HOME", "PATH"}, Logger: h.cfg.Logger}, nil
}

// Resume brings a resumed lead's teammates back, once the main agent is wired, and returns
// the notices that say so.
func (h *Handle) Resume(ctx context.Context) []event.Notice {
	if h.team == nil || h.cfg.Options.Worker != nil {
		return nil
	}
	var out []event.Notice
	back, err := h.team.Resume(ctx)
	if err != nil {
		out = append(out, event.Notice{Level: "warn", Text: err.Error()})
	}
	if len(back) > 0 {
		out = append(out, event.Notice{Level: "info", Text: fmt.Sprintf("team %s: resumed %s", h.team.Name(), strings.Join(back, ", "))})
	}
	return out
}

// location picks the team's store and name: the worker's team, the one a resumed session
// had, or a new one.
func (h *Handle) location(resumed bool) (teamstore.Store, string, error) {
	home := h.cfg.Home
	if home == "" {
		dir, err := os.MkdirTemp("", "keel-team-")
		if err != nil {
			return teamstore.Store{}, "", fmt.Errorf("team directory: %w", err)
		}
		h.temp = dir
		home = dir
	}
	store := teamstore.Choose(h.cfg.Settings, home, h.cfg.Coordination)
	if w := h.cfg.Options.Worker; w != nil {
		if err := coord.CheckName(w.Team); err != nil {
			return store, "", fmt.Errorf("team worker: %w", err)
		}
		return store, w.Team, nil
	}
	side := h.filePath()
	if resumed && side != "" {
		var f teamFile
		if b, err := os.ReadFile(side); err == nil && json.Unmarshal(b, &f) == nil && f.Name != "" {
			return store, f.Name, nil
		}
	}
	name := h.cfg.Options.Name
	if name == "" {
		name = "team-" + strings.ReplaceAll(h.cfg.SessionID, "-", "")[:8]
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

// filePath is where the session notes its team: team.json in its transcript's directory.
func (h *Handle) filePath() string {
	if p := h.cfg.TranscriptPath; p != "" {
		return filepath.Join(transcript.SessionDir(p), "team.json")
	}
	return ""
}

// openBackend opens the team's store and reports the NATS connection's state as notices
// (a lost connection, its return).
func (h *Handle) openBackend(ctx context.Context, store teamstore.Store, name string) (coord.Backend, error) {
	emit := h.cfg.Emit
	if emit == nil {
		emit = func(event.Event) {}
	}
	return store.Open(ctx, name, coord.Config{Logger: h.cfg.Logger}, func(st coordpipe.State) {
		if st.Connected {
			emit(event.Notice{Level: "info", Text: fmt.Sprintf("team %s: connected to NATS at %s again", name, st.URL)})
			return
		}
		text := fmt.Sprintf("team %s: lost the connection to NATS", name)
		if st.Err != nil {
			text += fmt.Sprintf(" (%v)", st.Err)
		}
		emit(event.Notice{Level: "warn", Text: text + "; reconnecting — nothing is lost meanwhile"})
	})
}

// Peers lists what ListAgents shows besides the team: the session's running subagents and
// the leads of the store's other teams that a session leads now.
func (h *Handle) Peers(ctx context.Context) []string {
	var out []string
	if h.cfg.Subagents != nil {
		out = append(out, h.cfg.Subagents()...)
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

// Current returns the session's team, or nil.
func (h *Handle) Current() *team.Team {
	if h == nil {
		return nil
	}
	return h.team
}

// RunTeammate runs the teammate a worker session hosts until it stops.
func (h *Handle) RunTeammate(ctx context.Context) error {
	w := h.cfg.Options.Worker
	if w == nil || h.team == nil {
		return errors.New("this session is not a team worker")
	}
	if w.Remote {
		return h.team.JoinRemote(ctx, w.Member, w.Resume)
	}
	return h.team.Join(ctx, w.Member, w.Resume)
}

// Close closes the team and its store, and removes the temporary directory it was kept in.
func (h *Handle) Close() {
	if h == nil {
		return
	}
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

// Wait is WaitBackground's part for the team: it returns how many messages wait for the
// lead, or 0 once the team has settled — after shutting it down.
func (h *Handle) Wait(ctx context.Context) (int, error) {
	if h.Current() == nil || h.team.LeadInbox() == nil {
		return 0, nil
	}
	n, err := h.team.WaitLead(ctx)
	if err != nil || n > 0 {
		return n, err
	}
	if err := h.team.Shutdown(ctx, "the lead's work is done"); err != nil {
		h.cfg.Logger.Warn("shut down team", "err", err)
		if h.cfg.Notify != nil {
			h.cfg.Notify(event.Notice{Level: "warn", Text: err.Error()})
		}
	}
	return 0, nil
}

// LeadUnread counts the messages waiting for the team lead that should wake it.
func (h *Handle) LeadUnread(ctx context.Context) int {
	if h.Current() == nil || h.team.LeadInbox() == nil {
		return 0
	}
	return h.team.LeadInbox().Unread(ctx)
}
