package keel

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// Tool is a capability the model can call. Implement it, or make one from a Go function with
// [NewTool]. Offer tools with [Options].Tools; they come after keel's built-in tools.
type Tool interface {
	// Name is what the model calls the tool; Description is what it reads about it. Both
	// are part of every request's cached prefix, so they must not change during a session.
	Name() string
	Description() string
	// InputSchema is the JSON schema of the input object; keel checks every call's input
	// against it before Call runs and answers the model itself when it does not match.
	InputSchema() json.RawMessage
	// ReadOnly reports whether a call only reads: read-only calls run in plan mode and
	// without asking in the default mode. ConcurrencySafe calls may run in parallel with
	// other such calls of the same reply.
	ReadOnly(input json.RawMessage) bool
	ConcurrencySafe(input json.RawMessage) bool
	// Call runs the tool. An error goes back to the model as an error result, as does a
	// result with IsError set; the session goes on either way.
	Call(ctx context.Context, env ToolEnv, input json.RawMessage) (ToolResult, error)
}

// ToolEnv is what a tool call may use from the agent that makes it. It is valid during the
// call only.
type ToolEnv struct {
	// Cwd is the agent's working directory (relative paths resolve against it);
	// AdditionalDirs are the other directories it may work in.
	Cwd            string
	AdditionalDirs []string
	// SessionID, AgentID (empty for the main agent) and ToolUseID say who calls and which
	// call this is.
	SessionID, AgentID, ToolUseID string
	// Progress shows a short note while the call runs (a [ToolProgress] event); never nil.
	Progress func(msg string)
	// Logger is the agent's logger; never nil.
	Logger *slog.Logger
}

// ToolResult is what a call gives the model.
type ToolResult struct {
	// Content goes into the tool_result block: text, or images.
	Content []Block
	// IsError marks a failure the model should read and react to.
	IsError bool
	// Output is a structured form of the result, for hooks (tool_response); optional.
	Output any
}

// TextResult is a successful result of one text block.
func TextResult(text string) ToolResult { return ToolResult{Content: []Block{TextBlock(text)}} }

// ErrorResult is a failed result the model reads.
func ErrorResult(text string) ToolResult {
	return ToolResult{Content: []Block{TextBlock(text)}, IsError: true}
}

// sessionTool runs a public Tool as one of the session's.
type sessionTool struct{ t Tool }

var _ tool.Tool = sessionTool{}

func sessionTools(tools []Tool) []tool.Tool {
	out := make([]tool.Tool, 0, len(tools))
	for _, t := range tools {
		out = append(out, sessionTool{t})
	}
	return out
}

func (s sessionTool) Name() string                               { return s.t.Name() }
func (s sessionTool) Description() string                        { return s.t.Description() }
func (s sessionTool) InputSchema() json.RawMessage               { return s.t.InputSchema() }
func (s sessionTool) ReadOnly(input json.RawMessage) bool        { return s.t.ReadOnly(input) }
func (s sessionTool) ConcurrencySafe(input json.RawMessage) bool { return s.t.ConcurrencySafe(input) }

func (s sessionTool) Call(ctx context.Context, env *tool.Env, input json.RawMessage) tool.Result {
	res, err := s.t.Call(ctx, ToolEnv{Cwd: env.State.Cwd, AdditionalDirs: env.State.AdditionalDirs, SessionID: env.SessionID,
		AgentID: env.AgentID, ToolUseID: env.ToolUseID, Progress: env.Progress, Logger: env.Logger}, input)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	return tool.Result{Content: convert[[]message.Block](res.Content), IsError: res.IsError, Output: res.Output}
}
