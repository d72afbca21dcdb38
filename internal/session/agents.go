package session

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/worktree"
)

// Agents returns the session's agents.
func (s *Session) Agents() *Agents { return s.agents }

// maxHeld bounds the events kept between Sends; older ones are dropped.
const maxHeld = 1000

// emitAgent sends an event of a subagent or background task to the Send in progress, or
// holds it for the next Send.
func (s *Session) emitAgent(e event.Event) {
	if w := s.opts.Team.Worker; w != nil {
		// A worker's events are its member's: they go to its log for the lead to show.
		if t := s.teams.Current(); t != nil {
			t.Publish(e)
		}
		if w.Events != nil {
			w.Events(e)
			return
		}
	}
	s.mu.Lock()
	sink := s.sink
	s.mu.Unlock()
	idle := s.agents.idleEvents()
	if sink == nil && idle != nil {
		s.tel.Load().Observe(e)
		idle(e)
		return
	}
	if sink != nil && sink.send(e, false) {
		return
	}
	// Between Sends, or the run ended just now: held for the next Send, and seen by
	// telemetry now, as it happens — a headless run may never Send again.
	s.tel.Load().Observe(e)
	s.agents.hold(e)
}

// hold keeps e for the next Send; a nil Agents (not built yet) keeps nothing.
func (a *Agents) hold(e event.Event) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.held) >= maxHeld {
		a.held = a.held[1:]
	}
	a.held = append(a.held, e)
}

// idleEvents is the receiver SetIdleEvents gave, or nil.
func (a *Agents) idleEvents() func(event.Event) {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.idle
}

// buildAgents loads the agent definitions and wires the runner. It runs after the transcript
// is open, so subagent transcripts and notifications live beside it, and after restore, so
// notifications that a crashed process already delivered are dropped, not sent twice.
func (s *Session) buildAgents(ctx context.Context) {
	set, err := agentdef.Load(ctx, s.agentDefOptions())
	if err != nil {
		set = agentdef.NewSet(agentdef.Builtins())
	}
	for _, d := range set.Errors() {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: d.Error()})
	}
	dir := ""
	if path := s.TranscriptPath(); path != "" {
		dir = filepath.Join(transcript.SessionDir(path), "notifications")
	}
	tasks := background.New(background.Options{Dir: dir, Emit: s.emitAgent, Logger: s.logger})
	queue, err := tasks.Queue(background.MainOwner)
	if err != nil {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: fmt.Sprintf("background notifications: %v", err)})
		tasks = background.New(background.Options{Emit: s.emitAgent, Logger: s.logger})
		queue, _ = tasks.Queue(background.MainOwner)
	}
	if err := queue.Reconcile(s.history); err != nil {
		s.logger.Warn("reconcile notifications", "err", err)
	}
	runner := subagent.New(subagent.Config{
		Defs: set, Provider: s.opts.Provider, Tasks: tasks,
		SessionID: s.id, SessionPath: cmp.Or(s.opts.DetachedFrom, s.teams.AgentTranscript()), Version: s.opts.Version,
		Forks:     s.opts.ForkSubagents || s.settings.ForkSubagents.V,
		Teams:     s.teams.Enabled(),
		MaxDepth:  s.opts.MaxAgentDepth,
		Hooks:     s.hooks,
		HookInput: func(in hooks.Input) hooks.Input { return s.hookd.Input(s.Cwd(), in) },
		Gate: func(c *permission.Checker, origin event.Origin, h hooks.EventRunner) tool.Gate {
			return newGate(s, c, origin, s.emitAgent, h)
		},
		ProjectDir: s.projectDir, Home: s.opts.Home, TrustedHooks: s.conf.trusted(),
		Masked: func(path string) string { return s.maskRefusal()(path) },
		Skills: s.sk.Catalog(), MCP: childMCP{s},
		Prepare:      s.prepare,
		ResolveModel: s.switches.ModelCatalog().Resolve,
		Observers: func(pool func(context.Context) *tool.Pool, history []message.Message) []loop.Observer {
			return []loop.Observer{s.newListing(pool, history)}
		},
		Worktrees: &worktree.Manager{Root: s.projectDir, Trusted: s.conf.trusted(), Logger: s.logger,
			Hooks: worktree.HookStrategy{Runner: s.hooks, Input: func(in hooks.Input) hooks.Input { return s.hookd.Input(s.Cwd(), in) }}},
		Emit:     s.emitAgent,
		Logger:   s.logger,
		Detacher: s.opts.Detacher,
		Detach:   s.opts.DetachBackground,
		FanOut:   s.FanOuts().agent,
		Seams: subagent.Seams{Validator: s.validator, Meter: &s.acct.spend, Check: s.acct.budgetCheck, Threshold: s.compaction.ThresholdFor,
			Breakpoints: s.compaction.Breakpoints, Now: s.opts.Now, Traceparent: s.tel.traceparent, Environ: s.plug.Environ,
			NoClearing: s.settings.ClearToolResults.V == settings.ClearingOff, ProviderClearing: s.providerClearing()},
	})
	s.agents = &Agents{tasks: tasks, queue: queue, runner: runner, detached: s.opts.DetachedFrom != "",
		team: s.teams.Current, teamWait: s.teams.Wait, logger: s.logger}
	s.reattachAgents(ctx)
	s.builtins = append(s.builtins, runner.Tool(), runner.SendMessageTool(), fanOutOutput{background.OutputTool(tasks), s}, background.StopTool(tasks))
	s.setMainParent()
}

// Background moves the subagents the main thread is waiting for to the background (Ctrl+B in
// the terminal): their Agent calls return at once and their results arrive later as task
// notifications.
func (a *Agents) Background(ctx context.Context) error {
	if a.runner.Background("") == 0 {
		return fmt.Errorf("no subagent is running in the foreground")
	}
	return nil
}

// providerClearing says whether the settings leave the clearing of stale tool results to the
// provider ("clearToolResults": "provider") and the provider can do it; one that cannot
// leaves it to keel's own clearing, with a notice saying so.
func (s *Session) providerClearing() bool {
	v := s.settings.ClearToolResults
	if v.V != settings.ClearingProvider {
		return false
	}
	if provider.SupportsToolResultClearing(s.opts.Provider) {
		return true
	}
	s.notices = append(s.notices, event.Notice{Level: "warn",
		Text: fmt.Sprintf(`clearToolResults "provider" (%s): this provider does not clear tool results itself; keel clears them`, v.From)})
	return false
}

// setMainParent gives the runner the main thread as the parent of the agents it starts.
func (s *Session) setMainParent() {
	s.agents.runner.SetMain(subagent.Parent{
		Model: s.switches.Model(), MaxTokens: s.opts.MaxTokens, System: s.conf.systemPrompt,
		Pool:    s.agentPool,
		Checker: s.checker, Files: s.files,
		State:   func() tool.State { s.mu.Lock(); defer s.mu.Unlock(); return s.state },
		Prepare: s.prepare, Source: "main",
	})
}

// replayHeld shows, in the Send starting, the events background work had between Sends;
// telemetry saw them when they happened.
func (a *Agents) replayHeld(sink *chanSink) {
	a.mu.Lock()
	held := a.held
	a.held = nil
	a.mu.Unlock()
	for _, e := range held {
		sink.send(e, true)
	}
}

// agentLedger returns what every subagent used so far, by model.
func (a *Agents) agentLedger() cost.Ledger {
	if a == nil {
		return cost.Ledger{}
	}
	l := a.runner.Ledger()
	if t := a.team(); t != nil {
		l.Merge(t.Ledger())
	}
	return l
}

// WaitBackground blocks until the main thread's background tasks are done or one of them has
// reported, and returns how many reports wait for the next turn. keel -p calls it before
// exiting and, while it returns more than zero, gives the model a turn with SendPending.
// With a team it then waits for the team the same way: a teammate's message wakes the lead
// (more than zero), and once every teammate is idle with nothing left to claim the team is
// shut down (zero).
func (a *Agents) WaitBackground(ctx context.Context) (int, error) {
	if a == nil {
		return 0, nil
	}
	n, err := a.tasks.WaitIdle(ctx, background.MainOwner)
	if err != nil || n > 0 {
		return n, err
	}
	return a.teamWait(ctx)
}

// WaitTasks is WaitBackground without the team: it blocks until the main thread's
// background tasks are done or one of them has reported, and returns how many reports wait.
// A driving program that may still send prompts calls it between them.
func (a *Agents) WaitTasks(ctx context.Context) (int, error) {
	return a.tasks.WaitIdle(ctx, background.MainOwner)
}

// Outstanding says how many of the main thread's background tasks have not ended, plus the
// reports that wait for its next turn.
func (a *Agents) Outstanding() int {
	return a.tasks.Outstanding(background.MainOwner) + a.queue.Len()
}

// Pending says how many background reports wait for the main thread.
func (a *Agents) Pending() int { return a.queue.Len() }

// Resume continues the subagent id with message and returns its answer (SendMessage from
// the shell: `keel agents resume`).
func (a *Agents) Resume(ctx context.Context, id, msg string) (string, error) {
	return a.runner.Resume(ctx, id, msg)
}

// agentForks is the Skill tool's fork runner. The Skill tool is built before the runner (which
// needs the transcript), so it looks the runner up at call time.
type agentForks struct{ s *Session }

func (f agentForks) RunFork(ctx context.Context, agentType, prompt string, allowedTools []string, model string) (string, error) {
	if f.s.agents == nil {
		return "", fmt.Errorf("run skill: agents are not available in this session")
	}
	return f.s.agents.runner.RunFork(ctx, agentType, prompt, allowedTools, model)
}

// close stops the background tasks.
func (a *Agents) close() {
	if a != nil {
		a.tasks.Close()
	}
}

// Definitions lists the agents this session can start.
func (a *Agents) Definitions() []*agentdef.Definition { return a.runner.Definitions().Agents() }

// names lists the agent types the Agent tool accepts, for the init event.
func (a *Agents) names() []string {
	if a == nil {
		return nil
	}
	var names []string
	for _, d := range a.Definitions() {
		names = append(names, d.Name)
	}
	return names
}

// StopTask stops a background task (a background agent or shell).
func (a *Agents) StopTask(ctx context.Context, id string) error {
	if _, err := a.tasks.Stop(ctx, id); err != nil {
		return fmt.Errorf("stop task %s: %w", id, err)
	}
	return nil
}

// SetIdleEvents makes the events of background work between Sends (teammates, background
// agents) go to fn as they happen instead of being held for the next Send; a terminal UI
// shows a team at work that way. fn is called from other goroutines; nil restores holding.
func (a *Agents) SetIdleEvents(fn func(event.Event)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.idle = fn
}
