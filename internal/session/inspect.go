package session

import (
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/shell"
)

// Inspector is what a frontend reads of a session to show it (the terminal UI's /todos,
// /bashes, /memory, /context and status line), the background shells it may stop, and the
// project's auto memory (automemory.go), which it opens. Measuring the context reads the
// prompt, the pool and the history, hence s.
type Inspector struct {
	s *Session
	// autoMem is the project's auto memory (automemory.go).
	autoMem autoMemoryState
}

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
