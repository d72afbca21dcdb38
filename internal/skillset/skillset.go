// Package skillset is a session's skills and commands as its main agent uses them: loaded
// when the session opens, expanded from a /command prompt, their "!" shell lines judged by
// the permission rules and the PreSkillShellCommand hooks, the allowed-tools of a running
// skill granted, reloaded on request. Loading and expanding one file is internal/skill's;
// this package joins the catalog to the session's rules, hooks and turns.
//
// What it needs of the session it names in [Config], as narrow interfaces and functions:
// the package knows no session, so a set can be built and tested on its own.
package skillset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/tool"
)

// Checker is the main agent's permission check, which judges the skills' shell lines and
// what their allowed-tools grant; *[permission.Checker] is one.
type Checker interface {
	// Evaluate decides a call from the rules and mode alone, without asking.
	Evaluate(req permission.Request) permission.Decision
	Policy() permission.Policy
}

var _ Checker = (*permission.Checker)(nil)

// Config is what a set needs. Sources, Checker, Hooks and Cwd are required; a nil function
// is a step the set skips.
type Config struct {
	// Sources says where the skills and commands come from, asked at every load (the
	// plugins and the workspace's trust may have changed); the set fills in AllowShell and
	// BeforeShell.
	Sources func() skill.Options
	// Checker judges the shell lines and grants.
	Checker Checker
	// Home anchors ~/ in the rules a skill grants; RuleDir anchors their relative paths.
	Home, RuleDir string
	// Hooks runs the session's PreSkillShellCommand and ConfigChange hooks.
	Hooks hooks.EventRunner
	// HookInput completes a hook's input with what every hook is told.
	HookInput func(cwd string, in hooks.Input) hooks.Input
	// Cwd is the session's working directory now.
	Cwd func() string
	// Warn tells the user of a problem: a file that did not load, a hook's message.
	Warn func(text string)
	// Expanded runs the UserPromptExpansion hooks on a /command's text; source is the
	// entry's source. It returns the text to send.
	Expanded func(ctx context.Context, prompt, text, source string) (string, error)
	// Forks runs fork-context skills as subagents; nil refuses them.
	Forks skill.ForkRunner
	// Acquire takes the session for a reload, which happens between turns; it returns
	// the release, or an error when the session is busy.
	Acquire func() (release func(), err error)
	// Reloaded is told after a reload, to put the new Skill tool ([Set.Tool]) in place and
	// drop what was built from the old set.
	Reloaded func()
	Logger   *slog.Logger
}

// Set is a session's skills and commands. It is safe for concurrent use.
type Set struct {
	c Config

	// mu guards catalog and grants, which a reload replaces.
	mu      sync.Mutex
	catalog *skill.Catalog
	grants  *skill.Grants
}

// New loads the skills and commands c names. A bad file is a warning, never a failure.
func New(c Config) *Set {
	if c.HookInput == nil {
		c.HookInput = func(_ string, in hooks.Input) hooks.Input { return in }
	}
	if c.Warn == nil {
		c.Warn = func(string) {}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	k := &Set{c: c}
	k.load()
	return k
}

// load reads the skills and commands into a new catalog, with grants of its own.
func (k *Set) load() {
	cat, problems := skill.Load(k.options())
	k.mu.Lock()
	k.catalog, k.grants = cat, skill.NewGrants()
	k.mu.Unlock()
	for _, p := range problems {
		k.c.Warn(p.Error())
	}
}

// options are the sources with the set's judges of shell lines.
func (k *Set) options() skill.Options {
	o := k.c.Sources()
	o.AllowShell, o.BeforeShell = k.allowShell, k.beforeShell
	return o
}

// Catalog is the skills and commands now.
func (k *Set) Catalog() *skill.Catalog {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.catalog
}

// Grants are the allowed-tools of the inline skills running now, per agent.
func (k *Set) Grants() *skill.Grants {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.grants
}

// All lists the skills and commands the session can run.
func (k *Set) All() []skill.Skill { return k.Catalog().All() }

// Names lists the skills and commands a user can invoke with /name.
func (k *Set) Names() []string {
	var names []string
	for _, sk := range k.All() {
		if sk.UserInvocable {
			names = append(names, sk.Name)
		}
	}
	return names
}

// Tool is the Skill tool over the set as it stands: the model loads a skill through it.
func (k *Set) Tool() tool.Tool {
	return k.Catalog().Tool(skill.ToolOptions{Runner: k.c.Forks, Grants: k.Grants()})
}

// Refresh reads the skills and commands again into the catalog every agent shares (a
// plugin's came or went); problems were reported when the set loaded.
func (k *Set) Refresh() {
	cat, _ := skill.Load(k.options())
	k.Catalog().Replace(cat)
}

// Granted reports whether the allowed-tools of a skill running in the agent agentID allow
// req, with the decision that does; deny rules still win.
func (k *Set) Granted(agentID string, req permission.Request) (permission.Decision, bool) {
	rules := k.Grants().Rules(agentID)
	if len(rules) == 0 {
		return permission.Decision{}, false
	}
	d := k.evaluateWith(rules, req)
	return d, d.Behavior == permission.Allow
}

// EndTurn ends the skills running in agentID's turn: their grants lapse.
func (k *Set) EndTurn(agentID string) { k.Grants().End(agentID) }

// allowShell decides a "!" command in a skill or command body: it runs only when the rules
// (plus the entry's own allowed-tools) allow it outright; nothing asks for it.
func (k *Set) allowShell(_ context.Context, command string, allowedTools []string) error {
	d := k.evaluateWith(allowedTools, permission.Request{Tool: "Bash", Command: command, Cwd: k.c.Cwd()})
	if d.Behavior != permission.Allow {
		return fmt.Errorf("not allowed: %s", d.Reason)
	}
	return nil
}

// evaluateWith previews a decision with extra allow rules (a running skill's allowed-tools).
// Deny rules still win.
func (k *Set) evaluateWith(extra []string, req permission.Request) permission.Decision {
	if len(extra) == 0 {
		return k.c.Checker.Evaluate(req)
	}
	pol := k.c.Checker.Policy()
	rules, _ := permission.ParseRules(extra, permission.Allow, permission.Source{Name: "skill", Dir: k.c.RuleDir})
	pol.Rules = append(pol.Rules, rules...)
	return permission.New(permission.Config{Policy: pol, Home: k.c.Home, Logger: k.c.Logger}).Evaluate(req)
}

// Expand turns a "/name args" prompt into what is sent: an inline skill or command's text
// (its allowed-tools granted to the main agent until [Set.EndTurn]), or a fork skill's
// result. ok is false when the prompt is no command.
func (k *Set) Expand(ctx context.Context, prompt string) (text string, ok bool, err error) {
	if !strings.HasPrefix(strings.TrimSpace(prompt), "/") {
		return "", false, nil
	}
	inv, ok, err := k.Catalog().Expand(ctx, prompt)
	if err != nil || !ok {
		return "", ok, err
	}
	if inv.Fork {
		if k.c.Forks == nil {
			return "", true, errors.New("/" + inv.Skill.Name + " runs in a forked agent, which this session cannot start")
		}
		result, err := skill.RunFork(ctx, k.c.Forks, inv)
		if err != nil {
			return "", true, err
		}
		return fmt.Sprintf("The /%s skill ran in a subagent and reported:\n\n%s", inv.Skill.Name, result), true, nil
	}
	k.Grants().Add("", inv.Skill.Name, inv.Skill.Grants())
	if k.c.Expanded == nil {
		return inv.Text, true, nil
	}
	text, err = k.c.Expanded(ctx, prompt, inv.Text, string(inv.Skill.Source))
	return text, true, err
}

// Reload reads the skills and commands from disk again, between turns: the main agent's
// listing, Skill tool and /commands use the new set. Subagents keep the set they were built
// with. A ConfigChange hook may refuse it.
func (k *Set) Reload(ctx context.Context) error {
	if k.c.Acquire != nil {
		release, err := k.c.Acquire()
		if err != nil {
			return err
		}
		defer release()
	}
	out := k.c.Hooks.Run(ctx, hooks.ConfigChange, k.c.HookInput(k.c.Cwd(), hooks.Input{Source: "skills"}))
	if out.Decision == hooks.DecisionBlock {
		return fmt.Errorf("skill reload refused by a ConfigChange hook: %s", out.Reason)
	}
	k.load()
	if k.c.Reloaded != nil {
		k.c.Reloaded()
	}
	return nil
}
