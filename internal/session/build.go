package session

import (
	"context"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/sessionlog"
	"github.com/keel-dev/keel/internal/transcript"
)

func (c *configWiring) buildHooks() {
	s := c.s
	trusted := c.trusted()
	runner, problems := hooks.New(hooks.Config{
		Hooks:       s.pythonSafe(s.settings.Hooks),
		Plugins:     s.pythonSafe(s.plug.Current().Hooks()),
		DisableAll:  s.settings.DisableAllHooks.V,
		ProjectDir:  s.projectDir,
		Trusted:     trusted,
		Callbacks:   s.opts.SDK.HookCallbacks,
		Call:        s.opts.SDK.CallHook,
		OnRun:       s.hookd.Ran,
		Traceparent: s.tel.traceparent,
		Report:      s.warn,
		Logger:      s.logger,
		Sandbox:     s.hookSandbox(),
	})
	s.hooks = runner
	for _, p := range problems {
		s.notices = append(s.notices, event.Notice{Level: string(p.Severity), Text: p.Error()})
	}
}

// buildPrompt sets up the main agent's system prompt. The environment and memory files are
// read once here; the rendered sections are memoized for the whole session.
func (c *configWiring) buildPrompt(ctx context.Context, env *prompt.Environment) {
	s := c.s
	if env == nil {
		detected := prompt.DetectEnvironment(ctx, s.opts.Cwd, s.opts.now(), gitexec.Runner{Trusted: c.trusted()})
		env = &detected
		s.persist.recordMetadata(ctx, transcript.TypeAgentSetting, sessionlog.AgentSetting{Environment: env, Model: s.switches.Base()})
	}
	mem, err := memory.Load(s.memoryOptions(c.trusted()))
	if err == nil {
		s.memory = mem
		for _, w := range mem.Warnings() {
			s.notices = append(s.notices, event.Notice{Level: "warn", Text: w.String()})
		}
		if !s.opts.Offline {
			s.hookd.InstructionsLoaded(ctx, s.opts.Cwd, s.opts.SDK.memoryAllowed(mem.Files()), "session_start")
		}
	}
	s.insp.OpenAutoMemory()
	autoMem, autoMemProblem := s.insp.AutoMemory()
	problems := s.switches.BuildPrompt(prompt.Options{
		AutoMemory: autoMem, AutoMemoryProblem: autoMemProblem,
		SystemPrompt:       s.opts.SystemPrompt,
		AppendSystemPrompt: s.opts.AppendSystemPrompt,
		Memory: func() []memory.File {
			if s.memory == nil {
				return nil
			}
			return s.opts.SDK.memoryAllowed(s.memory.Files())
		},
		Environment: env,
	}, s.settings.OutputStyle.V, s.settings.OutputStyle.From.String())
	for _, err := range problems {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: err.Error()})
	}
}

// buildCachePolicy pins the cache TTL policy for the whole session.
func (c *configWiring) buildCachePolicy() {
	s := c.s
	var patterns []string
	for _, v := range s.settings.CacheTTL1h {
		patterns = append(patterns, v.V)
	}
	policy, warnings := provider.NewTTLPolicy(patterns)
	s.ttl = policy
	for _, w := range warnings {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: "settings cacheTTL1h: " + w})
	}
}
