package session

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/effort"
)

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
