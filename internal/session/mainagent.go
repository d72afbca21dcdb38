package session

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/permission"
)

// applyMainAgent makes the main thread run as the agent Options.Agent names (keel --agent):
// its prompt joins the system prompt, its tool lists narrow the pool, and its model and
// permission mode apply unless --model or --permission-mode chose otherwise. Its
// initialPrompt opens the first user message (see initialPrompt).
func (s *Session) applyMainAgent() error {
	if s.opts.Agent == "" {
		return nil
	}
	def, ok := s.agents.runner.Definitions().Get(s.opts.Agent)
	if !ok {
		return fmt.Errorf("--agent %s: no such agent; available agents: %s", s.opts.Agent, strings.Join(s.agents.names(), ", "))
	}
	s.mainAgent = def
	if def.Prompt != "" {
		s.opts.AppendSystemPrompt = strings.TrimSpace(s.opts.AppendSystemPrompt + "\n\n" + def.Prompt)
	}
	if def.Model != "" && def.Model != agentdef.ModelInherit && !s.opts.ModelFlag {
		s.switches.SetBase(s.switches.ModelCatalog().Resolve(def.Model))
	}
	if def.PermissionMode != "" && s.opts.PermissionMode == "" {
		m, err := permission.ParseMode(string(def.PermissionMode))
		if err != nil {
			return fmt.Errorf("--agent %s: %w", def.Name, err)
		}
		s.checker.SetMode(m)
	}
	return nil
}

// initialPrompt puts an --agent's initialPrompt in front of the session's first prompt.
func (s *Session) initialPrompt(prompt string) string {
	if s.mainAgent == nil || s.mainAgent.InitialPrompt == "" {
		return prompt
	}
	s.mu.Lock()
	first := len(s.history) == 0 && !s.initialSent
	s.initialSent = true
	s.mu.Unlock()
	if !first {
		return prompt
	}
	return s.mainAgent.InitialPrompt + "\n\n" + prompt
}
