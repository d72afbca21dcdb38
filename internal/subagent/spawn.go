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
	// item says the prompt is one item of a fan-out (see itemAfterListings).
	item       bool
	itemShared int
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
	// mem is the child's memory directory (its definition's memory key); hooks run for its
	// calls: the session's and its definition's.
	mem   *agentMemory
	hooks hooks.EventRunner
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

// prepare builds the child's loop: its context (see the package doc), permissions under the parent's
// ceiling, its pool and system prompt, and its transcript. The agent itself is built by
// [Runner.NewAgent], as every agent is.
func (r *Runner) prepare(ctx context.Context, s spawn) (_ *child, err error) {
	id := s.id
	if id == "" {
		id = newID()
	}
	p := s.parent
	n := &node{id: id, owner: id, parent: p, def: s.def, depth: p.depth + 1, fork: s.fork, inbox: &inbox{}}
	c := &child{spec: s, n: n, started: time.Now()}
	defer func() {
		if err != nil {
			c.closeMCP(r)
		}
	}()
	spec := AgentSpec{Kind: KindSubagent, Origin: event.Origin{AgentID: id, AgentName: s.def.Name, ParentToolUseID: s.toolUseID},
		MaxTokens: p.p.MaxTokens, MaxTurns: s.def.MaxTurns, Source: "agent:" + s.def.Name,
		Prepare: r.cfg.Prepare, AfterTurn: r.AfterTurn(id), Logger: r.logger.With("agent", id, "type", s.def.Name)}
	if spec.MaxTurns == 0 {
		spec.MaxTurns = DefaultMaxTurns
	}
	dirs, err := r.workspace(ctx, c, &spec)
	if err != nil {
		return nil, err
	}
	mode, err := r.permissions(c, &spec, dirs)
	if err != nil {
		return nil, err
	}
	spec.Model = r.model(p, s)
	withEffort(&spec, s.def)
	if s.fork {
		err = r.forkParts(ctx, c, &spec)
	} else {
		err = r.childParts(ctx, c, &spec, mode)
	}
	if err != nil {
		return nil, err
	}
	c.history, c.initial = startHistory(s, c.history)
	return c, r.build(ctx, c, spec)
}

// workspace gives the child its working state: a clone of its parent's file-read state, or a
// worktree of its own (isolation: worktree), which is then its only working directory.
func (r *Runner) workspace(ctx context.Context, c *child, spec *AgentSpec) (dirs []string, err error) {
	s := c.spec
	spec.State, spec.Files = s.parent.p.State(), s.parent.p.Files.Clone()
	if s.in.Isolation != string(agentdef.IsolationWorktree) && s.def.Isolation != agentdef.IsolationWorktree {
		return nil, nil
	}
	if r.cfg.Worktrees == nil {
		return nil, errors.New("isolation: worktree needs a git repository")
	}
	wt, err := r.cfg.Worktrees.Create(ctx, "agent-"+c.n.id)
	if err != nil {
		return nil, err
	}
	c.wt = wt
	spec.State = tool.State{Cwd: wt.Path}
	spec.Files = tool.NewFileState() // reads of the main tree say nothing about the worktree's files
	return []string{wt.Path}, nil
}

// permissions gives the child its checker — its parent's rules plus its definition's, under
// its parent's whole policy as a ceiling, with its memory directory granted — and its gate
// (PreToolUse hooks, the session's and its definition's).
func (r *Runner) permissions(c *child, spec *AgentSpec, dirs []string) (permission.Mode, error) {
	s, p, def := c.spec, c.spec.parent, c.spec.def
	info := permission.AgentInfo{Name: def.Name, Color: def.Color, ID: c.n.id}
	var asker permission.Asker
	mode := permission.ModeBubble
	if s.mate != nil {
		spec.Origin.AgentName = s.mate.name
		info = permission.AgentInfo{Name: s.mate.name, Color: s.mate.color, ID: c.n.id}
		asker = s.mate.asker
		// A teammate asks through the team, not its parent: it takes the lead's mode
		// explicitly (bubble would send its questions to the lead's asker directly).
		mode = p.p.Checker.Policy().Mode
	}
	if want := s.permissionMode(); want != "" {
		m, err := permission.ParseMode(want)
		if err != nil {
			return "", err
		}
		mode = m
	}
	// The child starts from its parent's rules (the session's allow, ask and deny rules hold
	// for its agents too) plus its own; the parent's whole policy is its ceiling.
	policy := permission.Policy{Mode: mode, Dirs: dirs, Rules: p.p.Checker.Policy().Rules, PlanDenies: s.mate != nil}
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
	c.checker = p.p.Checker.Child(policy, info, asker)
	if def.Memory != "" && !s.fork {
		m, err := openMemory(def, r.cfg.Home, r.cfg.ProjectDir, refusal(c.checker.ReadFilter(), r.cfg.Masked))
		if err != nil {
			return "", err
		}
		c.mem = m
		c.checker.Grant(m.rules...)
	}
	own, err := r.agentHooks(def)
	if err != nil {
		return "", err
	}
	c.hooks = hooks.Join(r.cfg.Hooks, own)
	spec.Gate = checkGate{c.checker}
	if r.cfg.Gate != nil {
		spec.Gate = r.cfg.Gate(c.checker, spec.Origin, c.hooks)
	}
	spec.Stop = stopHook{r: r, n: c.n, hooks: c.hooks}
	return mode, nil
}

// withEffort puts the definition's effort on the child's requests as a thinking budget,
// raising max_tokens when it would not leave room for it.
func withEffort(spec *AgentSpec, def *agentdef.Definition) {
	budget := EffortBudget(def.Effort)
	if budget <= 0 {
		return
	}
	spec.Thinking = &provider.Thinking{BudgetTokens: budget}
	if max := spec.MaxTokens; (max == 0 && budget >= loop.DefaultMaxTokens) || (max > 0 && budget >= max) {
		spec.MaxTokens = budget + thinkingHeadroom
	}
}

// forkParts makes a fork child's request its parent's, byte for byte: the same model,
// budget, thinking, cache placement, source (whose TTL is part of the bytes), rendered system
// prompt and pool, and the parent's last turn with the directive appended.
func (r *Runner) forkParts(ctx context.Context, c *child, spec *AgentSpec) error {
	s, p := c.spec, c.spec.parent
	spec.Kind = KindFork
	p.mu.Lock()
	last, sys, reply := p.lastReq, p.lastSys, p.lastReply
	p.mu.Unlock()
	if last == nil && s.history == nil {
		return errors.New("there is no turn to fork yet")
	}
	if last != nil {
		spec.Model, spec.MaxTokens, spec.Thinking, spec.Source = last.Model, last.MaxTokens, last.Thinking, last.Source
	} else {
		sys = p.p.System(ctx)
		spec.Source = p.p.Source
	}
	spec.Prepare = p.p.Prepare
	spec.System = func(context.Context) loop.System { return sys }
	spec.Pool = p.p.Pool
	if s.history == nil {
		var shared provider.BlockRef
		c.history, shared = forkHistory(last, reply, s.in.Prompt)
		spec.Prepare = withSharedPrefix(p.p.Prepare, shared)
	}
	return nil
}

// childParts gives a subagent or teammate its own pool (its parent's, filtered by its
// definition, with its own MCP servers), system prompt and, for a new one, its first
// message (preloaded skills and the prompt).
func (r *Runner) childParts(ctx context.Context, c *child, spec *AgentSpec, mode permission.Mode) error {
	s, n, def := c.spec, c.n, c.spec.def
	filter := Filter{Builtin: def.Source == agentdef.SourceBuiltin, Background: s.background, PlanMode: mode == permission.ModePlan,
		AllowAgent: n.depth < r.cfg.MaxDepth && s.mate == nil, Tools: def.Tools, Disallowed: def.DisallowedTools, MCPServers: mcpNames(def),
		Teammate: s.mate != nil}
	if inline := inlineServers(def); len(inline) > 0 {
		if r.cfg.MCP == nil {
			return fmt.Errorf("agent %s configures MCP servers, which this session cannot start", def.Name)
		}
		m, err := r.cfg.MCP.StartServers(ctx, def, inline)
		if err != nil {
			return fmt.Errorf("start the MCP servers of agent %s: %w", def.Name, err)
		}
		c.mcp = m
	}
	// Read once: the parent's Parent is replaced at the start of its next turn, while a
	// background child or a teammate goes on running.
	parentPool := s.parent.p.Pool
	spec.Pool = func(ctx context.Context) *tool.Pool {
		pool := parentPool(ctx)
		if c.mcp != nil {
			pool = tool.Assemble(pool.Tools(), c.mcp.Tools(ctx))
		}
		return filter.Apply(pool)
	}
	cwd := spec.State.Cwd
	switch {
	case s.mate != nil:
		spec.Kind = KindTeammate
		spec.System = s.mate.system(s.parent.p.System, def)
	case r.cfg.System != nil:
		spec.System = func(ctx context.Context) loop.System { return r.cfg.System(ctx, def, cwd) }
	default:
		id := n.id
		if s.item { // siblings of a fan-out share their system prompt: no id in it
			id = ""
		}
		sys := defaultSystem(def, id, cwd)
		spec.System = func(context.Context) loop.System { return sys }
	}
	if c.mem != nil {
		spec.System = withSection(spec.System, "agent-memory", c.mem.text)
	}
	if s.history != nil {
		return nil
	}
	blocks, err := r.preloadSkills(ctx, def, cwd)
	if err != nil {
		return err
	}
	c.history = []message.Message{message.User(append(blocks, message.Text(s.in.Prompt))...)}
	return nil
}

// startHistory is what the child's first run starts from — built is its fresh history, a
// continued one's is the spawn's — and the messages of it not yet in its transcript.
func startHistory(s spawn, built []message.Message) (history, fresh []message.Message) {
	switch {
	case s.history != nil && s.mate != nil:
		// A resumed teammate continues where it stopped; what it does next comes from its
		// inbox and the board.
		return dropIncomplete(s.history), nil
	case s.history != nil:
		history = append(dropIncomplete(s.history), message.User(message.Text(s.in.Prompt)))
		return history, history[len(history)-1:]
	}
	return built, built
}

// build finishes the child: its observers (its task queue, its inbox, the team's, the
// session's listing), its sink and transcript, and then the agent, through the one
// constructor.
func (r *Runner) build(ctx context.Context, c *child, spec AgentSpec) error {
	s, n := c.spec, c.n
	queue, err := r.cfg.Tasks.Queue(n.id)
	if err != nil {
		return err
	}
	spec.Observers = []loop.Observer{queue, n.inbox}
	if s.mate != nil {
		spec.Observers = append(spec.Observers, s.mate.observers...)
	}
	if r.cfg.Observers != nil {
		obs := r.cfg.Observers(spec.Pool, c.history)
		if s.item && s.history == nil && s.mate == nil && !s.fork {
			spec.Prepare = itemAfterListings(ctx, c, obs, spec.Prepare)
		}
		spec.Observers = append(spec.Observers, obs...)
	}
	c.sink = &childSink{r: r, queue: queue, w: s.writer}
	if s.mate != nil {
		c.sink.synced = s.mate.synced
	} else {
		c.sink.progress = &progress{id: n.id, toolUseID: s.toolUseID, description: s.in.Description, subagentType: s.def.Name,
			origin: spec.Origin, started: c.started}
	}
	if c.sink.w == nil && r.cfg.SessionPath != "" {
		if err := r.openTranscript(ctx, c, spec.State.Cwd); err != nil {
			return err
		}
	}
	spec.Sink = c.sink
	spec.Compaction = Compaction{Record: c.sink.compacted}
	c.agent = r.NewAgent(spec)
	agent := c.agent
	n.p = Parent{Model: agent.Model, MaxTokens: agent.MaxTokens, Thinking: agent.Thinking, System: agent.System, Pool: agent.Pool,
		Checker: c.checker, Files: agent.Files, State: func() tool.State { return agent.State }, Prepare: agent.Prepare, Source: agent.Source}
	return nil
}

// withSharedPrefix has prepare mark the end of the prefix a turn's fork children (or a
// fan-out's items) share, unless the loop marks a block already: once the agent has cleared
// stale tool results it marks the block before the first stub (or its newest stub), the end
// of the prefix its own next request reads. The agent's first request wrote the shared
// prefix's entry; taking the loop's mark instead would leave each request after a clearing
// reading the cache only up to the shared prefix.
func withSharedPrefix(prepare func(*provider.Request), shared provider.BlockRef) func(*provider.Request) {
	return func(r *provider.Request) {
		if r.SharedPrefix == nil {
			r.SharedPrefix = &shared
		}
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
	who := "You are a subagent"
	if id != "" {
		who += " (id " + id + ")"
	}
	env := fmt.Sprintf("%s of keel, a coding agent. Working directory: %s\n"+
		"When you are done, reply with a concise report: the agent that started you sees only your final message.", who, cwd)
	blocks := []provider.SystemBlock{{Text: def.Prompt}, {Text: env}}
	if def.Prompt == "" {
		blocks = blocks[1:]
		return loop.System{Blocks: blocks, Names: []string{"environment"}}
	}
	return loop.System{Blocks: blocks, Names: []string{"agent:" + def.Name, "environment"}}
}

// run runs a prepared child to the end: SubagentStart hooks, the driver, usage roll-up, the
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
	ran, err := loop.Drive(ctx, c.agent, c.history, c.initial, childCycle{r: r, c: c})
	r.addUsage(ran.Ledger)
	out := ran.Out
	if out == nil {
		return result{err: err}
	}
	res = result{text: out.Text, usage: ran.Usage, toolUses: ran.ToolUses, duration: time.Since(c.started)}
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
	case out.Subtype == loop.SubtypeMaxBudget:
		// The session's budget is spent: the child stops, and says so.
		res.err = errors.New(out.Text)
	}
	if c.wt != nil {
		res.wtNote = r.finishWorktree(context.WithoutCancel(ctx), c)
	}
	return res
}

// childCycle is a subagent's life between runs: a message sent to it while it finished its
// last run starts another; without one it is done.
type childCycle struct {
	r *Runner
	c *child
}

func (y childCycle) Next(ctx context.Context, ran loop.Ran) (message.Message, bool) {
	r, n, c := y.r, y.c.n, y.c
	// Checking the inbox and leaving the live set under one lock means a sender either
	// reaches the inbox in time or finds the agent finished and continues it.
	r.mu.Lock()
	defer r.mu.Unlock()
	pending := n.inbox.Observe(ctx)
	if ran.Err != nil || len(pending) == 0 || ran.Out.Subtype == loop.SubtypeMaxBudget {
		r.done[n.id] = &record{def: c.spec.def, fork: c.spec.fork, history: ran.Out.Messages, owner: n.parent.owner, depth: n.depth}
		delete(r.agents, n.id)
		return message.Message{}, false
	}
	return message.User(pending...), true
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
	hooks hooks.EventRunner
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
