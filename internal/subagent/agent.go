package subagent

import (
	"context"
	"log/slog"
	"time"

	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/compact"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
)

// Kind is what an agent is to its session. Background and resumed agents are subagents or
// teammates that run on; they are built the same way.
type Kind string

// The kinds of agent.
const (
	KindMain     Kind = "main"
	KindSubagent Kind = "subagent"
	KindFork     Kind = "fork"
	KindTeammate Kind = "teammate"
)

// Seams are what the session gives every agent, whatever its kind ([Config.Seams]): the same
// validator, the same live accounting and budget, and compaction and cache watching sized to
// each agent's own model and prefix.
type Seams struct {
	// Validator checks tool inputs against their schemas.
	Validator *tool.Validator
	// Meter counts every response of every agent as it arrives; Check ends any agent's run
	// when the session must stop (its budget is spent).
	Meter loop.Meter
	Check func(out *loop.Outcome) (subtype string, stop bool)
	// Threshold is the input size, in tokens, past which an agent on model compacts; nil
	// never compacts.
	Threshold func(model string) int64
	// Breakpoints places the cache breakpoints of a compaction request that repeats an
	// agent's last one.
	Breakpoints func(*provider.Request)
	// Now is the clock of the agents' cache watchers; nil is time.Now.
	Now func() time.Time
	// Traceparent gives a tool call the TRACEPARENT of its span when telemetry exports
	// traces; Environ is the environment of the commands a call starts (enabled plugins'
	// bin/ folders on PATH). Both reach every agent's calls; nil leaves them unset.
	Traceparent func(toolUseID string) string
	Environ     func() []string
	// Clearing tunes how every agent clears its stale tool results (zero: the defaults);
	// NoClearing turns it off.
	Clearing   clearing.Policy
	NoClearing bool
	// ProviderClearing has the provider clear them instead (its thresholds from Clearing);
	// set only for a provider that can ([provider.SupportsToolResultClearing]).
	ProviderClearing bool
}

// AgentSpec is what differs between agents: their kind and what they inherit or are given.
// [Runner.NewAgent] adds what every agent gets.
type AgentSpec struct {
	Kind      Kind
	Origin    event.Origin
	Model     string
	MaxTokens int64
	Thinking  *provider.Thinking
	System    func(ctx context.Context) loop.System
	Pool      func(ctx context.Context) *tool.Pool
	Lookup    func(name string) (tool.Tool, bool)
	Gate      tool.Gate
	Files     *tool.FileState
	State     tool.State
	MaxTurns  int
	Source    string
	// Prepare finishes every request (deferred tools, breakpoints).
	Prepare func(*provider.Request)
	Stop    loop.StopChecker
	// Check is the agent's own end condition (a structured answer given), asked before the
	// session's.
	Check func(out *loop.Outcome) (subtype string, stop bool)
	// Observers are consulted at every request boundary: the agent's inbox among them.
	Observers []loop.Observer
	Sink      loop.Sink
	AfterTurn func(req *provider.Request, sys loop.System, reply message.Message)
	// Watch is the agent's cache watcher; nil makes one of its own.
	Watch *cachewatch.Watcher
	// Compaction is the agent's part in compacting its history.
	Compaction Compaction
	Logger     *slog.Logger
}

// Compaction is what an agent adds to its compactor ([compact.Config]).
type Compaction struct {
	// Before and After run around a compaction (the main agent's hooks); Record writes the
	// boundary in the agent's transcript (nil: none is kept).
	Before func(ctx context.Context, trigger string) []string
	Record func(ctx context.Context, summary string) (string, error)
	After  func(ctx context.Context, trigger, summary, boundary string)
	// Last is the conversation's newest request while the agent has sent none (the main
	// agent's previous Send).
	Last func() *loop.CacheSafe
}

// NewAgent builds an agent of any kind — the main thread, a subagent, a fork child, a
// teammate — from its spec: the one place an agent gets its seams. Every agent compacts its
// own history, reports its own cache breaks, checks the session's budget (every agent but the
// main one before its first request too) and counts towards it while it runs, and validates
// its tool inputs.
func (r *Runner) NewAgent(s AgentSpec) *loop.Agent {
	w := s.Watch
	if w == nil {
		w = cachewatch.New(cachewatch.Options{Now: r.cfg.Seams.Now})
	}
	logger := s.Logger
	if logger == nil {
		logger = r.logger
	}
	a := &loop.Agent{
		Origin: s.Origin, Provider: r.cfg.Provider, Model: s.Model, MaxTokens: s.MaxTokens, Thinking: s.Thinking,
		System: s.System, Pool: s.Pool, Lookup: s.Lookup, Gate: s.Gate, Validator: r.cfg.Seams.Validator,
		Files: s.Files, State: s.State, SessionID: r.cfg.SessionID, MaxTurns: s.MaxTurns, Source: s.Source,
		Observers: s.Observers, Prepare: s.Prepare, Watch: cachewatch.Events{Watcher: w}, Stop: s.Stop,
		Sink: s.Sink, Logger: logger, AfterTurn: s.AfterTurn, Check: joinChecks(s.Check, r.cfg.Seams.Check),
		Meter: r.cfg.Seams.Meter, Traceparent: r.cfg.Seams.Traceparent, Environ: r.cfg.Seams.Environ,
		Clear: r.clearer(s.Watch),
	}
	if r.cfg.Seams.ProviderClearing && !r.cfg.Seams.NoClearing {
		a.ClearByProvider = r.cfg.Seams.Clearing.ProviderEdit()
	}
	c := compact.New(compact.Config{
		Provider: r.cfg.Provider, Meter: r.cfg.Seams.Meter,
		Threshold: func() int64 {
			if r.cfg.Seams.Threshold == nil {
				return 0
			}
			return r.cfg.Seams.Threshold(a.Model)
		},
		Last: func() *loop.CacheSafe {
			if cs := a.LastCacheSafe(); cs != nil || s.Compaction.Last == nil {
				return cs
			}
			return s.Compaction.Last()
		},
		Model:  func() string { return a.Model },
		System: s.System,
		Tools: func(ctx context.Context) []provider.ToolSpec {
			if s.Pool == nil {
				return nil
			}
			return loop.Specs(s.Pool(ctx))
		},
		Prepare: s.Prepare, Breakpoints: r.cfg.Seams.Breakpoints, CacheSource: s.Source,
		Before: s.Compaction.Before, Record: s.Compaction.Record,
		After: func(ctx context.Context, trigger, summary, boundary string) {
			if a.Clear != nil {
				a.Clear.Reset("compaction")
			}
			// The Read results the summary replaced are gone from this agent's context, so
			// its next Read of an unchanged file shows the file again.
			if s.Files != nil {
				s.Files.ForgetViews()
			}
			if s.Compaction.After != nil {
				s.Compaction.After(ctx, trigger, summary, boundary)
			}
		},
		Announce: w.Announce, Origin: s.Origin,
		Emit: func(e event.Event) {
			if s.Sink != nil {
				s.Sink.Emit(e)
			}
		},
	})
	a.Compact = c
	if s.Kind != KindMain {
		// The main agent answers each prompt once whatever the budget (as Claude Code does);
		// any other agent runs within a turn the budget already governs, so a budget spent
		// before it starts ends it before its first request.
		a.Admit = r.cfg.Seams.Check
	}
	return a
}

// clearer returns the stale-result clearer of an agent. One given a cache watcher to keep (the
// main agent, rebuilt for every Send) keeps its clearer with it: both describe the same cached
// prefix, and the clearer must know when the previous Send's request went out.
func (r *Runner) clearer(w *cachewatch.Watcher) *clearing.Clearer {
	if r.cfg.Seams.NoClearing || r.cfg.Seams.ProviderClearing {
		return nil
	}
	if w == nil {
		return clearing.New(r.cfg.Seams.Clearing, r.cfg.Seams.Now)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clearers == nil {
		r.clearers = map[*cachewatch.Watcher]*clearing.Clearer{}
	}
	c, ok := r.clearers[w]
	if !ok {
		c = clearing.New(r.cfg.Seams.Clearing, r.cfg.Seams.Now)
		r.clearers[w] = c
	}
	return c
}

// joinChecks asks the agent's own check, then the session's.
func joinChecks(own, session func(*loop.Outcome) (string, bool)) func(*loop.Outcome) (string, bool) {
	switch {
	case own == nil:
		return session
	case session == nil:
		return own
	}
	return func(out *loop.Outcome) (string, bool) {
		if subtype, stop := own(out); stop {
			return subtype, true
		}
		return session(out)
	}
}
