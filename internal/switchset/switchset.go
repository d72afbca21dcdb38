// Package switchset is what a user or a controlling program switches in a session's main
// agent between prompts: the model (resolved and sized by its catalog, the plan model while
// planning), the output style, and the effort or thinking budget. Switching the model runs the
// PreModelSwitch hooks, which may refuse, and the PostModelSwitch hooks; switching the style
// rebuilds the prompt, tells the cache watcher and keeps the choice in the local settings.
//
// What it needs of the session it names in [Config], as fields and functions: the package
// knows no session, so the switches can be built and tested on their own.
package switchset

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/effort"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/outputstyle"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/provider"
)

// Config is what the switches need. Hooks is required for SwitchModel, SetPrompt for the
// style; any other nil function reads as empty (no window forced, not planning, nothing to
// tell).
type Config struct {
	// Model is the model the session opened with; PlanModel the one it plans with (the
	// opusplan alias), "" for none.
	Model, PlanModel string
	// Catalog resolves model names and knows their windows; nil is the built-in catalog.
	Catalog *models.Catalog
	// Window is the context window the options force, 0 for the catalog's; asked each time.
	Window func() int64
	// Planning says the main agent's permission mode is plan now.
	Planning func() bool
	// Thinking is the first thinking setting; nil is off.
	Thinking *provider.Thinking

	// Hooks runs the PreModelSwitch and PostModelSwitch hooks; HookInput completes their
	// input with what every hook is told; Cwd is the session's working directory now.
	Hooks     hooks.EventRunner
	HookInput func(cwd string, in hooks.Input) hooks.Input
	Cwd       func() string
	// ContextTokens is what the last main-thread request carried; CacheWarm says the prompt
	// cache holds the main agent's prefix. Both are told to the model-switch hooks.
	ContextTokens func() int64
	CacheWarm     func() bool
	// AddContext gives the next prompt what the PostModelSwitch hooks added.
	AddContext func([]string)

	// StyleDirs are where output style files are found, a later one winning by name;
	// PluginStyles are the plugins' styles, asked each time.
	StyleDirs    []outputstyle.Dir
	PluginStyles func() []outputstyle.Style
	// LocalSettings is the settings file a style choice is kept in.
	LocalSettings string
	// SetPrompt builds the main agent's prompt from o and puts it in place.
	SetPrompt func(o prompt.Options)
	// Acquire takes the session for a style switch, which happens between turns; it returns
	// the release, or an error when the session is busy. Nil takes nothing.
	Acquire func() (release func(), err error)
	// Announce tells the cache watcher the prompt's prefix changes on purpose.
	Announce func(reason string)
}

// Switches are a main agent's switches. They are safe for concurrent use.
type Switches struct {
	c Config

	// mu guards model and plan.
	mu          sync.Mutex
	model, plan string
	// think guards thinking.
	think    sync.Mutex
	thinking *provider.Thinking
	// style is the output style.
	style struct {
		// mu guards name and base.
		mu   sync.Mutex
		name string
		// base are the prompt options without a style, to build the prompt again when the
		// style changes.
		base prompt.Options
	}
}

// New returns the switches of c.
func New(c Config) *Switches {
	if c.Catalog == nil {
		c.Catalog = models.Builtins()
	}
	if c.Window == nil {
		c.Window = func() int64 { return 0 }
	}
	if c.Planning == nil {
		c.Planning = func() bool { return false }
	}
	if c.HookInput == nil {
		c.HookInput = func(_ string, in hooks.Input) hooks.Input { return in }
	}
	if c.Cwd == nil {
		c.Cwd = func() string { return "" }
	}
	if c.ContextTokens == nil {
		c.ContextTokens = func() int64 { return 0 }
	}
	if c.CacheWarm == nil {
		c.CacheWarm = func() bool { return false }
	}
	if c.AddContext == nil {
		c.AddContext = func([]string) {}
	}
	if c.PluginStyles == nil {
		c.PluginStyles = func() []outputstyle.Style { return nil }
	}
	if c.Acquire == nil {
		c.Acquire = func() (func(), error) { return func() {}, nil }
	}
	if c.Announce == nil {
		c.Announce = func(string) {}
	}
	return &Switches{c: c, model: c.Model, plan: c.PlanModel, thinking: c.Thinking}
}

// ModelCatalog is the model list the session resolves and checks model names with.
func (w *Switches) ModelCatalog() *models.Catalog { return w.c.Catalog }

// ContextWindow is the window of the model in use, in tokens.
func (w *Switches) ContextWindow() int64 {
	if n := w.c.Window(); n > 0 {
		return n
	}
	return w.c.Catalog.ContextWindow(w.Model())
}

// Model returns the model the next request uses: the plan model while the permission mode is
// plan (the opusplan alias), else the model.
func (w *Switches) Model() string {
	plan := w.c.Planning()
	w.mu.Lock()
	defer w.mu.Unlock()
	if plan && w.plan != "" {
		return w.plan
	}
	return w.model
}

// Base is the model used outside plan mode.
func (w *Switches) Base() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.model
}

// SetBase sets the model used outside plan mode and keeps the plan model: an --agent's own
// model, say.
func (w *Switches) SetBase(model string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.model = model
}

// SetModel switches the model for the next Send (and ends opusplan's switching). The model
// is part of the prompt-cache key, so the cache starts over; the watcher reports it as such.
func (w *Switches) SetModel(model string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.model, w.plan = model, ""
}

// SwitchModel changes the model for the next Send, as set_model or /model does: the
// PreModelSwitch hooks may refuse it, the PostModelSwitch hooks hear of it.
func (w *Switches) SwitchModel(ctx context.Context, model, source string) error {
	from := w.Model()
	in := hooks.Input{Source: source, Extra: map[string]any{
		"from_model": from, "to_model": model, "requested_model": model, "context_tokens": w.c.ContextTokens(),
		"prompt_cache_warm": w.c.CacheWarm(), "cache_ttl": "5m", "estimated_cache_write_usd": 0, "pricing": "catalog",
	}}
	pre := w.c.Hooks.Run(ctx, hooks.PreModelSwitch, w.c.HookInput(w.c.Cwd(), in))
	if pre.Decision == hooks.DecisionBlock {
		reason := pre.Reason
		if reason == "" {
			reason = "a PreModelSwitch hook refused it"
		}
		return fmt.Errorf("switch to %s refused: %s", model, reason)
	}
	w.SetModel(model)
	post := w.c.Hooks.Run(ctx, hooks.PostModelSwitch, w.c.HookInput(w.c.Cwd(), in))
	w.c.AddContext(post.AdditionalContext)
	return nil
}

// Thinking is the main agent's thinking setting for the next request; nil is off.
func (w *Switches) Thinking() *provider.Thinking {
	w.think.Lock()
	defer w.think.Unlock()
	return w.thinking
}

// SetMaxThinkingTokens sets the thinking budget of the following requests; 0 turns thinking
// off (the SDK's setMaxThinkingTokens).
func (w *Switches) SetMaxThinkingTokens(n int64) {
	w.think.Lock()
	defer w.think.Unlock()
	if n <= 0 {
		w.thinking = nil
		return
	}
	w.thinking = &provider.Thinking{BudgetTokens: n}
}

// SetEffort sets the thinking budget of the following requests to that of an effort level
// (one of effort.Levels); "off" turns extended thinking off.
func (w *Switches) SetEffort(level string) error {
	if level == "off" {
		w.SetMaxThinkingTokens(0)
		return nil
	}
	b, ok := effort.Budget(level)
	if !ok {
		return fmt.Errorf("effort %q is not one of off, %s", level, strings.Join(effort.Levels, ", "))
	}
	w.SetMaxThinkingTokens(b)
	return nil
}
