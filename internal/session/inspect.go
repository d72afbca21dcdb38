package session

import (
	"encoding/json"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/shell"
)

// Inspect returns what a frontend reads of the session.
func (s *Session) Inspect() *Inspector { return &s.insp }

// Todos is the main agent's todo list (TodoWrite), restored on resume.
func (i *Inspector) Todos() []event.Todo {
	s := i.s
	return s.todos.List()
}

// Shells lists the background shells, oldest first, leaving their output unread.
func (i *Inspector) Shells() []shell.Info {
	s := i.s
	return s.jobs.List()
}

// KillShell stops a background shell and everything it started.
func (i *Inspector) KillShell(id string) error {
	s := i.s
	_, err := s.jobs.Kill(id)
	return err
}

// MemoryFiles lists the memory files in the system prompt, in load order, then the auto
// memory's index (memory.KindAuto) when auto memory is on.
func (i *Inspector) MemoryFiles() []memory.File {
	s := i.s
	var files []memory.File
	if s.memory != nil {
		files = s.memory.Files()
	}
	if f, ok := i.autoMemoryFile(); ok {
		files = append(files, f)
	}
	return files
}

// lastContextTokens is what the last main-thread request carried, 0 before the first.
func (i *Inspector) lastContextTokens() int64 {
	s := i.s
	cs := s.cacheSafeNow()
	if cs == nil {
		return 0
	}
	b, _ := json.Marshal(cs.Messages)
	return tokensOf(len(b))
}

// tokensOf approximates tokens as a quarter of the bytes, as keel does wherever it has no
// count from the provider.
func tokensOf(n int) int64 { return int64((n + 3) / 4) }
