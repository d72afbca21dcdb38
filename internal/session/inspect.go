package session

import (
	"context"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/inspect"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
)

// Inspector is what a frontend reads of a session to show it (internal/inspect): the
// todos, the background shells it may stop, the memory files, the context usage, and the
// project's auto memory, which it opens.
type Inspector = inspect.Inspector

// ContextUsage is the next request's context by part; ContextPart one part; MemoryShare one
// memory file's share.
type (
	ContextUsage = inspect.ContextUsage
	ContextPart  = inspect.ContextPart
	MemoryShare  = inspect.MemoryShare
)

// Inspect returns what a frontend reads of the session.
func (s *Session) Inspect() *Inspector { return s.insp }

// newInspector wires the inspector to the session's todos, shells, memory, prompt, pool,
// history and switches. Most of them are built later in opening than the inspector, hence
// the functions that reach them when called.
func newInspector(s *Session) *inspect.Inspector {
	return inspect.New(inspect.Config{
		Todos:  func() []event.Todo { return s.todos.List() },
		Shells: inspectShells{s},
		Memory: func() []memory.File {
			if s.memory == nil {
				return nil
			}
			return s.memory.Files()
		},
		LastRequest: func() []message.Message {
			if cs := s.cacheSafeNow(); cs != nil {
				return cs.Messages
			}
			return nil
		},
		Home: s.opts.Home, Cwd: s.opts.Cwd,
		AutoMemoryOn: func() bool { return s.settings.AutoMemoryOn() },
		Grant:        func(rules ...permission.Rule) { s.checker.Grant(rules...) },
		Warn:         func(text string) { s.notices = append(s.notices, event.Notice{Level: "warn", Text: text}) },
		System:       func(ctx context.Context) []provider.SystemBlock { return s.conf.systemPrompt(ctx).Blocks },
		Tools:        func(ctx context.Context) []tool.Tool { return s.pool(ctx).Tools() },
		History:      s.History,
		Window: func() int64 {
			if s.opts.ContextWindow == 0 {
				return DefaultContextWindow
			}
			return s.opts.ContextWindow
		},
		Threshold: func() int64 { return s.compaction.Threshold() },
		Model:     func() string { return s.switches.Model() },
	})
}

// inspectShells reaches the session's background shells, which are built after the
// inspector.
type inspectShells struct{ s *Session }

func (i inspectShells) List() []shell.Info                     { return i.s.jobs.List() }
func (i inspectShells) Kill(id string) (shell.Snapshot, error) { return i.s.jobs.Kill(id) }
