package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/transcript"
)

// DefaultContextWindow is the context window assumed for models keel has no figure for.
const DefaultContextWindow = models.DefaultContextWindow

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
	// last returns what the conversation's newest turn sent (nil before the first), so the
	// compaction request can repeat it and read its cache.
	last func() *loop.CacheSafe
	// listing is the run's announcer, told when the history it announced to is replaced.
	listing *listingObserver
	// ledger is what the compaction requests used; the run's result includes it.
	ledger cost.Ledger
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
	return int64(float64(s.contextWindow()) * percent / 100)
}

// Compact summarises history with a request that reads the conversation's prompt cache and
// writes nothing to it, records a boundary and returns the history to continue from.
func (c *compactor) Compact(ctx context.Context, history []message.Message, trigger string) ([]message.Message, error) {
	s := c.s
	pre := s.hooks.Run(ctx, hooks.PreCompact, s.hookInput(s.Cwd(), hooks.Input{Trigger: trigger}))
	var extra string
	if len(pre.AdditionalContext) > 0 {
		extra = "\n\nAlso keep in mind:\n" + strings.Join(pre.AdditionalContext, "\n")
	}
	ask := append(append([]message.Message(nil), history...), message.User(message.Text(compactPrompt+extra)))
	req := c.request(ctx, loop.Merge(ask))
	// Announced before the request, so the new prefix it creates is never reported as a break.
	s.watch.Announce("compaction")
	summary, model, usage, err := s.complete(ctx, req)
	if err != nil {
		return nil, err
	}
	c.ledger.Add(model, usage)
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
	compacted := []message.Message{summaryMessage(summary)}
	s.files.ForgetViews() // the Read results the summary replaced are gone from the context
	if c.listing != nil {
		c.listing.reset(compacted)
	}
	return compacted, nil
}

// request is the compaction request for messages (the history and the summary prompt). It
// repeats the conversation's newest request byte for byte — its rendered system prompt, its
// exact tool list (deferred tools as deferred), model and thinking — so everything that
// request sent is a prefix of this one. Its breakpoints sit where that conversation already
// has cache entries: the tools, the static prompt, and the newest request's last block, so it
// reads the whole shared prefix and writes nothing: its own prefix is never reused, since the
// summary replaces the history (the seeds' skipCacheWrite). Without a turn to repeat (a
// /compact right after resuming) it is built from the pool as the next request would be.
func (c *compactor) request(ctx context.Context, messages []message.Message) *provider.Request {
	s := c.s
	req := &provider.Request{
		Model: s.Model(), MaxTokens: compactMaxTokens, Messages: messages,
		Source: provider.SourceCompact, CacheSource: "main", SkipCacheWrite: true,
	}
	var last *loop.CacheSafe
	if c.last != nil {
		last = c.last()
	}
	if last == nil || last.Model != req.Model {
		req.System, req.Tools = c.sys(ctx).Blocks, c.pool
		s.deferTools(ctx, req)
		provider.PlaceBreakpoints(req, s.ttl)
		return req
	}
	req.System, req.Tools, req.Thinking = last.System.Blocks, last.Tools, last.Thinking
	if req.Thinking != nil && req.Thinking.BudgetTokens >= req.MaxTokens {
		req.MaxTokens = req.Thinking.BudgetTokens + compactMaxTokens
	}
	if sent := last.Messages[:len(last.Messages)-1]; len(sent) > 0 && len(sent) <= len(messages) &&
		sameJSON(sent[:len(sent)-1], messages[:len(sent)-1]) && hasPrefixBlocks(messages[len(sent)-1], sent[len(sent)-1]) {
		if i := provider.LastMarkable(sent[len(sent)-1].Content); i >= 0 {
			req.SharedPrefix = &provider.BlockRef{Message: len(sent) - 1, Block: i}
		}
	}
	provider.PlaceBreakpoints(req, s.ttl)
	return req
}

// compactMaxTokens is the output budget of the summary.
const compactMaxTokens = 8192

// hasPrefixBlocks reports whether m starts with every block of prefix: the message the
// previous request ended with may have grown since (results and notes merged into it).
func hasPrefixBlocks(m, prefix message.Message) bool {
	return m.Role == prefix.Role && len(m.Content) >= len(prefix.Content) && sameJSON(m.Content[:len(prefix.Content)], prefix.Content)
}

// sameJSON compares as the request bytes would: a nil and an empty slice are the same.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// complete sends one request and returns the reply's text, the model that answered and the
// usage.
func (s *Session) complete(ctx context.Context, req *provider.Request) (string, string, message.Usage, error) {
	done, err := provider.Complete(ctx, s.opts.Provider, req)
	if err != nil {
		return "", "", message.Usage{}, fmt.Errorf("compaction request: %w", err)
	}
	return done.Message.TextOf(), cmp.Or(done.Model, req.Model), done.Usage, nil
}

// builtinCommand runs the session commands that are not prompts: /compact [instructions]
// and /clear. It reports whether prompt was one, and what its model requests used.
func (s *Session) builtinCommand(ctx context.Context, prompt string, sink *chanSink) (bool, cost.Ledger, error) {
	name, args, _ := strings.Cut(strings.TrimSpace(prompt), " ")
	switch name {
	case "/compact":
		history := s.History()
		if len(history) == 0 {
			return true, cost.Ledger{}, errors.New("nothing to compact yet")
		}
		c := &compactor{s: s, sink: sink, sys: s.systemPrompt, pool: loop.Specs(s.pool(ctx)), last: s.CacheSafe}
		if args != "" {
			history = append(history, message.User(message.Text("When summarising, focus on: "+args)))
		}
		compacted, err := c.Compact(ctx, history, "manual")
		if err != nil {
			return true, c.ledger, err
		}
		s.mu.Lock()
		s.history, s.uuids = compacted, sink.uuids
		s.mu.Unlock()
		return true, c.ledger, nil
	case "/add-dir":
		dir, err := s.addDirectory(ctx, strings.TrimSpace(args))
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
