package session

import (
	"context"
	"strings"

	"github.com/keel-dev/keel/internal/compact"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/transcript"
)

// DefaultContextWindow is the context window assumed for models keel has no figure for.
const DefaultContextWindow = models.DefaultContextWindow

// policy is the session's compaction policy as its settings stand: they may change during
// the session (the model, the autoCompactThreshold setting, an embedder's window).
func (c *compaction) policy() compact.Policy {
	s := c.s
	p := compact.Policy{Window: s.opts.ContextWindow, Windows: s.switches.ModelCatalog(), TTL: s.ttl}
	if v := s.settings.AutoCompactThreshold; v.IsSet() {
		p.Percent = v.V
	}
	return p
}

// compactThreshold is the input size, in tokens, past which the main agent's history is
// compacted.
func (c *compaction) compactThreshold() int64 {
	return c.thresholdFor(c.s.switches.Model())
}

// thresholdFor is the input size, in tokens, past which the history of an agent on model is
// compacted: the share of its window the autoCompactThreshold setting names.
func (c *compaction) thresholdFor(model string) int64 {
	return c.policy().Threshold(model)
}

// mainCompaction is the main agent's part in compacting: the PreCompact hooks' context joins
// the prompt; the boundary goes into the session's transcript, synced, and starts the run's
// entry ids; then the PostCompact and SessionStart hooks run and the memoised prompt and
// listing start over.
func (c *compaction) mainCompaction(sink *chanSink, listing *listingObserver) subagent.Compaction {
	s := c.s
	return subagent.Compaction{
		Before: func(ctx context.Context, trigger string) []string {
			return s.hooks.Run(ctx, hooks.PreCompact, s.hookd.Input(s.Cwd(), hooks.Input{Trigger: trigger})).AdditionalContext
		},
		Record: func(ctx context.Context, summary string) (string, error) {
			uuid, err := s.persist.record(ctx, transcript.Entry{Type: transcript.TypeSummary, Summary: summary})
			if err != nil {
				return "", err
			}
			if s.transcript != nil {
				if err := s.transcript.Sync(ctx); err != nil {
					return "", err
				}
			}
			sink.compacted(uuid)
			return uuid, nil
		},
		After: func(ctx context.Context, trigger, summary, _ string) {
			// /compact runs outside the agent, so its views are forgotten here too: the
			// next Read of an unchanged file shows the file again.
			if s.files != nil {
				s.files.ForgetViews()
			}
			s.hookd.PostCompact(ctx, trigger, summary)
			s.prompt.Clear()
			s.hooks.Run(ctx, hooks.SessionStart, s.hookd.Input(s.Cwd(), hooks.Input{Source: "compact"}))
			if listing != nil {
				listing.reset([]message.Message{compact.SummaryMessage(summary)})
			}
		},
		Last: s.cacheSafeNow, // the previous Send's newest turn
	}
}

// compactor compacts the main thread's history outside a run (/compact): it repeats the
// newest turn of the last Send.
func (c *compaction) compactor(sink *chanSink) *compact.Compactor {
	s := c.s
	main := c.mainCompaction(sink, nil)
	return compact.New(compact.Config{
		Provider: s.opts.Provider, Meter: &s.acct.spend, Last: s.cacheSafeNow, Model: s.switches.Model, System: s.conf.systemPrompt,
		Tools:       func(ctx context.Context) []provider.ToolSpec { return loop.Specs(s.pool(ctx)) },
		Prepare:     s.prepare,
		Breakpoints: c.breakpoints, CacheSource: "main", Announce: s.watch.Announce,
		Before: main.Before, Record: main.Record, After: main.After, Emit: sink.Emit,
	})
}

// breakpoints places the cache breakpoints of a request as sent (a compaction's).
func (c *compaction) breakpoints(r *provider.Request) {
	c.policy().Breakpoints(r)
}

// builtinCommand runs the session commands that are not prompts: /compact [instructions]
// and /clear. It reports whether prompt was one, and what its model requests used.
func (c *compaction) builtinCommand(ctx context.Context, prompt string, sink *chanSink) (bool, cost.Ledger, error) {
	s := c.s
	name, args, _ := strings.Cut(strings.TrimSpace(prompt), " ")
	switch name {
	case "/compact":
		compacted, used, err := c.compactor(sink).Manual(ctx, s.History(), args)
		if err != nil {
			return true, used, err
		}
		s.mu.Lock()
		s.history, s.uuids = compacted, sink.uuids
		s.mu.Unlock()
		return true, used, nil
	case "/add-dir":
		dir, err := addDirectory(ctx, s, strings.TrimSpace(args))
		if err == nil {
			sink.Emit(event.Notice{Level: "info", Text: "added " + dir + " to the working directories"})
		}
		return true, cost.Ledger{}, err
	case "/clear":
		s.mu.Lock()
		s.history, s.uuids = nil, nil
		s.mu.Unlock()
		s.files.ForgetViews()
		if s.transcript != nil {
			if err := s.transcript.Rewind(ctx, ""); err != nil {
				return true, cost.Ledger{}, err
			}
		}
		s.watch.Announce("clear")
		s.prompt.Clear()
		return true, cost.Ledger{}, nil
	}
	return false, cost.Ledger{}, nil
}
