package session

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
)

func resolveCwd(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("find working directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve working directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("working directory %s is not a directory", abs)
	}
	return abs, nil
}

// buildTools returns the built-in tools in their fixed order.
func (s *Session) buildTools() []tool.Tool { return nil }

// renderSystemPrompt renders the main agent's system prompt once; it is reused verbatim on
// every request of the session.
func (s *Session) renderSystemPrompt() []provider.SystemBlock {
	text := s.opts.SystemPrompt
	if text == "" {
		text = "You are keel, a coding agent."
	}
	if s.opts.AppendSystemPrompt != "" {
		text += "\n\n" + s.opts.AppendSystemPrompt
	}
	return []provider.SystemBlock{{Text: text}}
}
