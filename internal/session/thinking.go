package session

import (
	"github.com/keel-dev/keel/internal/effort"
	"github.com/keel-dev/keel/internal/provider"
)

// thinking is the main agent's thinking setting for the next request.
func (w *Switches) thinking() *provider.Thinking {
	s := w.s
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.thinking
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

// SetMaxThinkingTokens sets the thinking budget of the following requests; 0 turns thinking
// off (the SDK's setMaxThinkingTokens).
func (w *Switches) SetMaxThinkingTokens(n int64) {
	s := w.s
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	if n <= 0 {
		s.sdk.thinking = nil
		return
	}
	s.sdk.thinking = &provider.Thinking{BudgetTokens: n}
}
