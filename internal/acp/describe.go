package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// description is how a tool call looks in the editor.
type description struct {
	title     string
	kind      sdk.ToolKind
	locations []sdk.ToolCallLocation
	content   []sdk.ToolCallContent
}

// callInput is the union of the built-in tools' input fields a description uses.
type callInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Pattern      string `json:"pattern"`
	Command      string `json:"command"`
	Description  string `json:"description"`
	Offset       int    `json:"offset"`
	Limit        int    `json:"limit"`
	Content      string `json:"content"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	NewSource    string `json:"new_source"`
	URL          string `json:"url"`
	Query        string `json:"query"`
	BashID       string `json:"bash_id"`
	ShellID      string `json:"shell_id"`
	Skill        string `json:"skill"`
	SubagentType string `json:"subagent_type"`
}

// kindOf is the protocol's kind of a tool, which picks the editor's icon.
func kindOf(name string) sdk.ToolKind {
	switch name {
	case "Read":
		return sdk.ToolKindRead
	case "Edit", "Write", "NotebookEdit":
		return sdk.ToolKindEdit
	case "Bash", "BashOutput", "KillShell":
		return sdk.ToolKindExecute
	case "Glob", "Grep", "ToolSearch":
		return sdk.ToolKindSearch
	case "WebFetch", "WebSearch":
		return sdk.ToolKindFetch
	case "TodoWrite", "Agent", "Task", "Skill":
		return sdk.ToolKindThink
	case "ExitPlanMode", "EnterPlanMode":
		return sdk.ToolKindSwitchMode
	}
	return sdk.ToolKindOther
}

// describe makes a call's title (what a person reads: "Read src/main.go", "Bash: go test
// ./..."), kind, file locations and, for file changes, the diff it will make. agent names a
// subagent or teammate making the call.
func (s *session) describe(ctx context.Context, name, agent string, raw json.RawMessage) description {
	var in callInput
	_ = json.Unmarshal(raw, &in) // a malformed input still gets the tool's name as its title
	cwd := s.ks.Cwd()
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(cwd, p)
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(cwd, abs(p)); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return abs(p)
	}
	at := func(p string, line int) []sdk.ToolCallLocation {
		if p == "" {
			return nil
		}
		l := sdk.ToolCallLocation{Path: abs(p)}
		if line > 0 {
			l.Line = sdk.Ptr(line)
		}
		return []sdk.ToolCallLocation{l}
	}
	d := description{title: name, kind: kindOf(name)}
	switch name {
	case "Read":
		d.title, d.locations = "Read "+rel(in.FilePath), at(in.FilePath, in.Offset)
		if in.Offset > 0 || in.Limit > 0 {
			d.title += fmt.Sprintf(" (from line %d)", max(in.Offset, 1))
		}
	case "Write":
		d.title, d.locations = "Write "+rel(in.FilePath), at(in.FilePath, 0)
		if old, err := readBytesFor(ctx, s, abs(in.FilePath)); err == nil {
			d.content = []sdk.ToolCallContent{sdk.ToolDiffContent(abs(in.FilePath), in.Content, old)}
		} else {
			d.content = []sdk.ToolCallContent{sdk.ToolDiffContent(abs(in.FilePath), in.Content)}
		}
	case "Edit":
		d.title, d.locations = "Edit "+rel(in.FilePath), at(in.FilePath, 0)
		d.content = []sdk.ToolCallContent{sdk.ToolDiffContent(abs(in.FilePath), in.NewString, in.OldString)}
	case "NotebookEdit":
		d.title, d.locations = "Edit "+rel(in.NotebookPath), at(in.NotebookPath, 0)
		d.content = []sdk.ToolCallContent{sdk.ToolDiffContent(abs(in.NotebookPath), in.NewSource)}
	case "Bash":
		d.title = "Bash: " + oneLine(in.Command)
		if in.Description != "" {
			d.content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(in.Description))}
		}
	case "BashOutput":
		d.title = "Output of " + in.BashID
	case "KillShell":
		d.title = "Kill " + in.ShellID
	case "Glob", "Grep":
		d.title = name + " " + oneLine(in.Pattern)
		if in.Path != "" {
			d.title += " in " + rel(in.Path)
			d.locations = at(in.Path, 0)
		}
	case "WebFetch":
		d.title = "Fetch " + in.URL
	case "WebSearch":
		d.title = "Search the web: " + oneLine(in.Query)
	case "TodoWrite":
		d.title = "Update the plan"
	case "Agent", "Task":
		d.title = "Agent: " + firstNonEmpty(in.Description, in.SubagentType, "task")
	case "Skill":
		d.title = "Skill: " + in.Skill
	case "ToolSearch":
		d.title = "Search tools: " + oneLine(in.Query)
	default:
		if server, tool, ok := mcpName(name); ok {
			d.title = server + ": " + tool
		}
	}
	if agent != "" {
		d.title = agent + ": " + d.title
	}
	return d
}

// readBytesFor reads a file as the session's tools would: through the client when it offers
// its files, else from disk.
func readBytesFor(ctx context.Context, s *session, path string) (string, error) {
	if s.caps.Fs.ReadTextFile {
		if _, err := os.Stat(path); err != nil {
			return "", err
		}
		return (&host{s: s}).ReadTextFile(ctx, path)
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// mcpName splits "mcp__server__tool".
func mcpName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "__")
}

// oneLine is the first line of s, cut to a title's length.
func oneLine(s string) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 80 {
		s, cut = string(r[:80]), true
	}
	if cut {
		s += "…"
	}
	return s
}
