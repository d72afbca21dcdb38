package session

import (
	"context"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/maincompact"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/transcript"
)

// DefaultContextWindow is the context window assumed for models keel has no figure for.
const DefaultContextWindow = models.DefaultContextWindow

// newCompaction wires the main thread's compaction and its commands (internal/maincompact)
// to the session's settings, switches, hooks, transcript, prompt, pool and history. Most of
// them are built later in opening than the compaction, hence the functions that reach them
// when called.
func newCompaction(s *Session) *maincompact.Compaction {
	hookInput := func(in hooks.Input) hooks.Input { return s.hookd.Input(s.Cwd(), in) }
	return maincompact.New(maincompact.Config{
		Window:  func() int64 { return s.opts.ContextWindow },
		Windows: catalogWindows{s},
		Percent: func() (float64, bool) {
			v := s.settings.AutoCompactThreshold
			return v.V, v.IsSet()
		},
		TTL:   func() provider.TTLPolicy { return s.ttl },
		Model: func() string { return s.switches.Model() },
		PreCompact: func(ctx context.Context, trigger string) []string {
			return s.hooks.Run(ctx, hooks.PreCompact, hookInput(hooks.Input{Trigger: trigger})).AdditionalContext
		},
		PostCompact: func(ctx context.Context, trigger, summary string) { s.hookd.PostCompact(ctx, trigger, summary) },
		SessionStart: func(ctx context.Context) {
			s.hooks.Run(ctx, hooks.SessionStart, hookInput(hooks.Input{Source: "compact"}))
		},
		RecordSummary: func(ctx context.Context, summary string) (string, error) {
			uuid, err := s.persist.record(ctx, transcript.Entry{Type: transcript.TypeSummary, Summary: summary})
			if err != nil {
				return "", err
			}
			if s.transcript != nil {
				if err := s.transcript.Sync(ctx); err != nil {
					return "", err
				}
			}
			return uuid, nil
		},
		ForgetViews: func() {
			if s.files != nil {
				s.files.ForgetViews()
			}
		},
		ClearPrompt: func() { s.prompt.Clear() },
		Last:        s.cacheSafeNow,
		Provider:    s.opts.Provider, Meter: &s.acct.spend,
		System:   func(ctx context.Context) loop.System { return s.conf.systemPrompt(ctx) },
		Tools:    func(ctx context.Context) []provider.ToolSpec { return loop.Specs(s.pool(ctx)) },
		Prepare:  s.prepare,
		Announce: func(reason string) { s.watch.Announce(reason) },
		History:  s.History,
		SetHistory: func(h []message.Message, ids []string) {
			s.mu.Lock()
			s.history, s.uuids = h, ids
			s.mu.Unlock()
		},
		Rewind: func(ctx context.Context) error {
			if s.transcript == nil {
				return nil
			}
			return s.transcript.Rewind(ctx, "")
		},
		AddDir: func(ctx context.Context, dir string) (string, error) { return addDirectory(ctx, s, dir) },
	})
}

// catalogWindows reads the model catalog's windows as the switches hold it now.
type catalogWindows struct{ s *Session }

func (c catalogWindows) ContextWindow(model string) int64 {
	return c.s.switches.ModelCatalog().ContextWindow(model)
}

// compactionRun is what a compaction needs of the Send in progress: its sink's entry ids and
// events, and the listing its main agent keeps (nil outside a run).
func compactionRun(sink *chanSink, listing *listingObserver) maincompact.Run {
	r := maincompact.Run{Compacted: sink.compacted, IDs: func() []string { return sink.uuids }, Emit: sink.Emit}
	if listing != nil {
		r.Reset = listing.reset
	}
	return r
}
