package session

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/permission"
)

// models is the session's model catalog.
func (s *Session) models() *models.Catalog {
	if s.opts.Models == nil {
		return models.Builtins()
	}
	return s.opts.Models
}

// contextWindow is the window of the session's model, in tokens.
func (s *Session) contextWindow() int64 {
	if s.opts.ContextWindow > 0 {
		return s.opts.ContextWindow
	}
	return s.models().ContextWindow(s.Model())
}

// Model returns the model the next request uses: PlanModel while the permission mode is plan
// (the opusplan alias), else Model.
func (s *Session) Model() string {
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
func (s *Session) SetModel(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Model, s.opts.PlanModel = model, ""
}

// SwitchModel changes the model for the next Send, as set_model or /model does: the
// PreModelSwitch hooks may refuse it, the PostModelSwitch hooks hear of it.
func (s *Session) SwitchModel(ctx context.Context, model, source string) error {
	from := s.Model()
	in := hooks.Input{Source: source, Extra: map[string]any{
		"from_model": from, "to_model": model, "requested_model": model, "context_tokens": s.lastContextTokens(),
		"prompt_cache_warm": s.cacheSafeNow() != nil, "cache_ttl": "5m", "estimated_cache_write_usd": 0, "pricing": "catalog",
	}}
	pre := s.hooks.Run(ctx, hooks.PreModelSwitch, s.hookd.hookInput(s.Cwd(), in))
	if pre.Decision == hooks.DecisionBlock {
		reason := pre.Reason
		if reason == "" {
			reason = "a PreModelSwitch hook refused it"
		}
		return fmt.Errorf("switch to %s refused: %s", model, reason)
	}
	s.SetModel(model)
	post := s.hooks.Run(ctx, hooks.PostModelSwitch, s.hookd.hookInput(s.Cwd(), in))
	s.mu.Lock()
	s.startContext = append(s.startContext, post.AdditionalContext...)
	s.mu.Unlock()
	return nil
}
