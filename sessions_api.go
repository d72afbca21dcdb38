package keel

import (
	"context"
	"fmt"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/session"
)

// SessionInfo describes a stored session.
type SessionInfo struct {
	ID          string
	Title       string
	FirstPrompt string
	// Branch is the git branch the first prompt was written on ("" when unknown).
	Branch  string
	Updated time.Time
	// Size is the transcript's size in bytes; Messages counts its messages, all branches.
	Size     int64
	Messages int
}

// ListSessions lists the sessions stored for the working directory cwd (empty: the process's)
// under home (empty: $KEEL_HOME or ~/.keel, and Claude Code's ~/.claude), newest first. It reads file tails and indexes, never whole files.
func ListSessions(home, cwd string) ([]SessionInfo, error) {
	sums, err := session.ListStored(storedHomes(home), cwd)
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, len(sums))
	for i, s := range sums {
		out[i] = sessionInfo(s)
	}
	return out, nil
}

// RewindPoint is a user prompt a session can be rewound to.
type RewindPoint struct {
	UUID   string
	Prompt string
}

// RewindPoints lists the user prompts of the conversation, oldest first.
func (s *Session) RewindPoints() []RewindPoint {
	var out []RewindPoint
	for _, e := range s.s.Undo().UserMessages() {
		out = append(out, RewindPoint{UUID: e.UUID, Prompt: e.Message.TextOf()})
	}
	return out
}

// RewindResult says what a rewind did.
type RewindResult struct {
	// Restored and Deleted are the files put back and the files removed (created after the
	// point); Unrecoverable lists changes a rewind cannot undo (shell commands, MCP calls).
	Restored, Deleted, Unrecoverable []string
	// Messages is how many conversation messages were dropped.
	Messages int
}

// Rewind moves the session back to just before the user prompt with the given uuid (see
// RewindPoints): its files (code), its conversation, or both.
func (s *Session) Rewind(ctx context.Context, toUUID string, code, conversation bool) (RewindResult, error) {
	rep, err := s.s.Undo().Rewind(ctx, toUUID, code, conversation)
	out := RewindResult{Restored: rep.Files.Restored, Deleted: rep.Files.Deleted, Messages: rep.Messages}
	for _, u := range rep.Files.Unrecoverable {
		out.Unrecoverable = append(out.Unrecoverable, u.Tool+": "+u.Description)
	}
	return out, err
}

// Compact summarises the conversation so far and continues from the summary; instructions,
// if any, say what the summary should keep.
func (s *Session) Compact(ctx context.Context, instructions string) error {
	return s.command(ctx, "/compact "+instructions)
}

// Clear starts the conversation over; settings, tools and permissions stay.
func (s *Session) Clear(ctx context.Context) error { return s.command(ctx, "/clear") }

// TranscriptPath is where the session's transcript is, or "" when nothing is kept.
func (s *Session) TranscriptPath() string { return s.s.TranscriptPath() }

func (s *Session) command(ctx context.Context, line string) error {
	for ev, err := range s.s.Send(ctx, line) {
		if err != nil {
			return err
		}
		if r, ok := ev.(event.Result); ok && r.IsError {
			return fmt.Errorf("%s", r.Text)
		}
	}
	return nil
}

// SkillInfo is a skill or custom command the session can run.
type SkillInfo struct {
	Name, Description, Source string
	// UserInvocable entries can be run as /name; ModelInvocable ones by the model.
	UserInvocable, ModelInvocable bool
}

// Skills lists the skills and custom commands loaded for this session.
func (s *Session) Skills() []SkillInfo {
	var out []SkillInfo
	for _, sk := range s.s.Skills().All() {
		out = append(out, SkillInfo{Name: sk.Name, Description: sk.Description, Source: string(sk.Source),
			UserInvocable: sk.UserInvocable, ModelInvocable: sk.ModelInvocable()})
	}
	return out
}

// MemoryFile is one instructions file (KEEL.md, CLAUDE.md, AGENTS.md, rules) in the prompt.
type MemoryFile struct {
	Path, Kind string
	Size       int64
}

// MemoryFiles lists the memory files in the system prompt, in load order.
func (s *Session) MemoryFiles() []MemoryFile {
	var out []MemoryFile
	for _, f := range s.s.Inspect().MemoryFiles() {
		out = append(out, MemoryFile{Path: f.Path, Kind: string(f.Kind), Size: f.Size})
	}
	return out
}

// MCPServers reports every configured MCP server: connected, failed (with the reason),
// needs-auth, pending or disabled.
func (s *Session) MCPServers() []MCPServerStatus {
	var out []MCPServerStatus
	for _, st := range s.s.MCP().Status() {
		out = append(out, MCPServerStatus{Name: st.Name, Status: string(st.Status), Reason: st.Reason, Tools: st.Tools})
	}
	return out
}

// LoginMCP signs the user in to the OAuth-protected HTTP MCP server called name anew,
// through Options.MCPAuthorize, and reconnects it with the new tokens (stored under Home).
// It returns when the sign-in is done, failed, or ctx ends.
func (s *Session) LoginMCP(ctx context.Context, name string) error { return s.s.MCP().Login(ctx, name) }

// AgentInfo is an agent definition the session can start.
type AgentInfo struct {
	Name, Description, Color, Source string
}

// Agents lists the agent definitions, built-in and loaded.
func (s *Session) Agents() []AgentInfo {
	var out []AgentInfo
	for _, d := range s.s.Agents().Definitions() {
		out = append(out, AgentInfo{Name: d.Name, Description: d.Description, Color: string(d.Color), Source: string(d.Source)})
	}
	return out
}

// Background moves the subagents the main thread is waiting for to the background (Ctrl+B in
// the terminal UI): their Agent calls return at once with a receipt, the agents keep running,
// and each one's result reaches the model as a task notification at its next request. It
// returns an error when no subagent runs in the foreground.
func (s *Session) Background(ctx context.Context) error { return s.s.Agents().Background(ctx) }

// ReloadSkills reads the skills and custom commands from disk again, between prompts: the
// main agent's listing, Skill tool and /commands use the new set.
func (s *Session) ReloadSkills(ctx context.Context) error { return s.s.Skills().Reload(ctx) }
