// Package inspect is what a frontend reads of a session to show it — the terminal UI's
// /todos, /bashes, /memory, /context and status line, the SDK's context usage — the
// background shells it may stop, and the project's auto memory, which it opens at the
// session's start.
//
// What it needs of the session it names in [Config], as fields and functions: the package
// knows no session, so an inspector can be built and tested on its own.
package inspect

import (
	"context"
	"encoding/json"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
)

// Shells are the session's background shells; *[shell.Jobs] is one.
type Shells interface {
	List() []shell.Info
	Kill(id string) (shell.Snapshot, error)
}

var _ Shells = (*shell.Jobs)(nil)

// Config is what an inspector needs. A nil function reads as nothing (no todos, no memory
// files, an empty history); a nil Shells as no background shells.
type Config struct {
	// Todos is the main agent's todo list.
	Todos func() []event.Todo
	// Shells are the background shells.
	Shells Shells
	// Memory is the memory files the system prompt loaded, in load order.
	Memory func() []memory.File
	// LastRequest is the conversation the main thread's newest request carried, nil before
	// the first.
	LastRequest func() []message.Message

	// Home is keel's home, where the auto memory is kept; "" keeps none. Cwd is the
	// session's starting directory, which names the project's auto memory.
	Home, Cwd string
	// AutoMemoryOn says the settings leave auto memory on.
	AutoMemoryOn func() bool
	// Grant gives the main agent rules: Read, Write and Edit in the auto memory.
	Grant func(rules ...permission.Rule)
	// Warn tells the user of a problem: an auto memory keel cannot use.
	Warn func(text string)

	// System is the main agent's system prompt as the next request sends it.
	System func(ctx context.Context) []provider.SystemBlock
	// Tools are the tools the next request offers.
	Tools func(ctx context.Context) []tool.Tool
	// History is the conversation so far.
	History func() []message.Message
	// Window is the model's context window; Threshold is where the main thread compacts,
	// below it; Model names the model.
	Window, Threshold func() int64
	Model             func() string
}

// Inspector reads a session for a frontend. Its methods are safe for concurrent use once
// OpenAutoMemory has run (the session runs it while opening).
type Inspector struct {
	c Config
	// auto is the open auto memory, nil when it is off or unavailable; problem says why it
	// is unavailable, "" when it is simply off.
	auto    *memory.Auto
	problem string
}

// New returns an inspector reading what c names.
func New(c Config) *Inspector { return &Inspector{c: c} }

// Todos is the main agent's todo list (TodoWrite), restored on resume.
func (i *Inspector) Todos() []event.Todo {
	if i.c.Todos == nil {
		return nil
	}
	return i.c.Todos()
}

// Shells lists the background shells, oldest first, leaving their output unread.
func (i *Inspector) Shells() []shell.Info {
	if i.c.Shells == nil {
		return nil
	}
	return i.c.Shells.List()
}

// KillShell stops a background shell and everything it started.
func (i *Inspector) KillShell(id string) error {
	if i.c.Shells == nil {
		return shell.ErrNoJob
	}
	_, err := i.c.Shells.Kill(id)
	return err
}

// MemoryFiles lists the memory files in the system prompt, in load order, then the auto
// memory's index (memory.KindAuto) when auto memory is on.
func (i *Inspector) MemoryFiles() []memory.File {
	var files []memory.File
	if i.c.Memory != nil {
		files = i.c.Memory()
	}
	if f, ok := i.autoMemoryFile(); ok {
		files = append(files, f)
	}
	return files
}

// LastContextTokens is what the main thread's last request carried, 0 before the first.
func (i *Inspector) LastContextTokens() int64 {
	if i.c.LastRequest == nil {
		return 0
	}
	msgs := i.c.LastRequest()
	if msgs == nil {
		return 0
	}
	b, _ := json.Marshal(msgs)
	return tokensOf(len(b))
}

// tokensOf approximates tokens as a quarter of the bytes, as keel does wherever it has no
// count from the provider.
func tokensOf(n int) int64 { return int64((n + 3) / 4) }
