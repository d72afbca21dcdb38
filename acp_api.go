package keel

import (
	"context"
	"iter"
	"slices"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/shell"
)

// What an editor frontend (the Agent Client Protocol server, `keel acp`) needs beyond Send:
// the conversation to replay, attachments, model and effort choices, and the editor's own
// files and terminals for the tools.

// Message is one message of a conversation, and ContentBlock one block of it (text,
// thinking, tool use, tool result, image).
type (
	Message      = message.Message
	ContentBlock = message.Block
)

// SendContent is [Session.Send] with attachments (images, documents as text blocks) after the
// prompt's text in the same user message.
func (s *Session) SendContent(ctx context.Context, prompt string, attachments []ContentBlock) iter.Seq2[Event, error] {
	return s.s.Send(session.WithAttachments(ctx, attachments), prompt)
}

// ResolveModel turns a model alias (opus, sonnet, haiku, default…) into the model id it
// names for this session; other names pass unchanged.
func (s *Session) ResolveModel(name string) string { return s.s.ResolveModel(name) }

// ModelAliases lists the model aliases [Session.ResolveModel] knows, for a model picker.
func ModelAliases() []string {
	return slices.DeleteFunc(slices.Clone(models.Aliases), func(a string) bool { return a == "opusplan" })
}

// EffortLevels lists the reasoning effort levels [Session.SetEffort] takes, lowest first.
func EffortLevels() []string { return slices.Clone(session.EffortLevels) }

// SetEffort sets how much the model may think before it answers, from the next request on:
// one of [EffortLevels], or "off" for no extended thinking.
func (s *Session) SetEffort(level string) error { return s.s.SetEffort(level) }

// ToolHost is where the built-in file tools (Read, Write, Edit) read and write text files and
// where Bash runs its foreground commands, when an editor offers its buffers and terminals;
// see [WithToolHost]. A method returns [ErrNotHosted] to leave a call to the operating system.
type ToolHost = builtin.Host

// ErrNotHosted is a [ToolHost]'s answer for a call it leaves to the operating system.
var ErrNotHosted = builtin.ErrNotHosted

// Command is a shell command a [ToolHost] runs for Bash, and CommandResult what it reports.
type (
	Command       = shell.Command
	CommandResult = shell.Result
)

// WithToolHost returns ctx carrying h: a Send run under it (its subagents included) reads,
// writes and runs commands through h. Permission rules, path checks and the rule that a file
// is read before it is changed apply as always; h only performs the I/O.
func WithToolHost(ctx context.Context, h ToolHost) context.Context { return builtin.WithHost(ctx, h) }
