package session

import (
	"fmt"
	"strings"
)

// EffortLevels are the reasoning effort levels a session takes, lowest first (--effort, and
// an editor's thought-level option).
var EffortLevels = []string{"low", "medium", "high", "xhigh", "max"}

// SetEffort sets the thinking budget of the following requests to that of an effort level;
// "off" turns extended thinking off.
func (s *Session) SetEffort(level string) error {
	if level == "off" {
		s.SetMaxThinkingTokens(0)
		return nil
	}
	b, ok := effortBudgets[level]
	if !ok {
		return fmt.Errorf("effort %q is not one of off, %s", level, strings.Join(EffortLevels, ", "))
	}
	s.SetMaxThinkingTokens(b)
	return nil
}
