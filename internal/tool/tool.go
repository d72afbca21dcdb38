// Package tool is the contract every tool implements — built-ins, MCP tools, the Agent tool —
// plus what the loop needs around it: input validation against the tool's JSON schema, the
// cache-stable pool order, and the batch runner.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/toolpath"
)

// Tool is one capability the model can call.
//
// Implementations must be safe for concurrent calls: the batch runner calls concurrency-safe
// tools in parallel, and several agents share one tool value.
type Tool interface {
	// Name is the name the model calls; for MCP tools the fully qualified mcp__server__tool.
	Name() string
	// Description is the text the model reads. It is part of every request prefix, so it must
	// not change during a session.
	Description() string
	// InputSchema is the JSON schema of the input object, serialised deterministically.
	InputSchema() json.RawMessage
	// ReadOnly reports whether this call only reads (permission checks and plan mode use it).
	ReadOnly(input json.RawMessage) bool
	// ConcurrencySafe reports whether this call may run in parallel with other safe calls.
	ConcurrencySafe(input json.RawMessage) bool
	// Call runs the tool. Failures the model should see are returned as a Result with IsError
	// set (see [Errorf]), never as a panic or a Go error.
	Call(ctx context.Context, env *Env, input json.RawMessage) Result
}

// Env is what a tool call may use from the agent running it. The loop builds one per call from
// its current State; tools must not keep it after Call returns.
type Env struct {
	// State is the agent's state as of the start of the batch.
	State State
	// ToolUseID is the id of the tool_use block being answered.
	ToolUseID string
	// SessionID and AgentID identify who calls (AgentID is empty on the main thread).
	SessionID string
	AgentID   string
	// Files is the agent's file-read state; Read records into it, Write and Edit check it.
	Files *FileState
	// Hidden reports whether a search (Glob, Grep) must leave a file it found out of its
	// results: the permission gate sets it from the deny and ask rules for reading, so a file
	// the user denied, or wants to be asked about, is never listed or quoted. path is
	// absolute, symlinks resolved. Nil hides nothing.
	Hidden func(path string) bool
	// HiddenNote, set with Hidden, says what Hidden left out that the model may still ask for
	// (files an ask rule covers); a search appends it to its result. Nil or "" says nothing.
	HiddenNote func() string
	// Progress reports a short progress note to the UI; never nil.
	Progress func(msg string)
	// Logger is the agent's logger; never nil.
	Logger *slog.Logger
	// Traceparent is the W3C trace context (TRACEPARENT) a process the call starts runs under:
	// the call's span when telemetry exports traces, so the process's own spans join it; empty
	// otherwise.
	Traceparent string
	// Environ, if set, is the environment ("KEY=value") of the processes the call starts,
	// read at each call so a change (an enabled plugin's bin/ joining PATH) applies to the
	// next one; nil inherits keel's.
	Environ func() []string
	// Explicit reports whether a permission rule names this call's target explicitly (for
	// WebFetch, a WebFetch(domain:HOST) allow rule for the URL's host). Tools ask it before
	// what no mode or one-time answer may allow: WebFetch reaching a private address. The
	// gate sets it; nil means no rule does.
	Explicit func() bool
	// Paths are the call's file paths as the permission gate resolved and checked them. A file
	// tool acts on these ([Env.Checked]) and never resolves its input again: a link a command
	// swaps in between the check and the use would make it act on a file nobody checked. The
	// gate sets them, and After must be given the env Before was; nil when no gate checked the
	// call, and the tool resolves its input itself.
	Paths []toolpath.Path
}

// Checked returns the path the gate checked for the path input given, and whether it checked
// one.
func (e *Env) Checked(given string) (toolpath.Path, bool) {
	for _, p := range e.Paths {
		if p.Given == given {
			return p, true
		}
	}
	return toolpath.Path{}, false
}

// State is the part of an agent's context that tools may change, through a [Modifier]
// returned in their Result. The loop applies modifiers after the batch, in the model's order.
type State struct {
	// Cwd is the directory relative paths resolve against.
	Cwd string
	// AdditionalDirs are extra working directories (--add-dir).
	AdditionalDirs []string
}

// Modifier changes the agent's State after the batch that produced it.
type Modifier func(*State)

// Result is what a call returns to the model, plus what the loop and UI may use from it.
type Result struct {
	// Content goes into the tool_result block.
	Content []message.Block
	IsError bool
	// Modifier, if set, is applied after the batch.
	Modifier Modifier
	// Output is a structured form of the result for hooks (tool_response) and UIs; optional.
	Output any
	// Effects lists changes a rewind cannot undo (commands run, remote calls), for the UI.
	Effects []string
	// InputError marks a call refused before it ran because of the call itself: an unknown
	// tool or an input that fails the schema. The loop stops a model that repeats one.
	InputError bool
}

// Text returns a successful result of one text block.
func Text(s string) Result {
	return Result{Content: []message.Block{message.Text(s)}}
}

// Errorf returns an error result the model reads, formatted like fmt.Errorf.
func Errorf(format string, args ...any) Result {
	return Result{Content: []message.Block{message.Text(fmt.Sprintf(format, args...))}, IsError: true}
}

// ResultText joins the text blocks of a result.
func (r Result) ResultText() string {
	return message.Message{Content: r.Content}.TextOf()
}

// Deferrable is implemented by tools that are rarely needed. The session leaves their schemas
// out of the first request — natively (the provider's deferred loading and tool search) where
// the provider supports it, else behind ToolSearch — and names them to the model once, so they
// cost a name until the model asks for one.
type Deferrable interface {
	DeferLoading() bool
}

// IsDeferred reports whether t declares itself rarely needed.
func IsDeferred(t Tool) bool {
	d, ok := t.(Deferrable)
	return ok && d.DeferLoading()
}
