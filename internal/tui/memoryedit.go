package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel/internal/hostexec"
)

// /memory: the memory files in use, and one opened in the user's editor, as Claude Code's
// /memory does.

// projectMemoryNames are the names a project memory file in the working directory has.
var projectMemoryNames = []string{"KEEL.md", "CLAUDE.md", "AGENTS.md"}

func (m *Model) cmdMemory(string) tea.Cmd {
	ml, ok := m.b.(MemoryLister)
	if !ok {
		m.notice(unavailable("/memory"))
		return nil
	}
	files := ml.MemoryFiles()
	paths := make([]string, 0, len(files)+1)
	items := make([]string, 0, len(files)+1)
	for _, f := range files {
		paths = append(paths, f.Path)
		items = append(items, fmt.Sprintf("%-8s %s", f.Scope, f.Path))
	}
	if m.cwd != "" && !slices.ContainsFunc(paths, func(p string) bool {
		return filepath.Dir(p) == m.cwd && slices.Contains(projectMemoryNames, filepath.Base(p))
	}) {
		p := filepath.Join(m.cwd, "KEEL.md")
		paths = append(paths, p)
		items = append(items, fmt.Sprintf("%-8s %s (new)", "project", p))
	}
	title := "Memory files: enter opens one in your editor"
	if m.cfg.Editor == "" {
		title = "Memory files (set VISUAL or EDITOR to edit them from here)"
	}
	m.picker = newPicker(title, items, 0, func(i int) tea.Cmd { return m.editFile(paths[i]) })
	return nil
}

// editFile opens path in the user's editor, the UI suspended until it exits.
func (m *Model) editFile(path string) tea.Cmd {
	if m.cfg.Editor == "" {
		m.notice("set VISUAL or EDITOR to edit " + path + " from here")
		return nil
	}
	// The editor setting may carry arguments (code -w): the shell splits it, the path is
	// passed apart so no quoting of it is needed.
	cmd := hostexec.Command(context.Background(), "sh", "-c", m.cfg.Editor+` "$1"`, "sh", path)
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		if err != nil {
			return cmdDoneMsg{err: fmt.Errorf("editor %s: %w", strings.Fields(m.cfg.Editor)[0], err)}
		}
		return cmdDoneMsg{what: "edited " + path + "; memory files are read when a session starts, so it applies from the next one (keel --continue keeps this conversation)"}
	})
}
