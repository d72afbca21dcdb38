package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/toolpath"
)

// Policy is what a [Checker] enforces. It is a plain value: copy it, show
// it, build a child's from it with [Intersect].
type Policy struct {
	Mode  Mode
	Rules []Rule
	// Dirs are the working directories: the session's cwd first, then the
	// --add-dir and additionalDirectories ones. path and ./path rules are
	// anchored at Dirs[0], as are /path rules without a source directory.
	Dirs []string
	// Ceilings are policies this one may never exceed, set by [Intersect]:
	// each is evaluated on its own and the strictest answer wins.
	Ceilings []Policy
	// Protected are files and directories, besides the built-in protected names (.git,
	// .keel, .claude, .mcp.json…), whose edits ask even in acceptEdits: settings files, hook
	// scripts, keel's own directory. Absolute.
	Protected []string
	// PlanDenies makes plan mode deny what is not read-only instead of asking: a teammate's
	// plan goes to its lead as a message (plan_approval_request), not as a question.
	PlanDenies bool
}

// Intersect builds a child's policy under its parent's: the child never gets
// more than the parent allows (the parent's policy becomes a ceiling, so
// anything the parent would ask or deny is asked or denied), and a
// restrictive child stays restricted (its own mode and rules still apply).
// A bubble child takes the parent's mode; a child without directories takes
// the parent's.
func Intersect(parent, child Policy) Policy {
	out := child
	if out.Mode == ModeBubble {
		out.Mode = parent.Mode
	}
	if len(out.Dirs) == 0 {
		out.Dirs = parent.Dirs
	}
	top := parent
	top.Ceilings = nil
	out.Ceilings = slices.Concat(child.Ceilings, parent.Ceilings, []Policy{top})
	return out
}

// Decision is the outcome of a check.
type Decision struct {
	Behavior Behavior
	// Reason is shown to the user and, on a deny, to the model.
	Reason string
	// Rule is the rule that decided, with its source; nil when the mode or
	// an answer did.
	Rule *Rule
	// ReasonType classifies an ask as the Agent SDK names it (decision_reason_type):
	// "mode" when the permission mode asks (plan mode), "hook" when a hook does; empty
	// otherwise (a Rule says "rule").
	ReasonType string
	// Suggestions are allow rules that would let the call through; set
	// when the call was (or would be) asked.
	Suggestions []Rule
	// Asked is set when an [Asker] answered.
	Asked bool
	// UpdatedInput replaces the call's input when the answer changed it;
	// Interrupt says a deny asked to stop the turn.
	UpdatedInput json.RawMessage
	Interrupt    bool
}

// Config builds a [Checker].
type Config struct {
	Policy Policy
	// Asker answers what the policy leaves open; nil means [Headless].
	Asker Asker
	// Agent names the agent that owns this checker, for asks.
	Agent AgentInfo
	// Home anchors ~/ path rules and is what "~" in a tool's path means; empty means the
	// user's home directory ($HOME), and with neither ~/ rules match nothing.
	Home   string
	Logger *slog.Logger
	// Classifier judges the calls auto mode would ask about; nil asks them (auto.go).
	Classifier Classifier
}

// Checker decides tool calls for one agent. It is safe for concurrent use:
// a tool batch checks several calls at once, and "always allow" answers add
// rules under its lock.
type Checker struct {
	asker      Asker
	classifier Classifier
	agent      AgentInfo
	home       string
	logger     *slog.Logger
	denials    *Denials

	// mu guards policy.
	mu     sync.Mutex
	policy Policy
}

// New builds a checker. The policy is copied.
func New(cfg Config) *Checker {
	if cfg.Home == "" {
		cfg.Home, _ = os.UserHomeDir()
	}
	c := &Checker{asker: cfg.Asker, classifier: cfg.Classifier, agent: cfg.Agent, home: cfg.Home, logger: cfg.Logger, denials: &Denials{}}
	if c.asker == nil {
		c.asker = Headless{}
	}
	if c.logger == nil {
		c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.policy = clonePolicy(cfg.Policy)
	return c
}

func clonePolicy(p Policy) Policy {
	p.Rules = slices.Clone(p.Rules)
	p.Dirs = slices.Clone(p.Dirs)
	p.Protected = slices.Clone(p.Protected)
	p.Ceilings = slices.Clone(p.Ceilings)
	for i := range p.Ceilings {
		p.Ceilings[i] = clonePolicy(p.Ceilings[i])
	}
	return p
}

// Policy returns a copy of the current policy, rules added by answers
// included.
func (c *Checker) Policy() Policy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return clonePolicy(c.policy)
}

// SetMode switches the mode for the calls checked from now on (Shift+Tab in the terminal UI,
// a plan being approved). Ceilings are untouched: a child stays within its parent.
func (c *Checker) SetMode(m Mode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policy.Mode = m
}

// Denials returns this checker's denial counter.
func (c *Checker) Denials() *Denials { return c.denials }

// Child builds the checker of a subagent or teammate: its policy is
// [Intersect] of this checker's and child, its denial counter is fresh, and
// its asks go to asker, or to this checker's asker when asker is nil or the
// child is in bubble mode.
func (c *Checker) Child(child Policy, agent AgentInfo, asker Asker) *Checker {
	if asker == nil || child.Mode == ModeBubble {
		asker = c.asker
	}
	return New(Config{
		Policy:     Intersect(c.Policy(), child),
		Asker:      asker,
		Agent:      agent,
		Home:       c.home,
		Logger:     c.logger,
		Classifier: c.classifier,
	})
}

// Check decides a call, asking the [Asker] when the policy says ask. The
// result is Allow or Deny.
func (c *Checker) Check(ctx context.Context, req Request) Decision {
	d := c.Evaluate(req)
	if d.Behavior == Ask {
		if v, ok := c.classify(ctx, req, d); ok {
			d = v
		} else {
			d = c.ask(ctx, req, d)
		}
	}
	c.denials.Record(d.Behavior)
	c.logger.Debug("permission decided", "tool", req.Tool, "behavior", d.Behavior.String(), "reason", d.Reason)
	return d
}

func (c *Checker) ask(ctx context.Context, req Request, d Decision) Decision {
	ans, err := c.asker.Ask(ctx, AskRequest{
		Request: req, Reason: d.Reason, Rule: d.Rule, Suggestions: d.Suggestions, Agent: c.agent, ReasonType: d.ReasonType,
	})
	if err != nil {
		return Decision{Behavior: Deny, Reason: fmt.Sprintf("asking for permission: %v", err), Suggestions: d.Suggestions}
	}
	if ans.Behavior != Allow {
		c.addRules(ans.Updates) // deny rules of a "reject always"
		reason := ans.Reason
		if reason == "" {
			reason = "the user denied this call"
		}
		return Decision{Behavior: Deny, Reason: reason, Suggestions: d.Suggestions, Asked: true, Interrupt: ans.Interrupt}
	}
	c.addRules(ans.Updates)
	if err := c.Apply(ans.Permissions); err != nil {
		c.logger.Warn("permission updates of an answer not applied", "tool", req.Tool, "err", err)
	}
	return Decision{Behavior: Allow, Reason: "allowed when asked", Asked: true, UpdatedInput: ans.UpdatedInput}
}

// addRules applies "always" answers to this policy and its ceilings: the
// person answering outranks the static ceiling for what they approved.
func (c *Checker) addRules(rules []Rule) {
	if len(rules) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policy.Rules = append(c.policy.Rules, rules...)
	for i := range c.policy.Ceilings {
		c.policy.Ceilings[i].Rules = append(c.policy.Ceilings[i].Rules, rules...)
	}
}

// AddRules adds rules for the rest of the session (for example after the
// user edits settings).
func (c *Checker) AddRules(rules ...Rule) { c.addRules(rules) }

// Grant adds allow rules to this checker's policy and to every ceiling over it. They are
// rights keel itself gives an agent (its own memory directory), which no parent could have
// granted; deny and ask rules that match still win.
func (c *Checker) Grant(rules ...Rule) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policy.Rules = slices.Concat(c.policy.Rules, rules)
	for i := range c.policy.Ceilings {
		c.policy.Ceilings[i].Rules = slices.Concat(c.policy.Ceilings[i].Rules, rules)
	}
}

// Evaluate decides a call from the policy alone, without asking: the
// result may be Ask. Hooks and UIs use it to preview a decision.
func (c *Checker) Evaluate(req Request) Decision {
	pol := c.Policy()
	if req.kind() == KindShell {
		pol = withoutMasks(pol)
	}
	p := c.prepare(req, pol)
	d := c.evaluateLayer(pol, p)
	for _, ceil := range pol.Ceilings {
		if cd := c.evaluateLayer(ceil, p); cd.Behavior > d.Behavior {
			cd.Reason = "parent's policy: " + cd.Reason
			d = cd
		}
	}
	if d.Behavior == Ask && pol.Mode == ModeDontAsk {
		// A parent's ask (plan mode) does not make a dontAsk agent ask.
		d.Behavior, d.Reason = Deny, "dontAsk mode denies what is not pre-approved: "+d.Reason
	}
	if d.Behavior == Ask && d.Rule == nil {
		d.Suggestions = suggest(p, pol.Dirs)
	}
	return d
}

// prepared is a request with its paths resolved and its command parsed,
// shared by every layer.
type prepared struct {
	req   Request
	tool  string
	kind  Kind
	paths []preparedPath
	shell shellAnalysis
	// files is what a command line does with files: the files its redirections open, and —
	// when Read or Edit deny or ask rules exist — what its arguments name.
	files shellFiles
	// otherNames says why keel could not find every name of a file the call touches (a hard
	// link, see identity.go); multiLinked names an edited file that has other names.
	otherNames  string
	multiLinked string
	host        string
	home        string
}

type preparedPath struct {
	clean    string // absolute and lexically cleaned, as written
	resolved string // what the kernel would open
}

func (c *Checker) prepare(req Request, pol Policy) *prepared {
	p := &prepared{req: req, tool: canonicalTool(req.Tool), kind: req.kind(), home: c.home}
	cwd := req.Cwd
	if cwd == "" && len(pol.Dirs) > 0 {
		cwd = pol.Dirs[0]
	}
	resolve := func(path string) preparedPath {
		r := toolpath.Resolve(path, cwd, c.home)
		return preparedPath{clean: r.Abs, resolved: r.Real}
	}
	restricted := hasPathRestrictions(pol)
	switch p.kind {
	case KindRead, KindEdit:
		paths := req.Paths
		if len(paths) == 0 {
			paths = []string{cwd}
		}
		if len(req.Resolved) == len(req.Paths) && len(req.Paths) > 0 {
			// Resolved once by whoever runs the call: judge exactly what the tool will open.
			for _, r := range req.Resolved {
				p.paths = append(p.paths, preparedPath{clean: r.Abs, resolved: r.Real})
			}
			paths = nil
		}
		for _, path := range paths {
			p.paths = append(p.paths, resolve(path))
		}
		if p.kind == KindEdit {
			p.multiLinked = multiLinked(p.paths)
		}
		if restricted {
			var extra []preparedPath
			extra, p.otherNames = otherNames(p.paths, pol, cwd, c.home)
			p.paths = append(p.paths, extra...)
		}
	case KindShell:
		if restricted {
			p.shell = analyzeShellFiles(req.Command)
		} else {
			p.shell = analyzeShell(req.Command)
		}
		for _, f := range append(slices.Clone(p.shell.reads), p.shell.writes...) {
			if p.shell.changesDir && !f.tilde && !filepath.IsAbs(f.literal()) {
				p.shell.addBlind("a relative redirection after a change of directory")
			}
		}
		p.files = resolveFiles(p.shell, cwd, c.home, resolve)
		if restricted {
			for _, list := range []*[]preparedPath{&p.files.reads, &p.files.writes} {
				extra, why := otherNames(*list, pol, cwd, c.home)
				*list = append(*list, extra...)
				if why != "" && p.otherNames == "" {
					p.otherNames = why
				}
			}
		}
		if hasBashRestrictions(pol) {
			p.shell.deny = append(p.shell.deny, programIdentities(p.shell.deny, cwd)...)
		}
	case KindFetch:
		if u, err := url.Parse(req.URL); err == nil {
			p.host = strings.ToLower(u.Hostname())
		}
	}
	return p
}

func (p *prepared) readOnly() bool {
	switch p.kind {
	case KindRead:
		return true
	case KindEdit:
		return false
	case KindShell:
		return p.req.ReadOnly && len(p.shell.opaque) == 0
	}
	return p.req.ReadOnly
}

func (c *Checker) evaluateLayer(pol Policy, p *prepared) Decision {
	mode := pol.Mode.effective()
	var cwd string
	if len(pol.Dirs) > 0 {
		cwd = pol.Dirs[0]
	}
	if r := firstMatch(pol.Rules, Deny, p, cwd); r != nil {
		return Decision{Behavior: Deny, Reason: fmt.Sprintf("denied by rule %q from %s", r.String(), r.Source), Rule: r}
	}
	if mode == ModePlan && p.tool == PlanExitTool {
		// Leaving plan mode is how a plan gets approved: whoever answers decides.
		return Decision{Behavior: Ask, Reason: "the plan needs approval before plan mode ends"}
	}
	if mode == ModePlan && !p.readOnly() && p.kind != KindSafe {
		// As Claude Code: asked, with the mode as the reason; nobody to ask denies it.
		d := Decision{Behavior: Ask, ReasonType: "mode", Reason: fmt.Sprintf("plan mode: %s is not read-only, and only read-only tools run until the plan is approved", p.req.Tool)}
		if pol.PlanDenies {
			d.Behavior = Deny
		}
		return d
	}
	d := Decision{}
	if r := firstMatch(pol.Rules, Ask, p, cwd); r != nil {
		d = Decision{Behavior: Ask, Reason: fmt.Sprintf("rule %q from %s asks", r.String(), r.Source), Rule: r}
	} else if why, r := p.pathAsk(pol.Rules, cwd); why != "" {
		d = Decision{Behavior: Ask, Reason: why, Rule: r}
	} else if path, part := protectedEdit(pol, p, mode, cwd); path == p.multiLinked && path != "" {
		d = Decision{Behavior: Ask, Reason: fmt.Sprintf("%s has other hard links, one of which may be protected: writing it asks in every mode but bypassPermissions", path)}
	} else if path != "" {
		d = Decision{Behavior: Ask, Reason: fmt.Sprintf("%s is in %s, which is protected: writing there asks in every mode but bypassPermissions", path, part)}
	} else if r, why := allowMatch(pol.Rules, p, cwd, pol.Dirs); r != nil {
		return Decision{Behavior: Allow, Reason: fmt.Sprintf("allowed by rule %q from %s", r.String(), r.Source), Rule: r}
	} else if d = modeDecision(mode, pol, p); d.Behavior == Ask && why != "" {
		d.Reason = why
	}
	if d.Behavior == Ask && mode == ModeDontAsk {
		d.Behavior = Deny
		d.Reason = "dontAsk mode denies what is not pre-approved: " + d.Reason
	}
	return d
}

// protectedEdit returns a protected path the edit p would write, unless the mode is
// bypassPermissions or an allow rule names it (see protected.go).
func protectedEdit(pol Policy, p *prepared, mode Mode, cwd string) (path, part string) {
	if p.kind != KindEdit || mode == ModeBypassPermissions {
		return "", ""
	}
	if p.multiLinked != "" {
		// Another name of the file may be a protected one (.git/config, a settings file).
		return p.multiLinked, ""
	}
	path, part = protected(p, pol)
	if path == "" {
		return "", ""
	}
	for i := range pol.Rules {
		r := &pol.Rules[i]
		if r.Behavior == Allow && r.toolMatches(p.tool, p.kind) && r.namesProtected(part, cwd, p.home) &&
			r.path.match(path, toolpath.Real(r.root(cwd)), resolveHome(p.home)) {
			return "", ""
		}
	}
	return path, part
}

func modeDecision(mode Mode, pol Policy, p *prepared) Decision {
	allow := func(reason string) Decision { return Decision{Behavior: Allow, Reason: reason} }
	ask := func(format string, args ...any) Decision {
		return Decision{Behavior: Ask, Reason: fmt.Sprintf(format, args...)}
	}
	if mode == ModeBypassPermissions {
		if p.kind == KindShell && len(p.shell.uncheckedWhy) > 0 && hasRestrictions(pol.Rules) {
			return ask("the command uses %s, so its deny and ask rules cannot be checked", p.shell.uncheckedWhy[0])
		}
		return allow("bypassPermissions mode")
	}
	switch p.kind {
	case KindSafe:
		return allow(p.req.Tool + " changes only session state")
	case KindRead:
		if out := outside(p.paths, pol.Dirs); out != "" {
			return ask("%s is outside the working directories", out)
		}
		return allow("reading inside the working directories")
	case KindEdit:
		if out := outside(p.paths, pol.Dirs); out != "" {
			return ask("%s is outside the working directories", out)
		}
		if mode == ModeAcceptEdits {
			return allow("acceptEdits mode allows edits inside the working directories")
		}
		return ask("editing files needs approval in %s mode", mode)
	case KindShell:
		if len(p.shell.opaque) > 0 {
			return ask("the command uses %s, which no allow rule can cover", p.shell.opaque[0])
		}
		if p.req.ReadOnly {
			return allow("read-only command")
		}
		return ask("shell commands need approval unless an allow rule covers each part")
	case KindFetch:
		return ask("fetching from %s needs approval", p.host)
	case KindSearch:
		return ask("a web search sends its query off this machine and needs approval")
	}
	if p.req.ReadOnly {
		return allow(p.req.Tool + " is read-only")
	}
	return ask("%s needs approval in %s mode", p.req.Tool, mode)
}

// outside returns the first path that is not inside a working directory.
func outside(paths []preparedPath, dirs []string) string {
	resolved := make([]string, len(dirs))
	for i, d := range dirs {
		resolved[i] = toolpath.Real(d)
	}
	for _, path := range paths {
		if !slices.ContainsFunc(resolved, func(d string) bool { return toolpath.Within(path.resolved, d) }) {
			return path.resolved
		}
	}
	return ""
}
