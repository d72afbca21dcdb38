package session

import (
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/shell"
)

// This file holds what a frontend reads of a session to show it (the terminal UI's /hooks,
// /todos, /bashes, /permissions, /model, /doctor and status line) and the few changes it
// makes besides prompts.

// Settings returns the merged settings with where each value came from; treat it as
// read-only.
func (s *Session) Settings() *settings.Settings { return s.settings }

// Todos is the main agent's todo list (TodoWrite), restored on resume.
func (s *Session) Todos() []event.Todo { return s.todos.List() }

// Shells lists the background shells, oldest first, leaving their output unread.
func (s *Session) Shells() []shell.Info { return s.jobs.List() }

// KillShell stops a background shell and everything it started.
func (s *Session) KillShell(id string) error {
	_, err := s.jobs.Kill(id)
	return err
}

// ModelCatalog is the model list this session resolves and checks model names with.
func (s *Session) ModelCatalog() *models.Catalog { return s.models() }

// PermissionRules lists the main agent's allow, ask and deny rules, each with its source.
func (s *Session) PermissionRules() []permission.Rule { return s.checker.Policy().Rules }

// ChangePermissions applies updates to the main agent from the next call on and writes those
// meant for a settings file there (see [Session.PersistPermissions]).
func (s *Session) ChangePermissions(updates []permission.Update) error {
	if err := s.checker.Apply(updates); err != nil {
		return err
	}
	return s.PersistPermissions(updates)
}
