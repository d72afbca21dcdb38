package tui

import (
	tea "charm.land/bubbletea/v2"
)

// vimState is the prompt's vim editing (/vim): typing happens in insert mode; esc switches to
// normal mode, where keys move and delete (h l w b 0 $ x D dd) or go back to typing (i a I A
// o); enter submits in either mode.
type vimState struct {
	on, normal bool
	// pending is the first key of a two-key command (d of dd).
	pending string
}

// editorMode names the prompt's editing mode for /config.
func (m *Model) editorMode() string {
	if m.vim.on {
		return "vim"
	}
	return "normal"
}

func (m *Model) cmdVim(string) tea.Cmd {
	m.vim = vimState{on: !m.vim.on}
	m.prefs.EditorMode = ""
	if m.vim.on {
		m.prefs.EditorMode = "vim"
	}
	m.savePrefs()
	if m.vim.on {
		m.notice("vim editing on: esc for normal mode, i to type again (/vim turns it off)")
	} else {
		m.notice("vim editing off")
	}
	return nil
}

// textareaKey is a key as the input's own key map reads it.
func textareaKey(code rune, mod tea.KeyMod) tea.KeyPressMsg {
	return tea.KeyPressMsg{Code: code, Mod: mod}
}

// vimKey handles a key in vim mode; handled is false for keys the input treats as usual
// (typing in insert mode, enter, the arrows).
func (m *Model) vimKey(msg tea.KeyPressMsg) (handled bool) {
	k := msg.String()
	if !m.vim.normal {
		if k == "esc" && !m.working && len(m.asks) == 0 && m.compl.kind == 0 {
			m.vim.normal = true
			m.input, _ = m.input.Update(textareaKey(tea.KeyLeft, 0))
			return true
		}
		return false
	}
	if m.vim.pending == "d" {
		m.vim.pending = ""
		if k == "d" {
			m.input.Reset()
			m.afterEdit()
		}
		return true
	}
	send := func(msg tea.KeyPressMsg) { m.input, _ = m.input.Update(msg) }
	switch k {
	case "enter", "up", "down", "esc", "left", "right":
		return false
	case "h":
		send(textareaKey(tea.KeyLeft, 0))
	case "l":
		send(textareaKey(tea.KeyRight, 0))
	case "w":
		send(textareaKey(tea.KeyRight, tea.ModAlt))
	case "b":
		send(textareaKey(tea.KeyLeft, tea.ModAlt))
	case "0", "^":
		m.input.CursorStart()
	case "$":
		// The cursor sits on the last character, as in vim, not after it.
		m.input.CursorEnd()
		send(textareaKey(tea.KeyLeft, 0))
	case "x":
		send(textareaKey(tea.KeyDelete, 0))
	case "D":
		send(textareaKey('k', tea.ModCtrl))
	case "d":
		m.vim.pending = "d"
	case "i":
		m.vim.normal = false
	case "a":
		m.vim.normal = false
		send(textareaKey(tea.KeyRight, 0))
	case "I":
		m.vim.normal = false
		m.input.CursorStart()
	case "A":
		m.vim.normal = false
		m.input.CursorEnd()
	case "o":
		m.vim.normal = false
		m.input.CursorEnd()
		m.input.InsertString("\n")
	case "j":
		send(textareaKey(tea.KeyDown, 0))
	case "k":
		send(textareaKey(tea.KeyUp, 0))
	}
	m.afterEdit()
	return true
}
