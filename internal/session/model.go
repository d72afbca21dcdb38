package session

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/permission"
)

// Switches returns the session's model, output style and thinking switches.
func (s *Session) Switches() *Switches { return &s.switches }

// ModelCatalog is the model list this session resolves and checks model names with.
func (w *Switches) ModelCatalog() *models.Catalog { return w.models() }

// models is the session's model catalog.
func (w *Switches) models() *models.Catalog {
	s := w.s
	if s.opts.Models == nil {
		return models.Builtins()
	}
	return s.opts.Models
}

// contextWindow is the window of the session's model, in tokens.
func (w *Switches) contextWindow() int64 {
	s := w.s
	if s.opts.ContextWindow > 0 {
		return s.opts.ContextWindow
	}
	return w.models().ContextWindow(w.Model())
}

// Model returns the model the next request uses: PlanModel while the permission mode is plan
// (the opusplan alias), else Model.
func (w *Switches) Model() string {
	s := w.s
	plan := s.checker.Policy().Mode == permission.ModePlan
	s.mu.Lock()
	defer s.mu.Unlock()
	if plan && s.opts.PlanModel != "" {
		return s.opts.PlanModel
	}
	return s.opts.Model
}

// SetModel switches the model for the next Send (and ends opusplan's switching). The model
// is part of the prompt-cache key, so the cache starts over; the watcher reports it as such.
func (w *Switches) SetModel(model string) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Model, s.opts.PlanModel = model, ""
}

// SwitchModel changes the model for the next Send, as set_model or /model does: the
// PreModelSwitch hooks may refuse it, the PostModelSwitch hooks hear of it.
func (w *Switches) SwitchModel(ctx context.Context, model, source string) error {
	s := w.s
	from := w.Model()
	in := hooks.Input{Source: source, Extra: map[string]any{
		"from_model": from, "to_model": model, "requested_model": model, "context_tokens": s.insp.lastContextTokens(),
		"prompt_cache_warm": s.cacheSafeNow() != nil, "cache_ttl": "5m", "estimated_cache_write_usd": 0, "pricing": "catalog",
	}}
	pre := s.hooks.Run(ctx, hooks.PreModelSwitch, s.hookd.Input(s.Cwd(), in))
	if pre.Decision == hooks.DecisionBlock {
		reason := pre.Reason
		if reason == "" {
			reason = "a PreModelSwitch hook refused it"
		}
		return fmt.Errorf("switch to %s refused: %s", model, reason)
	}
	w.SetModel(model)
	post := s.hooks.Run(ctx, hooks.PostModelSwitch, s.hookd.Input(s.Cwd(), in))
	s.mu.Lock()
	s.startContext = append(s.startContext, post.AdditionalContext...)
	s.mu.Unlock()
	return nil
}
