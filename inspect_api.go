package keel

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/keel-dev/keel/internal/settings"
)

// ContextPart is one part of what the next request would carry: the system prompt, the
// tools, MCP tools, memory files, the messages, and the room left.
type ContextPart struct {
	Name   string
	Tokens int64
	// Kind is "used", "buffer" (kept free for compaction) or "free".
	Kind string
}

// ContextUsage is the next request's context by part, against the model's window, as the
// Agent SDK's get_context_usage reports it. Tokens are estimated from sizes.
type ContextUsage struct {
	Parts  []ContextPart
	Window int64
	Model  string
}

// Used is the sum of the parts in use.
func (u ContextUsage) Used() int64 {
	var n int64
	for _, p := range u.Parts {
		if p.Kind == "used" {
			n += p.Tokens
		}
	}
	return n
}

// ContextUsage measures what the next request of the main agent would send.
func (s *Session) ContextUsage(ctx context.Context) ContextUsage {
	cu := s.s.Inspect().ContextUsage(ctx)
	out := ContextUsage{Window: cu.Window, Model: cu.Model}
	for _, p := range cu.Parts {
		out.Parts = append(out.Parts, ContextPart{Name: p.Name, Tokens: p.Tokens, Kind: p.Kind})
	}
	return out
}

// Todos is the main agent's todo list (its TodoWrite calls), kept across a resume.
func (s *Session) Todos() []Todo { return convert[[]Todo](s.s.Inspect().Todos()) }

// Shell is a background shell the agent started (Bash with run_in_background).
type Shell struct {
	ID, Command string
	// Status is running, completed, failed or killed.
	Status   string
	ExitCode int
	Started  time.Time
}

// Shells lists the background shells, oldest first.
func (s *Session) Shells() []Shell {
	var out []Shell
	for _, j := range s.s.Inspect().Shells() {
		out = append(out, Shell{ID: j.ID, Command: j.Command, Status: string(j.Status), ExitCode: j.ExitCode, Started: j.Started})
	}
	return out
}

// KillShell stops a background shell and everything it started.
func (s *Session) KillShell(id string) error { return s.s.Inspect().KillShell(id) }

// Hook is one configured hook command.
type Hook struct {
	Event, Matcher string
	// Type is command (a shell command) or another kind the settings name; Command is what
	// runs.
	Type, Command string
	// Source is the settings file that configures it.
	Source string
}

// Hooks lists the hooks the settings configure, highest source first. disableAllHooks and an
// untrusted workspace's hooks are not reported as configured.
func (s *Session) Hooks() []Hook {
	st := s.s.Config().Settings()
	if st.DisableAllHooks.V {
		return nil
	}
	var out []Hook
	for _, g := range st.Hooks {
		for _, h := range g.Hooks {
			out = append(out, Hook{Event: g.Event, Matcher: g.Matcher, Type: h.Type, Command: h.Command, Source: g.From.String()})
		}
	}
	return out
}

// OutputStyle is a way the agent answers: keel's default, a built-in one (Explanatory,
// Learning) or one from an output-styles directory.
type OutputStyle struct {
	Name, Description, Source string
}

// OutputStyles lists the styles besides the default.
func (s *Session) OutputStyles() []OutputStyle {
	var out []OutputStyle
	for _, st := range s.s.Switches().OutputStyles() {
		out = append(out, OutputStyle{Name: st.Name, Description: st.Description, Source: st.Source})
	}
	return out
}

// OutputStyle names the style in use ("default" for keel's own).
func (s *Session) OutputStyle() string { return s.s.Switches().OutputStyle() }

// SetOutputStyle switches the style from the next request on and keeps the choice in the
// project's local settings.
func (s *Session) SetOutputStyle(ctx context.Context, name string) error {
	return s.s.Switches().SetOutputStyle(ctx, name)
}

// StatusLine is the statusLine setting: a command whose first output line a terminal UI
// shows, run with the session's state as JSON on stdin; empty Command means none.
type StatusLine struct {
	Command string
	Padding int
	// Source is the settings file that sets it.
	Source string
}

// StatusLine returns the statusLine setting.
func (s *Session) StatusLine() StatusLine {
	sl := s.s.Config().Settings().StatusLine
	return StatusLine{Command: sl.Command.V, Padding: int(sl.Padding.V), Source: sl.Command.From.String()}
}

// SettingsFile is a settings source and what became of it: loaded, missing or bad.
type SettingsFile struct {
	Scope, Path, State string
}

// SettingsFiles lists the settings sources in precedence order.
func (s *Session) SettingsFiles() []SettingsFile {
	var out []SettingsFile
	for _, f := range s.s.Config().Settings().Files {
		out = append(out, SettingsFile{Scope: string(f.Scope), Path: f.Path, State: string(f.State)})
	}
	return out
}

// SettingsProblems lists what is wrong in any settings source, each with its file, line and
// column, and whether it is an error or a warning.
func (s *Session) SettingsProblems() []Notice {
	var out []Notice
	for _, p := range s.s.Config().Settings().Problems {
		out = append(out, Notice{Level: string(p.Severity), Text: p.Error()})
	}
	return out
}

// SetStatusLine keeps command as the statusLine of the user's settings ($KEEL_HOME/
// settings.json), or removes it when command is empty. Sessions read it when they open; a
// terminal UI shows the new command's output at once.
func (s *Session) SetStatusLine(command string) error {
	home := homeOf(s.cfg)
	if home == "" {
		return errors.New("set the status line: no keel directory to keep it in")
	}
	return settings.UpdateFile(filepath.Join(home, "settings.json"), func(doc map[string]any) error {
		if command == "" {
			delete(doc, "statusLine")
		} else {
			doc["statusLine"] = map[string]any{"type": "command", "command": command}
		}
		return nil
	})
}

// DataDir is keel's directory for opts: Home, else $KEEL_HOME, else ~/.keel ("" when there
// is no home directory).
func DataDir(opts Options) string { return opts.home() }
