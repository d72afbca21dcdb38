package session

import (
	"path/filepath"

	"github.com/keel-dev/keel/internal/effort"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/outputstyle"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settingsedit"
	"github.com/keel-dev/keel/internal/switchset"
)

// Switches are what a user or a controlling program switches in the main agent between
// prompts (internal/switchset): the model (and its catalog), the output style, the effort and
// thinking budget.
type Switches = switchset.Switches

// Switches returns the session's model, output style and thinking switches.
func (s *Session) Switches() *Switches { return s.switches }

// newSwitches wires the switches to the session's options, permission mode, hooks, prompt
// and cache watcher. The checker, the hooks and the plugins come later in opening than the
// switches, hence the functions that reach them when called.
func newSwitches(s *Session) *switchset.Switches {
	return switchset.New(switchset.Config{
		Model: s.opts.Model, PlanModel: s.opts.PlanModel, Catalog: s.opts.Models,
		Window:   func() int64 { return s.opts.ContextWindow },
		Planning: func() bool { return s.checker.Policy().Mode == permission.ModePlan },
		Thinking: initialThinking(s.opts.SDK),
		Hooks:    sessionHooks{s}, HookInput: func(cwd string, in hooks.Input) hooks.Input { return s.hookd.Input(cwd, in) },
		Cwd:           s.Cwd,
		ContextTokens: func() int64 { return s.insp.LastContextTokens() },
		CacheWarm:     func() bool { return s.cacheSafeNow() != nil },
		AddContext: func(c []string) {
			s.mu.Lock()
			s.startContext = append(s.startContext, c...)
			s.mu.Unlock()
		},
		StyleDirs:     styleDirs(s),
		PluginStyles:  func() []outputstyle.Style { return s.plug.OutputStyles() },
		LocalSettings: settingsedit.File(permission.DestinationLocalSettings, s.projectDir, s.opts.Home),
		SetPrompt:     func(o prompt.Options) { s.prompt = prompt.New(o) },
		Acquire: func() (func(), error) {
			if !s.acquire() {
				return nil, ErrBusy
			}
			return s.release, nil
		},
		Announce: func(reason string) { s.watch.Announce(reason) },
	})
}

// styleDirs are where output style files are found: the user's (~/.claude, then keel's
// home), then the project's (.claude, then .keel); a later one wins by name.
func styleDirs(s *Session) []outputstyle.Dir {
	var dirs []outputstyle.Dir
	if home := userHome(); home != "" {
		dirs = append(dirs, outputstyle.Dir{Path: filepath.Join(home, ".claude", "output-styles")})
	}
	if s.opts.Home != "" {
		dirs = append(dirs, outputstyle.Dir{Path: filepath.Join(s.opts.Home, "output-styles")})
	}
	// A project's style file may be a link its repository ships to a file the rules keep from
	// the model; asked as the styles are read.
	refuse := func(path string) string { return s.promptReadRefusal()(path) }
	return append(dirs, outputstyle.Dir{Path: filepath.Join(s.projectDir, ".claude", "output-styles"), Refuse: refuse},
		outputstyle.Dir{Path: filepath.Join(s.projectDir, ".keel", "output-styles"), Refuse: refuse})
}

// initialThinking turns the options into the first thinking setting.
func initialThinking(o SDKOptions) *provider.Thinking {
	switch {
	case o.ThinkingMode == "disabled":
		return nil
	case o.MaxThinkingTokens > 0:
		return &provider.Thinking{BudgetTokens: o.MaxThinkingTokens}
	}
	if b, ok := effort.Budget(o.Effort); ok {
		return &provider.Thinking{BudgetTokens: b}
	}
	if o.ThinkingMode != "" {
		b, _ := effort.Budget("medium")
		return &provider.Thinking{BudgetTokens: b}
	}
	return nil
}
