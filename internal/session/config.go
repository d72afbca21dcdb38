package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/trust"
)

// ProjectRoot is the nearest directory at or above dir holding .git, else dir itself.
func ProjectRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// loadSettings reads every settings source; problems become notices. A file that cannot be
// read or parsed at all is an error unless Options.IgnoreSettingsErrors says to go on without
// it: its deny rules must never vanish silently.
func (s *Session) loadSettings() error {
	st, _ := settings.Load(settings.Options{
		Env:          settings.Env{Home: s.opts.Home},
		ProjectDir:   s.projectDir,
		ManagedPath:  s.opts.ManagedSettingsPath,
		Flags:        s.opts.SettingsFlags,
		SettingsArgs: s.opts.SettingsArgs,
		FileScopes:   s.fileScopes(),
	})
	s.settings = st
	if bad := st.Unreadable(); len(bad) > 0 && !s.opts.IgnoreSettingsErrors {
		var lines []string
		for _, p := range bad {
			p.Msg = strings.TrimSuffix(p.Msg, " (file ignored)")
			lines = append(lines, p.Error())
		}
		return fmt.Errorf("%s; fix it, or pass --ignore-settings-errors to run without that file", strings.Join(lines, "; "))
	}
	for _, p := range st.Problems {
		s.notices = append(s.notices, event.Notice{Level: string(p.Severity), Text: p.Error()})
	}
	return nil
}

// permissionPolicy turns settings and flags into the main agent's policy.
func (s *Session) permissionPolicy() (permission.Policy, []string) {
	var warnings []string
	mode := s.opts.PermissionMode
	if mode == "" && s.settings.Permissions.DefaultMode.IsSet() {
		mode = s.settings.Permissions.DefaultMode.V
	}
	m, err := permission.ParseMode(mode)
	if err != nil {
		warnings = append(warnings, err.Error())
		m = permission.ModeDefault
	}
	pol := permission.Policy{Mode: m, Dirs: []string{s.opts.Cwd}}
	for _, d := range s.settings.Permissions.AdditionalDirectories {
		dir := d.V
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.ruleDir(d.From), dir)
		}
		pol.Dirs = append(pol.Dirs, filepath.Clean(dir))
	}
	add := func(vals []settings.Value[string], b permission.Behavior) {
		for _, v := range vals {
			src := permission.Source{Name: string(v.From.Scope), Path: v.From.Path, Dir: s.ruleDir(v.From)}
			r, err := permission.ParseRule(v.V, b, src)
			if err != nil {
				warnings = append(warnings, err.Error())
				continue
			}
			pol.Rules = append(pol.Rules, r)
		}
	}
	add(s.settings.Permissions.Deny, permission.Deny)
	add(s.settings.Permissions.Ask, permission.Ask)
	add(s.settings.Permissions.Allow, permission.Allow)
	return pol, warnings
}

// ruleDir is the directory a settings file's relative path rules are anchored at: the project
// directory for files in .keel/ or .claude/, else the file's own directory.
func (s *Session) ruleDir(o settings.Origin) string {
	if !filepath.IsAbs(o.Path) { // flags and inline --settings
		return s.opts.Cwd
	}
	dir := filepath.Dir(o.Path)
	if base := filepath.Base(dir); base == ".keel" || base == ".claude" {
		return filepath.Dir(dir)
	}
	return dir
}

// buildHooks prepares the hook runner; project hooks wait for workspace trust.
// trusted says whether project-provided hooks and servers may run: --trust, or a recorded
// trust of the project.
func (s *Session) trusted() bool {
	trusted := s.opts.Trust
	if !trusted && s.opts.Home != "" {
		trusted, _ = trust.IsTrusted(s.opts.Home, s.projectDir)
	}
	return trusted
}

func (s *Session) buildHooks() {
	trusted := s.trusted()
	runner, problems := hooks.New(hooks.Config{
		Hooks:      s.settings.Hooks,
		DisableAll: s.settings.DisableAllHooks.V,
		ProjectDir: s.projectDir,
		Trusted:    trusted,
		Callbacks:  s.opts.SDK.HookCallbacks,
		Call:       s.opts.SDK.CallHook,
		OnRun:      s.hookEvents,
		Report:     s.warn,
		Logger:     s.logger,
	})
	s.hooks = runner
	for _, p := range problems {
		s.notices = append(s.notices, event.Notice{Level: string(p.Severity), Text: p.Error()})
	}
	if !trusted && !s.settings.DisableAllHooks.V {
		if n := untrustedHooks(s.settings.Hooks); n != "" {
			s.notices = append(s.notices, event.Notice{Level: "warn", Text: "the workspace is not trusted, so the hooks of " + n +
				" do not run (run `keel trust`, or pass --trust)"})
		}
	}
}

// untrustedHooks names the project-provided settings files that configure hooks, which an
// untrusted workspace does not run.
func untrustedHooks(groups []settings.HookGroup) string {
	var files []string
	for _, g := range groups {
		if g.From.Scope.ProjectProvided() && len(g.Hooks) > 0 && !slices.Contains(files, g.From.Path) {
			files = append(files, g.From.Path)
		}
	}
	return strings.Join(files, " and ")
}

// buildPrompt sets up the main agent's system prompt. The environment and memory files are
// read once here; the rendered sections are memoized for the whole session.
func (s *Session) buildPrompt(ctx context.Context, env *prompt.Environment) {
	if env == nil {
		detected := prompt.DetectEnvironment(ctx, s.opts.Cwd, s.now())
		env = &detected
		s.recordMetadata(ctx, transcript.TypeAgentSetting, agentSetting{Environment: env, Model: s.opts.Model})
	}
	home, _ := os.UserHomeDir()
	mem, err := memory.Load(memory.Options{Cwd: s.opts.Cwd, Home: home, KeelHome: s.opts.Home, ManagedPath: s.opts.ManagedMemoryPath, Logger: s.logger})
	if err == nil {
		s.memory = mem
		for _, w := range mem.Warnings() {
			s.notices = append(s.notices, event.Notice{Level: "warn", Text: w.String()})
		}
		if !s.opts.Offline {
			s.instructionsLoaded(ctx, s.memoryAllowed(mem.Files()), "session_start")
		}
	}
	s.prompt = prompt.New(prompt.Options{
		SystemPrompt:       s.opts.SystemPrompt,
		AppendSystemPrompt: s.opts.AppendSystemPrompt,
		Memory: func() []memory.File {
			if s.memory == nil {
				return nil
			}
			return s.memoryAllowed(s.memory.Files())
		},
		Environment: env,
	})
}

// systemPrompt renders the main agent's prompt for the next request.
func (s *Session) systemPrompt(context.Context) loop.System {
	r := s.prompt.Render()
	return loop.System{Blocks: r.Blocks, Names: r.Names}
}

// buildCachePolicy pins the cache TTL policy for the whole session.
func (s *Session) buildCachePolicy() {
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

func (s *Session) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// watcher adapts a cachewatch.Watcher to the loop and keeps the session's totals.
type watcher struct{ w *cachewatch.Watcher }

func (w watcher) BeforeSend(req *provider.Request, sections []string) []event.CacheBreak {
	return toEvents(w.w.Observe(req, sections))
}

func (w watcher) AfterResponse(u message.Usage) []event.CacheBreak {
	return toEvents(w.w.Report(u))
}

func toEvents(bs []cachewatch.Break) []event.CacheBreak {
	var out []event.CacheBreak
	for _, b := range bs {
		out = append(out, event.CacheBreak{Segment: b.Segment, Reason: b.Reason})
	}
	return out
}

func cacheStats(t cachewatch.Totals) event.CacheStats {
	return event.CacheStats{Hits: t.Hits, Misses: t.Misses, Breaks: t.Breaks, BreaksByReason: t.ByKind}
}
