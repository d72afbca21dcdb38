package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
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

// buildTools returns the built-in tools in their fixed order (part of every request prefix).
func (s *Session) buildTools() []tool.Tool {
	s.jobs = shell.NewJobs()
	s.todos = builtin.NewTodos(func(items []event.Todo) {
		s.emit(event.Todos{Items: items})
		s.persist.recordMetadata(context.Background(), transcript.TypeTodos, items)
	})
	opts := builtin.Options{Jobs: s.jobs, Todos: s.todos, Sandbox: s.sandbox}
	s.notices = append(s.notices, newWebSetup(s).configure(&opts)...)
	tools := builtin.Tools(opts)
	tools = append(tools, s.sk.Tool())
	tools = append(tools, s.structuredTool()...)
	return append(tools, builtin.ExitPlanMode())
}

// emit sends e to the caller of the Send in progress, if any.
func (s *Session) emit(e event.Event) {
	s.mu.Lock()
	sink := s.sink
	s.mu.Unlock()
	if sink != nil {
		sink.Emit(e)
	}
}

// warn shows the user a problem found while the session works (a hook that timed out): in the
// Send in progress, or with the next one.
func (s *Session) warn(text string) {
	n := event.Notice{Level: "warn", Text: text}
	s.mu.Lock()
	sink := s.sink
	if sink == nil {
		s.notices = append(s.notices, n)
	}
	s.mu.Unlock()
	if sink != nil {
		sink.Emit(n)
	}
}
