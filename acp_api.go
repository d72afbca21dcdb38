package keel

import (
	"context"
	"iter"
	"slices"
	"time"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/effort"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/shell"
)

// What an editor frontend (the Agent Client Protocol server, `keel acp`) needs beyond Send:
// the conversation to replay, attachments, model and effort choices, and the editor's own
// files and terminals for the tools.

// SendContent is [Session.Send] with attachments (images, documents as text blocks) after the
// prompt's text in the same user message.
func (s *Session) SendContent(ctx context.Context, prompt string, attachments []Block) iter.Seq2[Event, error] {
	return events(s.s.Send(session.WithAttachments(ctx, convert[[]message.Block](attachments)), prompt))
}

// ResolveModel turns a model alias (opus, sonnet, haiku, default…) into the model id it
// names for this session; other names pass unchanged.
func (s *Session) ResolveModel(name string) string {
	return s.s.Switches().ModelCatalog().Resolve(name)
}

// ModelAliases lists the model aliases [Session.ResolveModel] knows, for a model picker.
func ModelAliases() []string {
	return slices.DeleteFunc(slices.Clone(models.Aliases), func(a string) bool { return a == "opusplan" })
}

// EffortLevels lists the reasoning effort levels [Session.SetEffort] takes, lowest first.
func EffortLevels() []string { return slices.Clone(effort.Levels) }

// SetEffort sets how much the model may think before it answers, from the next request on:
// one of [EffortLevels], or "off" for no extended thinking.
func (s *Session) SetEffort(level string) error { return s.s.Switches().SetEffort(level) }

// ToolHost is where the built-in file tools (Read, Write, Edit) read and write text files and
// where Bash runs its foreground commands, when an editor offers its buffers and terminals;
// see [WithToolHost]. A method returns [ErrNotHosted] to leave a call to the operating system.
type ToolHost interface {
	// ReadTextFile returns the text of the file at the absolute path as the user sees it.
	ReadTextFile(ctx context.Context, path string) (string, error)
	// WriteTextFile replaces (or creates) the file at the absolute path with content.
	WriteTextFile(ctx context.Context, path, content string) error
	// RunCommand runs c for the tool call toolUseID and reports how it ended: output, exit
	// code, and whether it timed out or was interrupted (ctx ended). It must not return
	// before the command has stopped.
	RunCommand(ctx context.Context, toolUseID string, c Command) (CommandResult, error)
}

// ErrNotHosted is a [ToolHost]'s answer for a call it leaves to the operating system.
var ErrNotHosted = builtin.ErrNotHosted

// Command is a shell command a [ToolHost] runs for Bash.
type Command struct {
	// Script is the shell source, run with `bash -c` (or `sh -c` when bash is absent).
	Script string
	// Dir is the working directory; it exists.
	Dir string
	// Env is the environment; nil inherits the process's.
	Env []string
	// Timeout bounds the run; zero means Bash's default (two minutes).
	Timeout time.Duration
	// OutputLimit caps the kept output in bytes; zero means Bash's default.
	OutputLimit int
	// TempDir holds the file the shell reports its final directory in; "" is the system's
	// temporary directory.
	TempDir string
	// OnLine, if set, gets each line of output as the command writes it, for progress
	// reports; it must be quick.
	OnLine func(line string)
}

// CommandResult is how a [Command] ended.
type CommandResult struct {
	// Output is stdout and stderr interleaved as written, cut in the middle when over the
	// limit; Truncated is how many bytes were cut.
	Output    string
	Truncated int64
	// ExitCode is the shell's exit status; -1 when it was killed.
	ExitCode int
	// TimedOut is set when the timeout killed the command; Interrupted when ctx ended first.
	TimedOut    bool
	Interrupted bool
	// Cwd is the shell's working directory when it exited, symlinks resolved; empty when
	// unknown.
	Cwd string
}

// WithToolHost returns ctx carrying h: a Send run under it (its subagents included) reads,
// writes and runs commands through h. Permission rules, path checks and the rule that a file
// is read before it is changed apply as always; h only performs the I/O.
func WithToolHost(ctx context.Context, h ToolHost) context.Context {
	return builtin.WithHost(ctx, toolHost{h})
}

// toolHost is a ToolHost as the built-in tools call it.
type toolHost struct{ h ToolHost }

func (t toolHost) ReadTextFile(ctx context.Context, path string) (string, error) {
	return t.h.ReadTextFile(ctx, path)
}

func (t toolHost) WriteTextFile(ctx context.Context, path, content string) error {
	return t.h.WriteTextFile(ctx, path, content)
}

func (t toolHost) RunCommand(ctx context.Context, toolUseID string, c shell.Command) (shell.Result, error) {
	res, err := t.h.RunCommand(ctx, toolUseID, convert[Command](c))
	return convert[shell.Result](res), err
}
