package subagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/worktree"
)

// spawn is one request to run a child: a new one from an Agent call, or a continued one.
type spawn struct {
	parent    *node
	in        Input
	def       *agentdef.Definition
	fork      bool
	toolUseID string
	// background runs it as a task; the Agent call returns at once.
	background bool
	// id, history and writer are set when an existing agent continues.
	id      string
	history []message.Message
	writer  *transcript.Writer
	// plain drops the trailer (skills' fork runs want only the text).
	plain bool
	// foreground overrides a definition's background: true (continuations, skills).
	foreground bool
	// mate makes the child a teammate (see teammate.go).
	mate *mate
}

// child is a prepared child agent.
type child struct {
	spec    spawn
	n       *node
	agent   *loop.Agent
	history []message.Message
	// initial are the history messages not yet in the child's transcript.
	initial []message.Message
	sink    *childSink
	wt      *worktree.Worktree
	started time.Time
	// mcp are the child's own MCP servers, stopped when it ends.
	mcp     ChildMCP
	checker *permission.Checker
}

// result is how a child's run ended.
type result struct {
	text        string
	interrupted bool
	err         error
	usage       message.Usage
	toolUses    int
	duration    time.Duration
	wtNote      string
}

// launch prepares the child and runs it in the foreground or as a background task.
func (r *Runner) launch(ctx context.Context, s spawn) tool.Result {
	s.background = !s.foreground && (s.background || s.in.RunInBackground || s.def.Background)
	if r.detachable(s) {
		return r.detach(ctx, s)
	}
	c, err := r.prepare(ctx, s)
	if err != nil {
		return tool.Errorf("start agent: %v", err)
	}
	// The agent is live from now on, so a SendMessage reaches its inbox even before its
	// goroutine starts.
	r.mu.Lock()
	r.agents[c.n.id] = c.n
	r.mu.Unlock()
	task := background.Spec{ID: c.n.id, Kind: "local_agent", Owner: s.parent.owner, Description: s.in.Description,
		ToolUseID: s.toolUseID, Origin: c.agent.Origin, Prompt: s.in.Prompt, SubagentType: s.def.Name}
	if s.background {
		_, err := r.cfg.Tasks.Start(task, func(ctx context.Context, t *background.Task) (string, error) {
			res := r.run(ctx, c)
			t.SetUsage(res.taskUsage())
			return res.text, res.err
		})
		if err != nil {
			r.mu.Lock()
			delete(r.agents, c.n.id)
			r.mu.Unlock()
			return tool.Errorf("start agent: %v", err)
		}
		return receipt(c, false)
	}
	announce := func() {
		r.emit(event.TaskStarted{Origin: c.agent.Origin, TaskID: c.n.id, ToolUseID: s.toolUseID, Description: s.in.Description,
			SubagentType: s.def.Name, TaskType: "local_agent", Prompt: s.in.Prompt})
	}
	var res result
	if s.plain {
		// A skill's fork wants its text back; it cannot be moved to the background.
		announce()
		res = r.run(ctx, c)
	} else {
		var detached bool
		if res, detached = r.runForeground(ctx, c, task, announce); detached {
			return receipt(c, true)
		}
	}
	status := "completed"
	if res.err != nil {
		status = "failed"
	}
	r.emit(event.TaskUpdated{Origin: c.agent.Origin, TaskID: c.n.id, Status: status})
	return r.toolResult(c, res)
}

// taskUsage is the run's use, as task events report it.
func (res result) taskUsage() event.TaskUsage {
	return event.TaskUsage{TotalTokens: res.usage.TotalInput() + res.usage.OutputTokens, ToolUses: res.toolUses, Duration: res.duration}
}

func trailerLine(id string) string {
	return fmt.Sprintf("agentId: %s (use SendMessage with to: '%s' to continue this agent)", id, id)
}

// toolResult is what a foreground Agent call returns: the child's final text and, unless the
// agent is one-shot, the trailer with its id and usage.
func (r *Runner) toolResult(c *child, res result) tool.Result {
	text := res.text
	if res.wtNote != "" {
		text += "\n\n" + res.wtNote
	}
	if text == "" && res.err != nil {
		text = "The agent failed: " + res.err.Error()
	}
	blocks := []message.Block{message.Text(text)}
	if !c.spec.plain && (!c.spec.def.OneShot || res.interrupted) {
		blocks = append(blocks, message.Text(fmt.Sprintf("%s\n<usage>subagent_tokens: %d\ntool_uses: %d\nduration_ms: %d</usage>",
			trailerLine(c.n.id), res.usage.TotalInput()+res.usage.OutputTokens, res.toolUses, res.duration.Milliseconds())))
	}
	status := "completed"
	switch {
	case res.interrupted:
		status = "interrupted"
	case res.err != nil:
		status = "error"
	}
	out := Output{Status: status, AgentID: c.n.id, AgentType: c.spec.def.Name, Prompt: c.spec.in.Prompt, Content: res.text,
		Model: c.agent.Model, DurationMS: res.duration.Milliseconds(), TotalTokens: res.usage.TotalInput() + res.usage.OutputTokens,
		ToolUseCount: res.toolUses}
	if c.wt != nil && res.wtNote != "" {
		out.Worktree, out.Branch = c.wt.Path, c.wt.Branch
	}
	return tool.Result{Content: blocks, IsError: res.err != nil && !res.interrupted, Output: out}
}

// prepare builds the child's loop: context per DESIGN §10, permissions under the parent's
// ceiling, its pool and system prompt, and its transcript.
func (r *Runner) prepare(ctx context.Context, s spawn) (_ *child, err error) {
	p := s.parent
	id := s.id
	if id == "" {
		id = newID()
	}
	def := s.def
	n := &node{id: id, owner: id, parent: p, def: def, depth: p.depth + 1, fork: s.fork, inbox: &inbox{}}
	origin := event.Origin{AgentID: id, AgentName: def.Name, ParentToolUseID: s.toolUseID}
	info := permission.AgentInfo{Name: def.Name, Color: def.Color, ID: id}
	var asker permission.Asker
	if s.mate != nil {
		origin.AgentName = s.mate.name
		info = permission.AgentInfo{Name: s.mate.name, Color: s.mate.color, ID: id}
		asker = s.mate.asker
	}
	c := &child{spec: s, n: n, started: time.Now()}
	defer func() {
		if err != nil {
			c.closeMCP(r)
		}
	}()

	state := p.p.State()
	files := p.p.Files.Clone()
	var dirs []string
	if s.in.Isolation == string(agentdef.IsolationWorktree) || def.Isolation == agentdef.IsolationWorktree {
		if r.cfg.Worktrees == nil {
			return nil, errors.New("isolation: worktree needs a git repository")
		}
		wt, err := r.cfg.Worktrees.Create(ctx, "agent-"+id)
		if err != nil {
			return nil, err
		}
		c.wt = wt
		state = tool.State{Cwd: wt.Path}
		dirs = []string{wt.Path}
		files = tool.NewFileState() // reads of the main tree say nothing about the worktree's files
	}

	mode := permission.ModeBubble
	if s.mate != nil {
		// A teammate asks through the team, not its parent: it takes the lead's mode
		// explicitly (bubble would send its questions to the lead's asker directly).
		mode = p.p.Checker.Policy().Mode
	}
	if want := s.permissionMode(); want != "" {
		m, err := permission.ParseMode(want)
		if err != nil {
			return nil, err
		}
		mode = m
	}
	// The child starts from its parent's rules (the session's allow, ask and deny rules hold
	// for its agents too) plus its own; the parent's whole policy is its ceiling.
	policy := permission.Policy{Mode: mode, Dirs: dirs, Rules: p.p.Checker.Policy().Rules}
	if def.Permissions != nil {
		src := permission.Source{Name: "agent", Path: def.Path}
		for _, set := range []struct {
			rules []string
			b     permission.Behavior
		}{{def.Permissions.Allow, permission.Allow}, {def.Permissions.Ask, permission.Ask}, {def.Permissions.Deny, permission.Deny}} {
			rules, _ := permission.ParseRules(set.rules, set.b, src)
			policy.Rules = append(policy.Rules, rules...)
		}
	}
	checker := p.p.Checker.Child(policy, info, asker)
	var mem *agentMemory
	if def.Memory != "" && !s.fork {
		m, err := openMemory(def, r.cfg.Home, r.cfg.ProjectDir)
		if err != nil {
			return nil, err
		}
		mem = m
		checker.Grant(m.rules...)
	}
	own, err := r.agentHooks(def)
	if err != nil {
		return nil, err
	}
	hookRunner := JoinHooks(r.cfg.Hooks, own)
	var gate tool.Gate = checkGate{checker}
	if r.cfg.Gate != nil {
		gate = r.cfg.Gate(checker, origin, hookRunner)
	}

	model := r.model(p, s)
	agent := &loop.Agent{
		Origin:    origin,
		Provider:  r.cfg.Provider,
		Model:     model,
		MaxTokens: p.p.MaxTokens,
		Gate:      gate,
		Files:     files,
		State:     state,
		SessionID: r.cfg.SessionID,
		MaxTurns:  def.MaxTurns,
		Source:    "agent:" + def.Name,
		Prepare:   r.cfg.Prepare,
		Logger:    r.logger.With("agent", id, "type", def.Name),
		AfterTurn: r.AfterTurn(id),
		Stop:      stopHook{r: r, n: n, hooks: hookRunner},

		Traceparent: r.cfg.Traceparent,
	}
	if agent.MaxTurns == 0 {
		agent.MaxTurns = DefaultMaxTurns
	}
	if budget := EffortBudget(def.Effort); budget > 0 {
		agent.Thinking = &provider.Thinking{BudgetTokens: budget}
		if max := agent.MaxTokens; (max == 0 && budget >= loop.DefaultMaxTokens) || (max > 0 && budget >= max) {
			agent.MaxTokens = budget + thinkingHeadroom
		}
	}

	if s.fork {
		p.mu.Lock()
		last, sys, reply := p.lastReq, p.lastSys, p.lastReply
		p.mu.Unlock()
		if last == nil && s.history == nil {
			return nil, errors.New("there is no turn to fork yet")
		}
		if last != nil {
			// The child's request must equal the parent's: same model, budget, thinking, cache
			// placement and source (whose TTL is part of the bytes).
			agent.Model, agent.MaxTokens, agent.Thinking = last.Model, last.MaxTokens, last.Thinking
			agent.Source = last.Source
		} else {
			sys = p.p.System(ctx)
			agent.Source = p.p.Source
		}
		agent.Prepare = p.p.Prepare
		agent.System = func(context.Context) loop.System { return sys }
		agent.Pool = p.p.Pool
		if s.history == nil {
			var shared provider.BlockRef
			c.history, shared = forkHistory(last, reply, s.in.Prompt)
			agent.Prepare = withSharedPrefix(p.p.Prepare, shared)
		}
	} else {
		filter := Filter{Builtin: def.Source == agentdef.SourceBuiltin, Background: s.background, PlanMode: mode == permission.ModePlan,
			AllowAgent: n.depth < r.cfg.MaxDepth && s.mate == nil, Tools: def.Tools, Disallowed: def.DisallowedTools, MCPServers: mcpNames(def),
			Teammate: s.mate != nil}
		if inline := inlineServers(def); len(inline) > 0 {
			if r.cfg.MCP == nil {
				return nil, fmt.Errorf("agent %s configures MCP servers, which this session cannot start", def.Name)
			}
			m, err := r.cfg.MCP.StartServers(ctx, def, inline)
			if err != nil {
				return nil, fmt.Errorf("start the MCP servers of agent %s: %w", def.Name, err)
			}
			c.mcp = m
		}
		// Read once: the parent's Parent is replaced at the start of its next turn, while a
		// background child or a teammate goes on running.
		parentPool := p.p.Pool
		agent.Pool = func(ctx context.Context) *tool.Pool {
			pool := parentPool(ctx)
			if c.mcp != nil {
				pool = tool.Assemble(pool.Tools(), c.mcp.Tools(ctx))
			}
			return filter.Apply(pool)
		}
		cwd := state.Cwd
		if s.mate != nil {
			agent.System = s.mate.system(p.p.System, def)
		} else if r.cfg.System != nil {
			agent.System = func(ctx context.Context) loop.System { return r.cfg.System(ctx, def, cwd) }
		} else {
			sys := defaultSystem(def, id, cwd)
			agent.System = func(context.Context) loop.System { return sys }
		}
		if mem != nil {
			agent.System = withSection(agent.System, "agent-memory", mem.text)
		}
		if s.history == nil {
			blocks, err := r.preloadSkills(ctx, def, cwd)
			if err != nil {
				return nil, err
			}
			c.history = []message.Message{message.User(append(blocks, message.Text(s.in.Prompt))...)}
		}
	}
	switch {
	case s.history != nil && s.mate != nil:
		// A resumed teammate continues where it stopped; what it does next comes from its
		// inbox and the board.
		c.history = dropIncomplete(s.history)
	case s.history != nil:
		c.history = append(dropIncomplete(s.history), message.User(message.Text(s.in.Prompt)))
		c.initial = c.history[len(c.history)-1:]
	default:
		c.initial = c.history
	}
	c.checker = checker
	n.p = Parent{Model: agent.Model, MaxTokens: agent.MaxTokens, Thinking: agent.Thinking, System: agent.System, Pool: agent.Pool,
		Checker: checker, Files: files, State: func() tool.State { return agent.State }, Prepare: agent.Prepare, Source: agent.Source}

	queue, err := r.cfg.Tasks.Queue(id)
	if err != nil {
		return nil, err
	}
	agent.Observers = []loop.Observer{queue, n.inbox}
	if r.cfg.Observers != nil {
		agent.Observers = append(agent.Observers, r.cfg.Observers(agent.Pool, c.history)...)
	}
	c.sink = &childSink{r: r, queue: queue, w: s.writer}
	if s.mate == nil {
		c.sink.progress = &progress{id: c.n.id, toolUseID: s.toolUseID, description: s.in.Description, subagentType: s.def.Name,
			origin: agent.Origin, started: c.started}
	}
	if c.sink.w == nil && r.cfg.SessionPath != "" {
		if err := r.openTranscript(ctx, c, state.Cwd); err != nil {
			return nil, err
		}
	}
	agent.Sink = c.sink
	c.agent = agent
	return c, nil
}

// withSharedPrefix has prepare mark the end of the prefix a turn's fork children share.
func withSharedPrefix(prepare func(*provider.Request), shared provider.BlockRef) func(*provider.Request) {
	return func(r *provider.Request) {
		r.SharedPrefix = &shared
		if prepare != nil {
			prepare(r)
		}
	}
}

func (r *Runner) model(p *node, s spawn) string {
	m := s.in.Model
	if m == "" {
		m = s.def.Model
	}
	if m == "" || m == agentdef.ModelInherit {
		return p.p.Model
	}
	if r.cfg.ResolveModel != nil {
		return r.cfg.ResolveModel(m)
	}
	return m
}

func (r *Runner) openTranscript(ctx context.Context, c *child, cwd string) error {
	path, meta := transcript.AgentPaths(r.cfg.SessionPath, c.n.id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("subagent transcript: %w", err)
	}
	w, err := transcript.Create(ctx, path, transcript.Options{SessionID: r.cfg.SessionID, CWD: cwd, Version: r.cfg.Version})
	if err != nil {
		return err
	}
	if err := transcript.WriteAgentMeta(meta, transcript.AgentMeta{AgentID: c.n.id, AgentType: c.spec.def.Name,
		Description: c.spec.in.Description, ParentSessionID: r.cfg.SessionID, ToolUseID: c.spec.toolUseID}); err != nil {
		_ = w.Close()
		return err
	}
	c.sink.w = w
	return nil
}

func defaultSystem(def *agentdef.Definition, id, cwd string) loop.System {
	env := fmt.Sprintf("You are a subagent (id %s) of keel, a coding agent. Working directory: %s\n"+
		"When you are done, reply with a concise report: the agent that started you sees only your final message.", id, cwd)
	blocks := []provider.SystemBlock{{Text: def.Prompt}, {Text: env}}
	if def.Prompt == "" {
		blocks = blocks[1:]
		return loop.System{Blocks: blocks, Names: []string{"environment"}}
	}
	return loop.System{Blocks: blocks, Names: []string{"agent:" + def.Name, "environment"}}
}

// run runs a prepared child to the end: SubagentStart hooks, the loop, usage roll-up, the
// worktree's fate, and the hand-over of its background tasks to its parent.
func (r *Runner) run(ctx context.Context, c *child) (res result) {
	n := c.n
	r.cfg.Tasks.Reclaim(n.id)
	defer func() {
		// A background task the child started outlives its turn: its parent gets the report.
		if err := r.cfg.Tasks.Adopt(n.id, n.parent.owner); err != nil {
			r.logger.Error("hand background tasks to parent", "agent", n.id, "err", err)
		}
		c.closeMCP(r)
		if c.sink.w != nil {
			if err := c.sink.w.Close(); err != nil {
				r.logger.Error("close subagent transcript", "agent", n.id, "err", err)
			}
		}
	}()

	if r.cfg.Hooks != nil && c.spec.history == nil {
		out := r.cfg.Hooks.Run(ctx, hooks.SubagentStart, r.hookInput(hooks.Input{AgentID: n.id, AgentType: c.spec.def.Name, Cwd: c.agent.State.Cwd}))
		if len(out.AdditionalContext) > 0 {
			last := &c.history[len(c.history)-1]
			for _, extra := range out.AdditionalContext {
				last.Content = append(last.Content, message.Text(extra))
			}
		}
	}
	for _, m := range c.initial {
		if _, err := c.sink.Append(ctx, m); err != nil {
			return result{err: err}
		}
	}
	history := c.history
	var (
		out      *loop.Outcome
		err      error
		usage    message.Usage
		ledger   cost.Ledger
		toolUses int
	)
	for {
		out, err = c.agent.Run(ctx, history)
		usage = usage.Add(out.Usage)
		ledger.Merge(out.Ledger)
		toolUses += countToolUses(out.Messages[len(history):])
		// A message sent while the agent finished its last turn is not lost: it starts
		// another. Checking the inbox and leaving the live set under one lock means a sender
		// either reaches the inbox in time or finds the agent finished and continues it.
		r.mu.Lock()
		pending := n.inbox.Observe(ctx)
		if err != nil || len(pending) == 0 {
			r.done[n.id] = &record{def: c.spec.def, fork: c.spec.fork, history: out.Messages, owner: n.parent.owner, depth: n.depth}
			delete(r.agents, n.id)
			r.mu.Unlock()
			break
		}
		r.mu.Unlock()
		next := message.User(pending...)
		if _, err = c.sink.Append(ctx, next); err != nil {
			break
		}
		history = append(out.Messages, next)
	}
	res = result{text: out.Text, usage: usage, toolUses: toolUses, duration: time.Since(c.started)}
	r.addUsage(ledger)
	switch {
	case err != nil && ctx.Err() != nil:
		res.interrupted = true
		res.text = "The agent was interrupted before it finished."
		if t := lastText(out.Messages); t != "" {
			res.text += " Its last message:\n" + t
		}
		res.err = err
	case err != nil:
		res.err = err
	case out.Subtype == "error_max_turns":
		res.text = strings.TrimSpace(lastText(out.Messages) + fmt.Sprintf("\n\n(The agent stopped at its limit of %d turns.)", c.agent.MaxTurns))
	}
	if c.wt != nil {
		res.wtNote = r.finishWorktree(context.WithoutCancel(ctx), c)
	}
	return res
}

func (r *Runner) finishWorktree(ctx context.Context, c *child) string {
	kept, err := r.cfg.Worktrees.Finish(ctx, c.wt)
	switch {
	case err != nil:
		return fmt.Sprintf("The worktree at %s was kept: %v", c.wt.Path, err)
	case kept:
		return fmt.Sprintf("The agent's changes are in the worktree %s on branch %s (kept for review).", c.wt.Path, c.wt.Branch)
	}
	return ""
}

func (r *Runner) hookInput(in hooks.Input) hooks.Input {
	if r.cfg.HookInput != nil {
		cwd := in.Cwd
		in = r.cfg.HookInput(in)
		if cwd != "" {
			in.Cwd = cwd
		}
	}
	return in
}

func countToolUses(msgs []message.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == message.RoleAssistant {
			n += len(m.ToolUses())
		}
	}
	return n
}

func lastText(msgs []message.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.RoleAssistant {
			if t := msgs[i].TextOf(); t != "" {
				return t
			}
		}
	}
	return ""
}

// stopHook runs SubagentStop when a child ends its turn; a blocking hook keeps it going.
type stopHook struct {
	r     *Runner
	n     *node
	hooks HookRunner
}

func (h stopHook) CheckStop(ctx context.Context, last message.Message, active bool) string {
	if h.hooks == nil {
		return ""
	}
	out := h.hooks.Run(ctx, hooks.SubagentStop, h.r.hookInput(hooks.Input{AgentID: h.n.id, AgentType: h.n.def.Name, StopHookActive: active}))
	if out.Decision != hooks.DecisionBlock {
		return ""
	}
	if out.Reason == "" {
		return "A SubagentStop hook asked you to continue."
	}
	return out.Reason
}

// closeMCP stops the child's own MCP servers.
func (c *child) closeMCP(r *Runner) {
	if c.mcp == nil {
		return
	}
	if err := c.mcp.Close(); err != nil {
		r.logger.Warn("stop agent MCP servers", "agent", c.n.id, "err", err)
	}
	c.mcp = nil
}
