package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/transcript"
)

// DefaultContextWindow is the context window assumed for models keel has no figure for.
const DefaultContextWindow = 200_000

// defaultCompactPercent is the share of the context window at which the history is compacted
// unless settings say otherwise (autoCompactThreshold).
const defaultCompactPercent = 85

// compactPrompt asks for the summary that replaces the history.
const compactPrompt = `Summarise this conversation so that you can continue the work from the summary alone. Include:
- the user's requests and intent, in their words where it matters;
- what has been done: files read and changed (with paths), commands run and their outcomes;
- decisions made and why, errors met and how they were solved;
- the current state and the exact next step.
Be complete about facts and brief in wording. Reply with the summary only.`

// compactor is the main agent's loop.Compactor.
type compactor struct {
	s    *Session
	sink *chanSink
	sys  func(context.Context) loop.System
	pool []provider.ToolSpec
}

var _ loop.Compactor = (*compactor)(nil)

func (c *compactor) ShouldCompact(lastInput int64) bool {
	return lastInput > 0 && lastInput >= c.s.compactThreshold()
}

// compactThreshold is the input size, in tokens, past which the history is compacted.
func (s *Session) compactThreshold() int64 {
	percent := float64(defaultCompactPercent)
	if v := s.settings.AutoCompactThreshold; v.IsSet() && v.V > 0 {
		percent = v.V
	}
	window := int64(DefaultContextWindow)
	if s.opts.ContextWindow > 0 {
		window = s.opts.ContextWindow
	}
	return int64(float64(window) * percent / 100)
}

// Compact summarises history with a request that writes nothing to the prompt cache, records
// a boundary and returns the history to continue from.
func (c *compactor) Compact(ctx context.Context, history []message.Message, trigger string) ([]message.Message, error) {
	s := c.s
	pre := s.hooks.Run(ctx, hooks.PreCompact, s.hookInput(s.Cwd(), hooks.Input{Trigger: trigger}))
	var extra string
	if len(pre.AdditionalContext) > 0 {
		extra = "\n\nAlso keep in mind:\n" + strings.Join(pre.AdditionalContext, "\n")
	}
	ask := append(append([]message.Message(nil), history...), message.User(message.Text(compactPrompt+extra)))
	req := &provider.Request{
		Model:     s.Model(),
		MaxTokens: 8192,
		System:    c.sys(ctx).Blocks,
		Tools:     c.pool,
		Messages:  loop.Merge(ask),
		Source:    provider.SourceCompact,
	}
	// Tools the provider searches natively stay deferred, as the history's references expect.
	s.markDeferred(ctx, req)
	// Announced before the request, so the new prefix it creates is never reported as a break.
	s.watch.Announce("compaction")
	summary, usage, err := s.complete(ctx, req)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(summary) == "" {
		return nil, errors.New("the model returned an empty summary")
	}
	uuid, err := s.record(context.WithoutCancel(ctx), transcript.Entry{Type: transcript.TypeSummary, Summary: summary})
	if err != nil {
		return nil, err
	}
	if s.transcript != nil {
		if err := s.transcript.Sync(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
	}
	c.sink.compacted(uuid)
	before := usage.TotalInput()
	c.sink.Emit(event.Compacted{Trigger: trigger, TokensBefore: before})
	s.postCompact(ctx, trigger, summary)
	s.prompt.Clear()
	s.hooks.Run(ctx, hooks.SessionStart, s.hookInput(s.Cwd(), hooks.Input{Source: "compact"}))
	return []message.Message{summaryMessage(summary)}, nil
}

// complete sends one request and returns the reply's text.
func (s *Session) complete(ctx context.Context, req *provider.Request) (string, message.Usage, error) {
	for ev, err := range s.opts.Provider.Stream(ctx, req) {
		if err != nil {
			return "", message.Usage{}, fmt.Errorf("compaction request: %w", err)
		}
		if done, ok := ev.(provider.Done); ok {
			return done.Message.TextOf(), done.Usage, nil
		}
	}
	return "", message.Usage{}, errors.New("compaction request: stream ended without a message")
}

// builtinCommand runs the session commands that are not prompts: /compact [instructions]
// and /clear. It reports whether prompt was one.
func (s *Session) builtinCommand(ctx context.Context, prompt string, sink *chanSink) (bool, error) {
	name, args, _ := strings.Cut(strings.TrimSpace(prompt), " ")
	switch name {
	case "/compact":
		history := s.History()
		if len(history) == 0 {
			return true, errors.New("nothing to compact yet")
		}
		c := &compactor{s: s, sink: sink, sys: s.systemPrompt, pool: loop.Specs(s.pool(ctx))}
		if args != "" {
			history = append(history, message.User(message.Text("When summarising, focus on: "+args)))
		}
		compacted, err := c.Compact(ctx, history, "manual")
		if err != nil {
			return true, err
		}
		s.mu.Lock()
		s.history, s.uuids = compacted, sink.uuids
		s.mu.Unlock()
		return true, nil
	case "/add-dir":
		dir, err := s.addDirectory(ctx, strings.TrimSpace(args))
		if err == nil {
			sink.Emit(event.Notice{Level: "info", Text: "added " + dir + " to the working directories"})
		}
		return true, err
	case "/clear":
		s.mu.Lock()
		s.history, s.uuids = nil, nil
		s.mu.Unlock()
		if s.transcript != nil {
			if err := s.transcript.Rewind(ctx, ""); err != nil {
				return true, err
			}
		}
		s.watch.Announce("clear")
		s.prompt.Clear()
		return true, nil
	}
	return false, nil
}
