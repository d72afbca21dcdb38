package session

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/toolgate"
)

// Send adds prompt to the conversation and runs the main agent until it is done. Events
// stream as they happen; the last one is an [event.Result]. Stopping the iteration early
// interrupts the run.
func (s *Session) Send(ctx context.Context, prompt string) iter.Seq2[event.Event, error] {
	return func(yield func(event.Event, error) bool) {
		if !s.acquire() {
			yield(nil, ErrBusy)
			return
		}
		defer s.release()
		tel := s.tel.Load() // nil-safe: telemetry off records nothing
		tel.Prompt(prompt)
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(loop.ErrInterrupted)
		s.sdk.setCancel(cancel)
		defer s.sdk.setCancel(nil)

		events := make(chan sinkEvent, 64)
		done := make(chan error, 1)
		sink := &chanSink{s: s, ch: events}
		s.mu.Lock()
		s.sink = sink
		s.mu.Unlock()
		go func() {
			defer sink.close()
			defer func() {
				s.mu.Lock()
				s.sink = nil
				s.mu.Unlock()
			}()
			done <- s.run(ctx, prompt, sink)
		}()
		stopped := false
		for m := range events {
			if !m.observed {
				tel.Observe(m.e)
			}
			if !stopped && !yield(m.e, nil) {
				stopped = true
				cancel(loop.ErrInterrupted)
			}
		}
		if err := <-done; err != nil && !stopped {
			yield(nil, err)
		}
	}
}

// run is one Send: the prompt joins the history, the main agent runs, the result is
// reported.
func (s *Session) run(ctx context.Context, prompt string, sink *chanSink) error {
	started := time.Now()
	s.beginRun(prompt)
	s.announce(ctx, sink)
	fail := func(err error) error {
		sink.Emit(event.Result{Subtype: "error_during_execution", IsError: true, Text: err.Error(), SessionID: s.id, Duration: time.Since(started)})
		return nil
	}
	if handled, used, err := s.compaction.Command(ctx, prompt, compactionRun(sink, nil)); handled {
		res := event.Result{Subtype: "success", SessionID: s.id, Duration: time.Since(started), Text: strings.TrimSpace(prompt) + " done"}
		if err != nil {
			res.Subtype, res.IsError, res.Text = "error_during_execution", true, err.Error()
		}
		s.acct.account(&res, used)
		sink.Emit(res)
		return nil
	}
	defer s.sk.EndTurn("")
	if text, ok, err := s.sk.Expand(ctx, prompt); err != nil {
		return fail(err)
	} else if ok {
		prompt = text
	}
	blocks, err := submitPrompt(ctx, s, s.initialPrompt(prompt), sink)
	if err != nil {
		return fail(err)
	}
	user := message.User(blocks...)
	history := append(s.History(), user)
	uuid, err := sink.Append(ctx, user)
	if err != nil {
		return err
	}
	s.undo.BeginTurn(uuid)
	sink.Emit(event.UserMessage{UUID: uuid, Message: user})

	g := newGate(s, s.checker, event.Origin{}, sink.Emit, nil)
	agent := s.newMainAgent(g, sink, history)
	if t := s.teams.Current(); t != nil {
		t.SetLeadState(ctx, team.StateWorking)
		defer t.SetLeadState(context.WithoutCancel(ctx), team.StateIdle)
	}
	cwd := agent.State.Cwd
	ran, runErr := loop.Drive(ctx, agent, history, nil, nil)
	out := ran.Out
	s.hookd.StopFailure(ctx, runErr, out.Messages)
	s.hookd.CwdChanged(ctx, cwd, agent.State.Cwd)
	s.keep(agent, out, sink)

	cacheBefore := s.cacheTotals
	s.cacheTotals = s.watch.Totals()
	res := event.Result{
		Subtype:          out.Subtype,
		IsError:          out.Subtype != "success",
		Text:             out.Text,
		SessionID:        s.id,
		NumTurns:         out.NumTurns(),
		Duration:         time.Since(started),
		APIDuration:      out.APIDuration,
		StopReason:       out.StopReason,
		Denials:          g.TakeDenials(),
		Cache:            cacheStats(subTotals(s.cacheTotals, cacheBefore)),
		StructuredOutput: s.sdk.structuredAnswer(),
	}
	if runErr != nil {
		res.Text = runErr.Error()
	}
	used := out.Ledger.Clone()
	used.Merge(s.acct.unaccounted())
	s.acct.account(&res, used)
	sink.Emit(res)
	if runErr != nil {
		return fmt.Errorf("run prompt: %w", runErr)
	}
	return nil
}

// announce opens a Send's stream: the init event, then the notices found since the last.
func (s *Session) announce(ctx context.Context, sink *chanSink) {
	reloaded := s.plug.Reload(ctx)
	plugins, pluginErrors := s.plug.Init()
	sink.Emit(event.Init{SessionID: s.id, Model: s.switches.Model(), Cwd: s.Cwd(), Tools: s.pool(ctx).Names(), PermissionMode: s.PermissionMode(),
		Skills: s.sk.Names(), Agents: s.agents.names(), MCPServers: s.mcpStatus(), Plugins: plugins, PluginErrors: pluginErrors})
	for _, n := range reloaded {
		sink.Emit(n)
	}
	for _, n := range s.takeNotices() {
		sink.Emit(n)
	}
}

// newMainAgent builds the main agent of one Send, through the constructor every agent is
// built by: the session's prompt, pool and gate, its cache watcher (whose totals the result
// reports), the structured-output and Stop-hook checks, the session's observers and the
// background tasks' queue, and the compaction hooks of the main thread.
func (s *Session) newMainAgent(g *toolgate.Gate, sink *chanSink, history []message.Message) *loop.Agent {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	listing := s.newListing(s.pool, history)
	s.setMainParent()
	observers := append(s.observers(listing), s.agents.queue)
	s.agents.replayHeld(sink)
	return s.agents.runner.NewAgent(subagent.AgentSpec{
		Kind: subagent.KindMain, Model: s.switches.Model(), MaxTokens: s.opts.MaxTokens, Thinking: s.switches.Thinking(),
		System: s.conf.systemPrompt, Pool: s.pool, Lookup: s.lookupTool, Gate: g, Files: s.files, State: state,
		MaxTurns: s.opts.MaxTurns, Source: "main", Prepare: s.prepare, Stop: structuredStop{s, s.hookd},
		Check:     func(out *loop.Outcome) (string, bool) { return s.sdk.checkRun(s.opts.SDK.JSONSchema, out) },
		Observers: observers, Sink: sink, AfterTurn: s.agents.runner.AfterTurn(""),
		Watch: s.watch, Compaction: s.compaction.Main(compactionRun(sink, listing)), Logger: s.logger,
	})
}

// keep makes a finished run the session's state: its history (from the compaction
// boundary when it compacted), what its newest turn sent, its working state.
func (s *Session) keep(agent *loop.Agent, out *loop.Outcome, sink *chanSink) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = out.Messages
	s.cacheSafe = agent.LastCacheSafe()
	if sink.replaced {
		s.uuids = sink.uuids
	} else {
		s.uuids = append(s.uuids, sink.uuids...)
	}
	s.state = agent.State
}

// observers are consulted at every request boundary of the main agent; listing is this
// run's announcer of the session's changing lists.
func (s *Session) observers(listing *listingObserver) []loop.Observer {
	obs := []loop.Observer{rulesObserver{s}, planObserver{s}}
	if s.mcp != nil {
		obs = append(obs, mcpObserver{s})
	}
	if s.lsp != nil {
		obs = append(obs, lspObserver{s})
	}
	if t := s.teams.Current(); t != nil && t.LeadInbox() != nil {
		obs = append(obs, t.LeadInbox())
	}
	return append(obs, listing)
}

// mcpObserver passes the MCP manager's news (a server lost, back, or marked unhealthy) to the
// model and shows it to the user as a notice too: a server that stops answering is a problem
// the user must see in every output mode.
type mcpObserver struct{ s *Session }

func (o mcpObserver) Observe(ctx context.Context) []message.Block {
	news := o.s.mcp.Observe(ctx)
	for _, b := range news {
		text := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(b.Text, "<system-reminder>"), "</system-reminder>"))
		for _, line := range strings.Split(text, "\n") {
			level := "info"
			if strings.Contains(line, "gone until") || strings.Contains(line, "declined") {
				level = "warn"
			}
			if line != "" {
				o.s.emit(event.Notice{Level: level, Text: line})
			}
		}
	}
	return news
}

// beginRun clears the state of the previous run's SDK options.
func (s *Session) beginRun(prompt string) {
	s.sdk.mu.Lock()
	s.sdk.structured, s.sdk.reminders, s.sdk.prompt, s.sdk.turn = nil, 0, prompt, uuid.NewString()
	s.sdk.mu.Unlock()
}

// SendPending gives the main thread a turn for the background reports waiting for it: they
// are the turn's prompt, as Claude Code's headless mode does. They are acked once the turn's
// transcript is synced, and requeued if the turn fails before that.
func (a *Agents) SendPending(ctx context.Context) func(yield func(event.Event, error) bool) {
	return func(yield func(event.Event, error) bool) {
		if a == nil {
			return
		}
		var text string
		blocks := a.queue.Observe(ctx)
		var inbox interface {
			Requeue()
			Ack(context.Context) error
		}
		if t := a.team(); t != nil && t.LeadInbox() != nil {
			in := t.LeadInbox()
			inbox = in
			blocks = append(blocks, in.Observe(ctx)...)
		}
		for _, b := range blocks {
			if text != "" {
				text += "\n\n"
			}
			text += b.Text
		}
		if text == "" {
			return
		}
		failed := false
		for e, err := range a.send(ctx, text) {
			if err != nil {
				failed = true
			}
			if !yield(e, err) {
				failed = true
				break
			}
		}
		if failed {
			a.queue.Requeue()
			if inbox != nil {
				inbox.Requeue()
			}
			return
		}
		if err := a.queue.Ack(); err != nil {
			a.logger.Warn("ack notifications", "err", err)
		}
		if inbox != nil {
			if err := inbox.Ack(ctx); err != nil {
				a.logger.Warn("ack team messages", "err", err)
			}
		}
	}
}
