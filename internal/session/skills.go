package session

import (
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/skillset"
)

// Skills are the session's skills and commands (internal/skillset): loaded at open,
// expanded from a /command prompt, their shell lines judged by the permission rules,
// reloaded on request.
type Skills = skillset.Set

// Skills returns the session's skills and commands.
func (s *Session) Skills() *Skills { return s.sk }

// newSkills loads the session's skills and commands and wires them to its rules, hooks,
// working directory and agents.
func newSkills(s *Session) *skillset.Set {
	return skillset.New(skillset.Config{
		Sources: func() skill.Options { return skillSources(s) },
		Checker: s.checker, Home: userHome(), RuleDir: s.opts.Cwd,
		Hooks: sessionHooks{s}, HookInput: s.hookd.Input, Cwd: s.Cwd, Warn: s.warn,
		Expanded: s.hookd.PromptExpansion,
		Forks:    agentForks{s},
		Acquire: func() (func(), error) {
			if !s.acquire() {
				return nil, ErrBusy
			}
			return s.release, nil
		},
		Reloaded: func() {
			for i, t := range s.builtins {
				if t.Name() == skill.ToolName {
					s.builtins[i] = s.sk.Tool()
				}
			}
			s.prompt.Clear()
		},
		Logger: s.logger,
	})
}

// skillSources says where the session's skills and commands come from, as the options, the
// trust and the plugins stand now.
func skillSources(s *Session) skill.Options {
	home, keelHome := userHome(), s.opts.Home
	if !s.opts.SDK.sourceAllowed("user") {
		home, keelHome = "", ""
	}
	return skill.Options{
		Cwd: s.opts.Cwd, ProjectRoot: s.projectDir, Home: home, KeelHome: keelHome, NoProject: !s.opts.SDK.sourceAllowed("project"),
		Sandbox: s.sandbox, Prompts: mcpPrompts{s}, Logger: s.logger, UntrustedProject: !s.conf.trusted(),
		Plugins: s.plug.Current().SkillSources(),
		// Asked as each file is met, so the rules as they stand then decide.
		Refuse: func(path string) string { return s.promptReadRefusal()(path) },
	}
}
