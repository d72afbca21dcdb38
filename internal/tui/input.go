package tui

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// inputState is the prompt history and the large pastes folded into placeholders.
type inputState struct {
	history []string
	idx     int    // position while browsing; len(history) when not browsing
	draft   string // what was typed before browsing started
	pastes  map[string]string
	nPaste  int
}

func newInputState() inputState { return inputState{pastes: map[string]string{}} }

// pasteFold is how large a paste must be to be folded into a placeholder.
const (
	pasteFoldChars = 800
	pasteFoldLines = 10
)

// paste returns what to insert for pasted text: the text itself, or a placeholder that
// expand replaces with it on submit, so a huge paste does not swamp the input box.
func (s *inputState) paste(text string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Count(text, "\n") + 1
	if len(text) < pasteFoldChars && lines < pasteFoldLines {
		return text
	}
	s.nPaste++
	ph := fmt.Sprintf("[Pasted text #%d +%d lines]", s.nPaste, lines)
	s.pastes[ph] = text
	return ph
}

// expand replaces paste placeholders with their text.
func (s *inputState) expand(v string) string {
	for ph, text := range s.pastes {
		v = strings.ReplaceAll(v, ph, text)
	}
	return v
}

func (s *inputState) remember(v string) {
	if v != "" && (len(s.history) == 0 || s.history[len(s.history)-1] != v) {
		s.history = append(s.history, v)
	}
	s.idx, s.draft = len(s.history), ""
	s.pastes = map[string]string{}
}

// prev and next step through history; ok is false at either end.
func (s *inputState) prev(cur string) (string, bool) {
	if s.idx == 0 || len(s.history) == 0 {
		return "", false
	}
	if s.idx >= len(s.history) {
		s.idx, s.draft = len(s.history), cur
	}
	s.idx--
	return s.history[s.idx], true
}

func (s *inputState) next() (string, bool) {
	if s.idx >= len(s.history) {
		return "", false
	}
	s.idx++
	if s.idx == len(s.history) {
		return s.draft, true
	}
	return s.history[s.idx], true
}

// completion is the open completion menu, if any.
type completion struct {
	kind  byte // '/' or '@'; 0 when closed
	items []complItem
	sel   int
	start int // byte offset in the input value of the word being completed
	files []string
}

type complItem struct{ value, desc string }

const complShown = 6

// refresh recomputes the menu for the input value v.
func (m *Model) refreshCompletion(v string) {
	c := &m.compl
	c.kind, c.items, c.sel = 0, nil, 0
	if strings.HasPrefix(v, "/") && !strings.ContainsAny(v, " \n") {
		for _, it := range m.commandItems() {
			if strings.HasPrefix(it.value, v) {
				c.items = append(c.items, it)
			}
		}
		c.kind, c.start = '/', 0
	} else if i := strings.LastIndexAny(v, " \n"); strings.HasPrefix(v[i+1:], "@") {
		word := strings.ToLower(v[i+2:])
		if c.files == nil {
			c.files = listFiles(m.cwd, 5000)
		}
		for _, f := range c.files {
			if strings.Contains(strings.ToLower(f), word) {
				c.items = append(c.items, complItem{value: "@" + f})
			}
		}
		sort.SliceStable(c.items, func(a, b int) bool { return len(c.items[a].value) < len(c.items[b].value) })
		c.kind, c.start = '@', i+1
	}
	if len(c.items) == 0 {
		c.kind = 0
	}
	if len(c.items) > 50 {
		c.items = c.items[:50]
	}
}

// accept puts the selected completion into the input.
func (m *Model) acceptCompletion() {
	c := &m.compl
	v := m.input.Value()
	nv := v[:c.start] + c.items[c.sel].value + " "
	m.input.SetValue(nv)
	m.input.MoveToEnd()
	c.kind, c.items = 0, nil
}

// listFiles lists up to limit files under dir, relative, skipping hidden and vendored trees.
func listFiles(dir string, limit int) []string {
	out := []string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, err := filepath.Rel(dir, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		if len(out) >= limit {
			return filepath.SkipAll
		}
		return nil
	})
	return out
}
