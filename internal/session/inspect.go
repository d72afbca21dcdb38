package session

import (
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/shell"
)

// This file holds what a frontend reads of a session to show it (the terminal UI's /hooks,
// /todos, /bashes, /permissions, /model, /doctor and status line) and the few changes it
// makes besides prompts.

// Todos is the main agent's todo list (TodoWrite), restored on resume.
func (s *Session) Todos() []event.Todo { return s.todos.List() }

// Shells lists the background shells, oldest first, leaving their output unread.
func (s *Session) Shells() []shell.Info { return s.jobs.List() }

// KillShell stops a background shell and everything it started.
func (s *Session) KillShell(id string) error {
	_, err := s.jobs.Kill(id)
	return err
}
