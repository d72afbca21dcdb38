package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/skill"
)

// Skills returns the session's skills and commands.
func (s *Session) Skills() *Skills { return &s.sk }

// All lists the skills and commands this session can run.
func (k *Skills) All() []skill.Skill {
	s := k.s
	return s.skills.All()
}

// skillNames lists the skills and commands a user can invoke with /name.
func (k *Skills) skillNames() []string {
	s := k.s
	var names []string
	for _, sk := range s.skills.All() {
		if sk.UserInvocable {
			names = append(names, sk.Name)
		}
	}
	return names
}

// loadSkills reads the skills and custom commands; a bad file is a notice, never a failure.
func (k *Skills) loadSkills() {
	s := k.s
	s.grants = skill.NewGrants()
	cat, problems := skill.Load(k.skillOptions())
	s.skills = cat
	for _, p := range problems {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: p.Error()})
	}
}

// skillOptions says where the session's skills and commands come from.
func (k *Skills) skillOptions() skill.Options {
	s := k.s
	home, keelHome := userHome(), s.opts.Home
	if !s.opts.SDK.sourceAllowed("user") {
		home, keelHome = "", ""
	}
	return skill.Options{
		Cwd: s.opts.Cwd, ProjectRoot: s.projectDir, Home: home, KeelHome: keelHome, NoProject: !s.opts.SDK.sourceAllowed("project"),
		AllowShell: k.allowSkillShell, BeforeShell: k.beforeSkillShell, Sandbox: s.sandbox, Prompts: mcpPrompts{s}, Logger: s.logger, UntrustedProject: !s.conf.trusted(),
		Plugins: s.plug.plugins().SkillSources(),
	}
}

// allowSkillShell decides a "!" command in a skill or command body: it runs only when the
// rules (plus the entry's own allowed-tools) allow it outright; nothing asks for it.
func (k *Skills) allowSkillShell(_ context.Context, command string, allowedTools []string) error {
	s := k.s
	d := k.evaluateWith(allowedTools, permission.Request{Tool: "Bash", Command: command, Cwd: s.Cwd()})
	if d.Behavior != permission.Allow {
		return fmt.Errorf("not allowed: %s", d.Reason)
	}
	return nil
}

// evaluateWith previews a decision with extra allow rules (a running skill's allowed-tools).
// Deny rules still win.
func (k *Skills) evaluateWith(extra []string, req permission.Request) permission.Decision {
	s := k.s
	if len(extra) == 0 {
		return s.checker.Evaluate(req)
	}
	pol := s.checker.Policy()
	rules, _ := permission.ParseRules(extra, permission.Allow, permission.Source{Name: "skill", Dir: s.opts.Cwd})
	pol.Rules = append(pol.Rules, rules...)
	return permission.New(permission.Config{Policy: pol, Home: userHome(), Logger: s.logger}).Evaluate(req)
}

// expandCommand turns a "/name args" prompt into what is sent: an inline skill or command's
// text (its allowed-tools granted for this turn), or a fork skill's result. ok is false when
// the prompt is no command.
func (k *Skills) expandCommand(ctx context.Context, prompt string) (text string, ok bool, err error) {
	s := k.s
	if !strings.HasPrefix(strings.TrimSpace(prompt), "/") {
		return "", false, nil
	}
	inv, ok, err := s.skills.Expand(ctx, prompt)
	if err != nil || !ok {
		return "", ok, err
	}
	if inv.Fork {
		if s.forkRunner == nil {
			return "", true, errors.New("/" + inv.Skill.Name + " runs in a forked agent, which this session cannot start")
		}
		result, err := skill.RunFork(ctx, s.forkRunner, inv)
		if err != nil {
			return "", true, err
		}
		return fmt.Sprintf("The /%s skill ran in a subagent and reported:\n\n%s", inv.Skill.Name, result), true, nil
	}
	s.grants.Add("", inv.Skill.Name, inv.Skill.Grants())
	text, err = s.hookd.promptExpansion(ctx, prompt, inv.Text, string(inv.Skill.Source))
	return text, true, err
}

// Reload reads the skills and commands from disk again, between turns: the main
// agent's listing, Skill tool and /commands use the new set. Subagents keep the set they
// were built with.
func (k *Skills) Reload(ctx context.Context) error {
	s := k.s
	if !s.acquire() {
		return ErrBusy
	}
	defer s.release()
	out := s.hooks.Run(ctx, hooks.ConfigChange, s.hookd.hookInput(s.Cwd(), hooks.Input{Source: "skills"}))
	if out.Decision == hooks.DecisionBlock {
		return fmt.Errorf("skill reload refused by a ConfigChange hook: %s", out.Reason)
	}
	k.loadSkills()
	for i, t := range s.builtins {
		if t.Name() == skill.ToolName {
			s.builtins[i] = s.skills.Tool(skill.ToolOptions{Runner: s.forkRunner, Grants: s.grants})
		}
	}
	s.prompt.Clear()
	return nil
}
