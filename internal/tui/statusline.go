package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/toolpath"
)

// statusLineInterval is the least time between two runs of the status line command, as in
// Claude Code.
const statusLineInterval = 300 * time.Millisecond

// statusLineTimeout bounds one run of the status line command.
const statusLineTimeout = 5 * time.Second

// statusLineState is the statusLine command's last output and its runs: one at a time, the
// next one after statusLineInterval when the state changed meanwhile.
type statusLineState struct {
	// override is the command /statusline set this run (set says there is one; "" removes).
	override string
	set      bool
	out      string
	running  bool
	pending  bool
}

// command is the status line command in effect.
func (s *statusLineState) command(sl StatusLiner) string {
	if s.set {
		return s.override
	}
	return sl.StatusLine().Command
}

// statusLineMsg is the output of one run.
type statusLineMsg struct{ out string }

// statusLineTickMsg lets a run that waited for the interval start.
type statusLineTickMsg struct{}

// refreshStatusLine runs the status line command with the session's state, unless a run is
// going (then it runs again once that one is done).
func (m *Model) refreshStatusLine() tea.Cmd {
	sl, ok := m.b.(StatusLiner)
	if !ok {
		return nil
	}
	cmdline := m.sl.command(sl)
	if cmdline == "" {
		m.sl.out = ""
		return nil
	}
	if m.sl.running {
		m.sl.pending = true
		return nil
	}
	m.sl.running = true
	input, _ := json.Marshal(m.statusInput())
	dir := m.cwd
	if why := workspaceCopy(cmdline, dir); why != "" {
		return func() tea.Msg { return statusLineMsg{out: why} }
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), statusLineTimeout)
		defer cancel()
		c := hostexec.Command(ctx, "sh", "-c", cmdline)
		c.Dir, c.Stdin = dir, bytes.NewReader(input)
		out, err := c.Output()
		if err != nil {
			return statusLineMsg{} // a failing command blanks the line, as in Claude Code
		}
		first, _, _ := strings.Cut(strings.TrimRight(string(out), "\n"), "\n")
		return statusLineMsg{out: first}
	}
}

// onStatusLine takes a run's output and starts the next run if the state changed meanwhile.
func (m *Model) onStatusLine(msg statusLineMsg) tea.Cmd {
	m.sl.running, m.sl.out = false, msg.out
	if !m.sl.pending {
		return nil
	}
	m.sl.pending = false
	return tea.Tick(statusLineInterval, func(time.Time) tea.Msg { return statusLineTickMsg{} })
}

// statusLineView is the status line command's output as shown under the input.
func (m *Model) statusLineView() string {
	if m.sl.out == "" {
		return ""
	}
	pad := 0
	if sl, ok := m.b.(StatusLiner); ok {
		pad = sl.StatusLine().Padding
	}
	return ansi.Truncate(strings.Repeat(" ", pad)+m.sl.out, m.width, "…")
}

// statusInput is what the status line command reads on stdin: Claude Code's JSON.
func (m *Model) statusInput() map[string]any {
	model := m.b.Model()
	transcriptPath := ""
	if p, ok := m.b.(Persister); ok {
		transcriptPath = p.TranscriptPath()
	}
	style := "default"
	if ss, ok := m.b.(StyleSwitcher); ok {
		style = ss.OutputStyle()
	}
	added, removed := m.linesChanged()
	u := m.usage
	used := float64(m.ctxUsed) * 100 / float64(max(m.window, 1))
	return map[string]any{
		"hook_event_name": "Status",
		"session_id":      m.b.ID(),
		"transcript_path": transcriptPath,
		"cwd":             m.b.Cwd(),
		"model":           map[string]any{"id": model, "display_name": displayName(model)},
		"workspace":       map[string]any{"current_dir": m.b.Cwd(), "project_dir": m.cwd},
		"version":         m.cfg.Version,
		"output_style":    map[string]any{"name": style},
		"cost": map[string]any{
			"total_cost_usd": m.cost, "total_duration_ms": m.now().Sub(m.started).Milliseconds(),
			"total_lines_added": added, "total_lines_removed": removed,
		},
		"context_window": map[string]any{
			"total_input_tokens": u.TotalInput(), "total_output_tokens": u.OutputTokens, "context_window_size": m.window,
			"used_percentage": used, "remaining_percentage": 100 - used,
		},
	}
}

// displayName is a model's short name: Opus 4.5 for claude-opus-4-5.
func displayName(id string) string {
	parts := strings.Split(strings.TrimPrefix(id, "claude-"), "-")
	if len(parts) == 0 || parts[0] == "" {
		return id
	}
	name := strings.ToUpper(parts[0][:1]) + parts[0][1:]
	var version []string
	for _, p := range parts[1:] {
		if len(p) <= 2 {
			version = append(version, p)
		}
	}
	if len(version) > 0 {
		name += " " + strings.Join(version, ".")
	}
	return name
}

// linesChanged counts the lines the session's edits added and removed, from the calls shown.
func (m *Model) linesChanged() (added, removed int) {
	for _, it := range m.items {
		if it.kind != kindTool || !it.done || it.isErr {
			continue
		}
		for _, l := range diffLines(themeStyles("mono", true), it.name, it.input) {
			switch {
			case strings.HasPrefix(l, "+ "):
				added++
			case strings.HasPrefix(l, "- "):
				removed++
			}
		}
	}
	return added, removed
}

// workspaceCopy says why the status line command is not run: a package runner (`npx -y
// ccstatusline`) would run, outside the sandbox, the copy of its package the workspace holds
// in a node_modules tree, or would read a configuration file of its own the workspace holds
// (.npmrc, .yarnrc.yml…), which can name any program for it to run — put there by the
// repository, or a sandboxed command of this session. "" when it may run.
func workspaceCopy(cmdline, dir string) string {
	// The first simple command, up to the first shell operator: `npx -y pkg; …`, `npx pkg | …`.
	first, _, _ := strings.Cut(strings.Map(func(r rune) rune {
		if strings.ContainsRune(";&|<>()\n`", r) {
			return ';'
		}
		return r
	}, cmdline), ";")
	words := strings.Fields(first)
	if len(words) == 0 {
		return ""
	}
	run, ok := mcphost.PackageRunner(words[0], words[1:])
	if !ok {
		return ""
	}
	rel := func(p string) string {
		if r, err := filepath.Rel(dir, p); err == nil {
			return r
		}
		return p
	}
	if p := run.Provided(dir, func(string) bool { return true }); p != "" {
		return fmt.Sprintf("status line not run: %s would run the workspace's copy, %s", words[0], rel(p))
	}
	top := workspaceTop(dir)
	// Whether the workspace is trusted is not known here: an .npmrc counts unless it sets only
	// what starts nothing and names no registry.
	counts := func(p string) bool { return toolpath.Within(p, top) && !mcphost.HarmlessConfig(p, false) }
	if p := run.Configured(dir, counts); p != "" {
		return fmt.Sprintf("status line not run: %s would read the workspace's %s, which can make it run any program (check it, or start the package's executable by its path)", words[0], rel(p))
	}
	return ""
}

// workspaceTop is the top of the repository around dir (where .git is), or dir outside one:
// the runner's configuration counts up to there, above it the user's own (~/.npmrc).
func workspaceTop(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return filepath.Clean(dir)
		}
	}
}
