package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keel-dev/keel/internal/sandbox"

	"github.com/keel-dev/keel/internal/settings"
)

// DefaultTimeout applies to a hook without its own timeout.
const DefaultTimeout = 60 * time.Second

// Config configures a [Runner].
type Config struct {
	// Hooks are the merged settings' hook groups ([settings.Settings.Hooks]).
	Hooks []settings.HookGroup
	// Plugins are the enabled plugins' hook groups; [Runner.SetPlugins] replaces them when the
	// plugins change.
	Plugins []settings.HookGroup
	// DisableAll turns every hook off (the disableAllHooks setting).
	DisableAll bool
	// ProjectDir is where hooks run, and the value of KEEL_PROJECT_DIR and CLAUDE_PROJECT_DIR.
	ProjectDir string
	// Trusted says the workspace is trusted; until it is, hooks from project-provided settings
	// (project and local scopes) are skipped with a notice.
	Trusted bool
	// Home anchors ~/ patterns in hooks' `if` conditions, as the permission checker's does;
	// empty means the user's home directory.
	Home string
	// Traceparent, if set, gives a hook the TRACEPARENT its process runs under (telemetry): a
	// hook on a tool event gets its tool call's span (toolUseID), any other the prompt's, so
	// what the hook traces joins the session's trace. "" leaves the environment as it is.
	Traceparent func(toolUseID string) string
	// Environ is the hooks' environment ("KEY=value"); nil inherits keel's own.
	Environ []string
	// Sandbox, when set, runs command hooks inside it (sandbox.wrapHooks); a hook whose
	// sandbox cannot start fails rather than run outside.
	Sandbox *sandbox.Sandbox
	// DefaultTimeout replaces [DefaultTimeout] when non-zero.
	DefaultTimeout time.Duration
	// OnAsync receives the result of each async hook when it finishes; may be nil. It is
	// called from the hook's goroutine.
	OnAsync func(Event, Result)
	// Callbacks are hook groups answered by Call instead of by commands (an Agent SDK's hook
	// callbacks); they count as trusted, and their answers read like a command's stdout.
	Callbacks []Callback
	Call      CallFunc
	// OnRun, if set, is told when each hook starts (done false) and finishes (done true), for
	// frontends that show hook activity; id pairs the two calls. It is called from the hooks'
	// goroutines.
	OnRun func(id string, ev Event, res Result, done bool)
	// Report receives one line for each hook that failed to do its job — it could not start,
	// timed out, exited with an error, or answered with output keel could not use — so the
	// user sees it in every output mode. May be nil; called from the goroutine running Run
	// (or the async hook's).
	Report func(problem string)
	// Logger may be nil.
	Logger *slog.Logger
}

// Runner fires hook events. It is safe for concurrent use.
type Runner struct {
	cfg    Config
	groups []group
	async  sync.WaitGroup
	// runs numbers hook runs, for OnRun's ids.
	runs atomic.Int64

	// mu guards onceDone.
	mu       sync.Mutex
	onceDone map[string]bool
	// pluginMu guards plugins, the groups of the enabled plugins.
	pluginMu sync.RWMutex
	plugins  []group
}

type group struct {
	event     Event
	matcher   matcher
	hooks     []hook
	callbacks []settings.HookCommand // Type "callback", Command the callback id
	from      settings.Origin
}

// New compiles cfg's hook groups. The problems are warnings for groups that can never run:
// events keel does not fire, matchers that do not compile, hook types other than "command".
func New(cfg Config) (*Runner, []settings.Problem) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DefaultTimeout == 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.Home == "" {
		cfg.Home, _ = os.UserHomeDir()
	}
	r := &Runner{cfg: cfg, onceDone: map[string]bool{}}
	var problems []settings.Problem
	warn := func(o settings.Origin, format string, args ...any) {
		problems = append(problems, warning(o, format, args...))
	}
	r.groups, problems = compile(cfg.Hooks)
	r.plugins, problems = compile(cfg.Plugins, problems...)
	for _, cb := range cfg.Callbacks {
		from := settings.Origin{Scope: settings.ScopeCLI, Path: "initialize"}
		ev := Event(cb.Event)
		if _, ok := eventTable.Get()[ev]; !ok {
			warn(from, "hooks.%s: keel does not fire this event, so its callbacks never run (events: %s)", cb.Event, eventList())
			continue
		}
		m, err := compileMatcher(cb.Matcher)
		if err != nil {
			warn(from, "hooks.%s: matcher %q is not a valid regular expression (%v); its callbacks never run", cb.Event, cb.Matcher, err)
			continue
		}
		cg := group{event: ev, matcher: m, from: from}
		for _, id := range cb.IDs {
			cg.callbacks = append(cg.callbacks, settings.HookCommand{Type: "callback", Command: id, Timeout: cb.Timeout, From: from})
		}
		r.groups = append(r.groups, cg)
	}
	return r, problems
}

// compile turns settings' hook groups into runnable ones; the problems are appended to those
// given.
func compile(groups []settings.HookGroup, problems ...settings.Problem) ([]group, []settings.Problem) {
	warn := func(o settings.Origin, format string, args ...any) {
		problems = append(problems, warning(o, format, args...))
	}
	var out []group
	for _, g := range groups {
		ev := Event(g.Event)
		if _, ok := eventTable.Get()[ev]; !ok {
			warn(g.From, "hooks.%s: keel does not fire this event, so its hooks never run (events: %s)", g.Event, eventList())
			continue
		}
		m, err := compileMatcher(g.Matcher)
		if err != nil {
			warn(g.From, "hooks.%s: matcher %q is not a valid regular expression (%v); its hooks never run", g.Event, g.Matcher, err)
			continue
		}
		cg := group{event: ev, matcher: m, from: g.From}
		for _, h := range g.Hooks {
			if h.Type != "command" {
				warn(h.From, "hooks.%s: hook type %q is not supported (only \"command\"); skipped", g.Event, h.Type)
				continue
			}
			ch, problem := compileHook(ev, h)
			if problem != "" {
				warn(h.From, "hooks.%s: %s", g.Event, problem)
			}
			cg.hooks = append(cg.hooks, ch)
		}
		out = append(out, cg)
	}
	return out, problems
}

func warning(o settings.Origin, format string, args ...any) settings.Problem {
	return settings.Problem{Severity: settings.SeverityWarning, Path: o.Path, Line: o.Line, Col: o.Col, Msg: fmt.Sprintf(format, args...)}
}

// SetPlugins replaces the plugins' hook groups (a plugin enabled or disabled while the session
// runs); events fired from then on use the new set. It returns the groups' problems as New
// does.
func (r *Runner) SetPlugins(groups []settings.HookGroup) []settings.Problem {
	compiled, problems := compile(groups)
	r.pluginMu.Lock()
	r.plugins = compiled
	r.pluginMu.Unlock()
	return problems
}

// allGroups are the settings' groups (callbacks included), then the plugins'.
func (r *Runner) allGroups() []group {
	r.pluginMu.RLock()
	defer r.pluginMu.RUnlock()
	if len(r.plugins) == 0 {
		return r.groups
	}
	return append(r.groups[:len(r.groups):len(r.groups)], r.plugins...)
}

func eventList() string {
	var names []string
	for _, e := range Events() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ")
}

// Result is what one hook did.
type Result struct {
	Command  string
	From     settings.Origin
	ExitCode int // -1 when the hook did not exit on its own
	Stdout   string
	Stderr   string
	Duration time.Duration
	TimedOut bool
	// Cancelled is set when the caller's context ended (an interrupt) before the hook did.
	Cancelled bool
	// Err is set when the hook could not start, timed out or was cancelled: a non-blocking
	// error for the user.
	Err error
	// Warning is a non-blocking problem with the hook's answer (unparsable JSON, exit 1, …).
	Warning string

	Decision          Decision
	Reason            string
	UpdatedInput      json.RawMessage
	AdditionalContext string
	StopSession       bool // "continue": false
	StopReason        string
	SuppressOutput    bool
	SystemMessage     string
	// Action and Content answer an Elicitation (or replace an ElicitationResult's answer).
	Action  string
	Content json.RawMessage
	// UpdatedPermissions are a PermissionRequest allow's permission updates (the Agent SDK's
	// PermissionUpdate objects, as sent); Interrupt is a deny's request to stop the turn.
	UpdatedPermissions json.RawMessage
	Interrupt          bool
	// Retry is a PermissionDenied hook's: the model may try the call again.
	Retry bool
	// DisplayContent is a MessageDisplay hook's replacement text, nil when none.
	DisplayContent *string
	// WatchPaths are files the hook asks to be told about (FileChanged).
	WatchPaths []string
}

// Outcome is the folded answer of one event's hooks.
type Outcome struct {
	Event Event
	// Decision is the most restrictive of the hooks' decisions.
	Decision Decision
	// Reason joins the reasons of the hooks that gave Decision: for a block, what goes back to
	// the model (exit-2 stderr or the JSON reason).
	Reason string
	// UpdatedInput is the first replacement tool input, in settings order; nil if none or if
	// the call is blocked.
	UpdatedInput      json.RawMessage
	AdditionalContext []string
	// StopSession: a hook said "continue": false; the session stops with StopReason.
	StopSession    bool
	StopReason     string
	SystemMessages []string
	// Action and Content are the first hook answer to an Elicitation or ElicitationResult, in
	// settings order; Action is empty when no hook answered. A block (exit 2) is a decline.
	Action  string
	Content json.RawMessage
	// UpdatedPermissions is the first PermissionRequest allow's permission updates; Interrupt
	// says a deny asked to stop the turn; Retry that a PermissionDenied hook allows a retry.
	UpdatedPermissions json.RawMessage
	Interrupt          bool
	Retry              bool
	// DisplayContent is the first MessageDisplay replacement, in settings order.
	DisplayContent *string
	// WatchPaths joins every hook's files to watch.
	WatchPaths []string
	// Results holds every hook that ran, in settings order, for the UI.
	Results []Result
	// Notices are for the user: hooks skipped (untrusted workspace), async hooks started.
	Notices []string
}

type planned struct {
	cmd  settings.HookCommand
	from settings.Origin
}

// Run fires ev: every matching hook runs in parallel, and Run returns when all have finished or
// timed out (async hooks excepted: they finish later, see [Config.OnAsync] and [Runner.Wait]).
func (r *Runner) Run(ctx context.Context, ev Event, in Input) Outcome {
	spec, ok := eventTable.Get()[ev]
	if !ok {
		panic(fmt.Sprintf("hooks: Run with unknown event %q", ev)) // a programmer error
	}
	out := Outcome{Event: ev}
	if r.cfg.DisableAll {
		return out
	}
	plan := r.plan(ev, spec, in, &out)
	if len(plan) == 0 {
		return out
	}
	stdin, err := in.encode(ev)
	if err != nil {
		out.Notices = append(out.Notices, err.Error())
		return out
	}
	var sync_, async []planned
	for _, p := range plan {
		if p.cmd.Async {
			async = append(async, p)
		} else {
			sync_ = append(sync_, p)
		}
	}
	for _, p := range async {
		out.Notices = append(out.Notices, fmt.Sprintf("async hook %q started", p.cmd.Command))
		r.async.Go(func() {
			res := r.exec(context.WithoutCancel(ctx), ev, in, p, stdin)
			res.interpret(ev)
			r.report(ev, res)
			r.cfg.Logger.Info("async hook finished", "event", ev, "command", p.cmd.Command, "exit", res.ExitCode, "dur", res.Duration)
			if r.cfg.OnAsync != nil {
				r.cfg.OnAsync(ev, res)
			}
		})
	}
	out.Results = make([]Result, len(sync_))
	var wg sync.WaitGroup
	for i, p := range sync_ {
		wg.Go(func() {
			res := r.exec(ctx, ev, in, p, stdin)
			res.interpret(ev)
			out.Results[i] = res // by index: order never depends on completion
		})
	}
	wg.Wait()
	for _, res := range out.Results {
		r.report(ev, res)
	}
	out.fold()
	return out
}

// report passes a hook's failure on to Config.Report. A hook cancelled because the user
// interrupted is not a failure.
func (r *Runner) report(ev Event, res Result) {
	if r.cfg.Report == nil {
		return
	}
	var what string
	switch {
	case res.Cancelled:
		return
	case res.Err != nil:
		what = res.Err.Error()
	case res.Warning != "":
		what = res.Warning
	default:
		return
	}
	where := res.From.Path
	if res.From.Line > 0 {
		where = fmt.Sprintf("%s:%d", res.From.Path, res.From.Line)
	}
	r.cfg.Report(fmt.Sprintf("%s hook %q (%s): %s", ev, res.Command, where, what))
}

// plan picks the hooks ev runs: matching groups, trusted sources, once-hooks not yet run, and
// each distinct command once.
func (r *Runner) plan(ev Event, spec eventSpec, in Input, out *Outcome) []planned {
	var plan []planned
	seen := map[string]bool{}
	for _, g := range r.allGroups() {
		if g.event != ev || (spec.matchOn != nil && !g.matcher.match(spec.matchOn(in))) {
			continue
		}
		for _, h := range g.callbacks {
			if !seen["\x00callback "+h.Command] && r.cfg.Call != nil {
				seen["\x00callback "+h.Command] = true
				plan = append(plan, planned{cmd: h, from: h.From})
			}
		}
		for _, gh := range g.hooks {
			h := gh.cmd
			if seen[h.Command] || !r.condition(ev, gh, in) {
				continue
			}
			seen[h.Command] = true
			if g.from.Scope.ProjectProvided() && !r.cfg.Trusted {
				out.Notices = append(out.Notices, fmt.Sprintf(
					"%s hook %q from %s:%d not run: the workspace is not trusted (run `keel trust`, or pass --trust)",
					ev, h.Command, h.From.Path, h.From.Line))
				continue
			}
			if h.Once && !r.claimOnce(ev, h) {
				continue
			}
			plan = append(plan, planned{cmd: h, from: h.From})
		}
	}
	return plan
}

func (r *Runner) claimOnce(ev Event, h settings.HookCommand) bool {
	key := fmt.Sprintf("%s\x00%s\x00%s:%d", ev, h.Command, h.From.Path, h.From.Line)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.onceDone[key] {
		return false
	}
	r.onceDone[key] = true
	return true
}

// Has reports whether some hook would run for ev (for some matcher value): an event nobody
// handles can then be left out entirely, as elicitation is when no one can answer.
func (r *Runner) Has(ev Event) bool {
	if r.cfg.DisableAll {
		return false
	}
	for _, g := range r.allGroups() {
		if g.event == ev && (r.cfg.Trusted || !g.from.Scope.ProjectProvided()) &&
			(len(g.callbacks) > 0 || slices.ContainsFunc(g.hooks, func(h hook) bool { return !h.never })) {
			return true
		}
	}
	return false
}

// Wait blocks until every async hook started so far has finished.
func (r *Runner) Wait() { r.async.Wait() }

func (r *Runner) exec(ctx context.Context, ev Event, in Input, p planned, stdin []byte) Result {
	timeout := r.cfg.DefaultTimeout
	if p.cmd.Timeout > 0 {
		timeout = time.Duration(p.cmd.Timeout * float64(time.Second))
	}
	id := fmt.Sprintf("hook-%d", r.runs.Add(1))
	if r.cfg.OnRun != nil {
		name := p.cmd.Command
		if p.cmd.Type == "callback" {
			name = "callback " + name
		}
		r.cfg.OnRun(id, ev, Result{Command: name, From: p.from}, false)
	}
	if p.cmd.Type == "callback" {
		res := r.callback(ctx, p, in.ToolUseID, stdin, timeout)
		if r.cfg.OnRun != nil {
			r.cfg.OnRun(id, ev, res, true)
		}
		return res
	}
	env := r.cfg.Environ
	if env == nil {
		env = os.Environ()
	}
	env = append(env[:len(env):len(env)],
		"KEEL_PROJECT_DIR="+r.cfg.ProjectDir, "CLAUDE_PROJECT_DIR="+r.cfg.ProjectDir)
	if r.cfg.Traceparent != nil {
		if tp := r.cfg.Traceparent(in.ToolUseID); tp != "" {
			env = append(env, "TRACEPARENT="+tp)
		}
	}
	env = append(env, p.cmd.Env...)
	res := runCommand(ctx, p.cmd.Command, r.cfg.ProjectDir, env, stdin, timeout, r.cfg.Sandbox)
	res.From = p.from
	if r.cfg.OnRun != nil {
		r.cfg.OnRun(id, ev, res, true)
	}
	return res
}

// fold combines the results into the outcome.
func (o *Outcome) fold() {
	for _, r := range o.Results {
		o.Decision = max(o.Decision, r.Decision)
	}
	var reasons []string
	for _, r := range o.Results {
		if r.Decision == o.Decision && o.Decision != DecisionNone && r.Reason != "" {
			reasons = append(reasons, r.Reason)
		}
		if r.UpdatedInput != nil && o.Decision != DecisionBlock {
			if o.UpdatedInput == nil {
				o.UpdatedInput = r.UpdatedInput
			} else {
				o.Notices = append(o.Notices, fmt.Sprintf("hook %q also changed the tool input; the first change (settings order) is used", r.Command))
			}
		}
		if r.AdditionalContext != "" {
			o.AdditionalContext = append(o.AdditionalContext, r.AdditionalContext)
		}
		if r.StopSession && !o.StopSession {
			o.StopSession, o.StopReason = true, r.StopReason
		}
		if r.SystemMessage != "" {
			o.SystemMessages = append(o.SystemMessages, r.SystemMessage)
		}
		if r.Action != "" && o.Action == "" {
			o.Action, o.Content = r.Action, r.Content
		}
		if r.UpdatedPermissions != nil && o.UpdatedPermissions == nil && o.Decision == DecisionAllow {
			o.UpdatedPermissions = r.UpdatedPermissions
		}
		o.Interrupt = o.Interrupt || (r.Interrupt && o.Decision == DecisionBlock)
		o.Retry = o.Retry || r.Retry
		if o.DisplayContent == nil {
			o.DisplayContent = r.DisplayContent
		}
		o.WatchPaths = append(o.WatchPaths, r.WatchPaths...)
	}
	o.Reason = strings.Join(reasons, "\n")
}

// cappedBuffer keeps the first limit bytes written and counts the rest, so a hook that prints
// without end cannot exhaust memory.
type cappedBuffer struct {
	buf     strings.Builder
	limit   int
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	room := c.limit - c.buf.Len()
	if room < len(p) {
		c.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}

func (c *cappedBuffer) String() string {
	if c.dropped > 0 {
		return c.buf.String() + fmt.Sprintf("\n[%d more bytes of hook output dropped]", c.dropped)
	}
	return c.buf.String()
}

var _ io.Writer = (*cappedBuffer)(nil)
