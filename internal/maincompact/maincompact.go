// Package maincompact is the main thread's compaction as a session runs it, and the session
// commands that are not prompts: /compact [instructions], /clear and /add-dir. It sets the
// session's compaction policy from what the settings, the model and the embedder say now
// (the threshold every agent compacts at, the breakpoints of a compaction's request), and
// puts the main thread's steps around each compaction: the PreCompact hooks' context joins
// the prompt; the boundary goes into the transcript, synced; then the file views are
// forgotten, the PostCompact hooks run, the memoised prompt starts over and the SessionStart
// hooks run with source "compact". internal/compact does the compacting itself.
//
// What it needs of the session it names in [Config], as fields and functions, and what it
// needs of one Send in [Run]: the package knows no session, so it can be built and tested on
// its own.
package maincompact

import (
	"context"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/compact"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/subagent"
)

// Config is what the main thread's compaction needs. Provider, Model, History and
// SetHistory are required; any other nil function is a step skipped (and a nil Percent the
// default share of the window).
type Config struct {
	// Window is the context window the embedder set, 0 for the model's own from Windows.
	Window  func() int64
	Windows compact.Windows
	// Percent is the autoCompactThreshold setting, if set: the share of the window past which
	// the history is compacted.
	Percent func() (float64, bool)
	// TTL is the session's cache TTL policy.
	TTL func() provider.TTLPolicy
	// Model is the main agent's model now.
	Model func() string

	// PreCompact runs the PreCompact hooks and returns the context they add; PostCompact and
	// SessionStart run theirs once the history is replaced.
	PreCompact   func(ctx context.Context, trigger string) []string
	PostCompact  func(ctx context.Context, trigger, summary string)
	SessionStart func(ctx context.Context)
	// RecordSummary writes the compaction's boundary in the transcript, synced, and returns
	// its entry id ("" when nothing is persisted).
	RecordSummary func(ctx context.Context, summary string) (string, error)
	// ForgetViews drops the agents' views of the files, which the compacted history held.
	ForgetViews func()
	// ClearPrompt starts the memoised system prompt over.
	ClearPrompt func()
	// Last is what the main agent's newest turn sent, nil before the first.
	Last func() *loop.CacheSafe

	// Provider, Meter, System, Tools and Prepare make /compact's request as the main agent's
	// next one would be, when there is no turn to repeat; Announce tells the cache watcher.
	Provider provider.Provider
	Meter    loop.Meter
	System   func(ctx context.Context) loop.System
	Tools    func(ctx context.Context) []provider.ToolSpec
	Prepare  func(*provider.Request)
	Announce func(reason string)

	// History is a copy of the conversation; SetHistory replaces it and its entry ids.
	History    func() []message.Message
	SetHistory func(history []message.Message, ids []string)
	// Rewind moves the transcript's branch back to its start (/clear); nil when nothing is
	// persisted.
	Rewind func(ctx context.Context) error
	// AddDir adds a working directory and returns it as added (/add-dir).
	AddDir func(ctx context.Context, dir string) (string, error)
}

// Run is what a compaction needs of the Send it happens in.
type Run struct {
	// Compacted starts the run's entry ids at the boundary; IDs are the run's entry ids.
	Compacted func(boundary string)
	IDs       func() []string
	// Reset starts the run's tool listing over from the summary; nil keeps none.
	Reset func(history []message.Message)
	// Emit receives the run's events (the Compacted event, a notice).
	Emit func(event.Event)
}

// Compaction is the main thread's compaction. It holds nothing but its Config, and is safe
// for concurrent use as far as the Config's functions are.
type Compaction struct{ c Config }

// New returns the main thread's compaction, wired as c says.
func New(c Config) *Compaction { return &Compaction{c: c} }

// Policy is the session's compaction policy as its settings stand: they may change during
// the session (the model, the autoCompactThreshold setting, an embedder's window).
func (m *Compaction) Policy() compact.Policy {
	p := compact.Policy{Windows: m.c.Windows}
	if m.c.Window != nil {
		p.Window = m.c.Window()
	}
	if m.c.TTL != nil {
		p.TTL = m.c.TTL()
	}
	if m.c.Percent != nil {
		if v, ok := m.c.Percent(); ok {
			p.Percent = v
		}
	}
	return p
}

// Threshold is the input size, in tokens, past which the main agent's history is compacted.
func (m *Compaction) Threshold() int64 { return m.ThresholdFor(m.c.Model()) }

// ThresholdFor is the input size, in tokens, past which the history of an agent on model is
// compacted: the share of its window the autoCompactThreshold setting names.
func (m *Compaction) ThresholdFor(model string) int64 { return m.Policy().Threshold(model) }

// Breakpoints places the cache breakpoints of a request as sent (a compaction's).
func (m *Compaction) Breakpoints(r *provider.Request) { m.Policy().Breakpoints(r) }

// Main is the main agent's part in compacting during run r, for its agent's spec.
func (m *Compaction) Main(r Run) subagent.Compaction {
	return subagent.Compaction{
		Before: func(ctx context.Context, trigger string) []string {
			if m.c.PreCompact == nil {
				return nil
			}
			return m.c.PreCompact(ctx, trigger)
		},
		Record: func(ctx context.Context, summary string) (string, error) {
			var id string
			if m.c.RecordSummary != nil {
				var err error
				if id, err = m.c.RecordSummary(ctx, summary); err != nil {
					return "", err
				}
			}
			if r.Compacted != nil {
				r.Compacted(id)
			}
			return id, nil
		},
		After: func(ctx context.Context, trigger, summary, _ string) {
			// /compact runs outside the agent, so its views are forgotten here too: the
			// next Read of an unchanged file shows the file again.
			call(m.c.ForgetViews)
			if m.c.PostCompact != nil {
				m.c.PostCompact(ctx, trigger, summary)
			}
			call(m.c.ClearPrompt)
			if m.c.SessionStart != nil {
				m.c.SessionStart(ctx)
			}
			if r.Reset != nil {
				r.Reset([]message.Message{compact.SummaryMessage(summary)})
			}
		},
		Last: m.c.Last, // the previous Send's newest turn
	}
}

// compactor compacts the main thread's history outside a run (/compact): it repeats the
// newest turn of the last Send.
func (m *Compaction) compactor(r Run) *compact.Compactor {
	main := m.Main(r)
	return compact.New(compact.Config{
		Provider: m.c.Provider, Meter: m.c.Meter, Last: m.c.Last, Model: m.c.Model, System: m.c.System,
		Tools: m.c.Tools, Prepare: m.c.Prepare, Breakpoints: m.Breakpoints, CacheSource: "main", Announce: m.c.Announce,
		Before: main.Before, Record: main.Record, After: main.After, Emit: r.Emit,
	})
}

// Command runs the session commands that are not prompts: /compact [instructions], /clear
// and /add-dir <dir>. It reports whether prompt was one, and what its model requests used.
func (m *Compaction) Command(ctx context.Context, prompt string, r Run) (bool, cost.Ledger, error) {
	name, args, _ := strings.Cut(strings.TrimSpace(prompt), " ")
	switch name {
	case "/compact":
		compacted, used, err := m.compactor(r).Manual(ctx, m.c.History(), args)
		if err != nil {
			return true, used, err
		}
		var ids []string
		if r.IDs != nil {
			ids = r.IDs()
		}
		m.c.SetHistory(compacted, ids)
		return true, used, nil
	case "/add-dir":
		if m.c.AddDir == nil {
			return true, cost.Ledger{}, fmt.Errorf("/add-dir: this session cannot add directories")
		}
		dir, err := m.c.AddDir(ctx, strings.TrimSpace(args))
		if err == nil && r.Emit != nil {
			r.Emit(event.Notice{Level: "info", Text: "added " + dir + " to the working directories"})
		}
		return true, cost.Ledger{}, err
	case "/clear":
		m.c.SetHistory(nil, nil)
		call(m.c.ForgetViews)
		if m.c.Rewind != nil {
			if err := m.c.Rewind(ctx); err != nil {
				return true, cost.Ledger{}, err
			}
		}
		if m.c.Announce != nil {
			m.c.Announce("clear")
		}
		call(m.c.ClearPrompt)
		return true, cost.Ledger{}, nil
	}
	return false, cost.Ledger{}, nil
}

func call(f func()) {
	if f != nil {
		f()
	}
}
