package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/keel-dev/keel/internal/render"
)

// itemKind is what a transcript entry shows.
type itemKind int

const (
	kindUser itemKind = iota
	kindAssistant
	kindThinking
	kindTool
	kindNotice
	kindError
	kindShell
)

// item is one transcript entry. Rendered text is cached per width; the streaming assistant
// message is re-rendered on the UI tick only (see Model.flush), never per delta.
type item struct {
	kind  itemKind
	text  string
	agent string // subagent name, empty for the main agent
	uuid  string // a prompt's transcript id, the point a rewind goes back to
	url   string // a notice's address, shown whole under it

	// tool calls
	id, name string
	input    json.RawMessage
	result   string
	progress string
	isErr    bool
	done     bool
	dur      time.Duration
	replayed bool // from a stored conversation: no duration is known

	streaming bool // assistant text still arriving
	cacheW    int
	cacheX    bool // expanded state the cache was rendered with
	cache     string
}

// markdown renders Markdown with glamour. The renderer is built on first use and again only
// when the width changes: building one loads styles and is the costly part.
type markdown struct {
	noColor bool
	// style is glamour's style name (dark, light); changing it builds the renderer anew.
	style string
	built string
	width int
	r     *glamour.TermRenderer
}

func (m *markdown) render(text string, width int) string {
	if m.style == "" {
		m.style = "dark"
	}
	if m.r == nil || m.width != width || m.built != m.style {
		// One style for both: with NO_COLOR the program's colour profile drops the colours
		// and keeps the layout (glamour's "notty" style would show raw Markdown).
		// Preserved newlines: a model writes one line per item often without list syntax, and
		// CommonMark would join them into one paragraph.
		r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(m.style), glamour.WithWordWrap(max(width-2, 20)), glamour.WithPreservedNewLines())
		if err != nil {
			return text
		}
		m.r, m.width, m.built = r, width, m.style
	}
	out, err := m.r.Render(text)
	if err != nil {
		return text
	}
	// glamour pads every line to the wrap width and frames the text with blank lines.
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && strings.TrimSpace(ansi.Strip(lines[0])) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(ansi.Strip(lines[len(lines)-1])) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// renderItem draws one item; cached unless the width or expanded state changed.
func (m *Model) renderItem(it *item) string {
	if it.cache != "" && it.cacheW == m.width && it.cacheX == m.expanded && !(it.kind == kindTool && !it.done) {
		return it.cache
	}
	it.cache, it.cacheW, it.cacheX = m.drawItem(it), m.width, m.expanded
	return it.cache
}

func (m *Model) drawItem(it *item) string {
	st, w := m.st, m.width
	switch it.kind {
	case kindUser:
		return wrapPrefixed(st.user.Render("❯ "), "  ", it.text, w)
	case kindAssistant:
		if strings.TrimSpace(it.text) == "" {
			return ""
		}
		return m.md.render(it.text, w)
	case kindThinking:
		if !m.expanded {
			return st.dim.Render("✻ Thinking… (ctrl+o to expand)")
		}
		return wrapPrefixed(st.dim.Render("✻ "), "  ", st.dim.Render(it.text), w)
	case kindTool:
		return m.drawTool(it)
	case kindNotice:
		s := wrapPrefixed(st.dim.Render("※ "), "  ", st.dim.Render(it.text), w)
		if it.url != "" {
			s += "\n" + m.drawURL(it.url)
		}
		return s
	case kindError:
		return wrapPrefixed(st.fail.Render("✗ "), "  ", st.fail.Render(it.text), w)
	case kindShell:
		return wrapPrefixed(st.accent.Render("! "), "  ", it.text, w)
	}
	return it.text
}

func (m *Model) drawTool(it *item) string {
	st := m.st
	head := st.tool.Render(it.name)
	if arg := keyArg(it.name, it.input, m.cwd); arg != "" {
		head += "(" + arg + ")"
	}
	if it.agent != "" {
		head = st.dim.Render("["+it.agent+"] ") + head
	}
	var status string
	switch {
	case !it.done && it.progress != "":
		status = st.dim.Render("… " + it.progress)
	case !it.done:
		status = st.dim.Render("…")
	case it.isErr && it.replayed:
		status = st.fail.Render("✗")
	case it.isErr:
		status = st.fail.Render("✗ " + fmtDur(it.dur))
	case it.replayed:
		status = st.ok.Render("✓")
	default:
		status = st.ok.Render("✓ " + fmtDur(it.dur))
	}
	line := ansi.Truncate("● "+head, max(m.width-lipgloss.Width(status)-1, 10), "…") + " " + status
	var b strings.Builder
	b.WriteString(line)
	limit := 6
	if m.expanded {
		limit = 200
	}
	d := diffLines(st, it.name, it.input)
	if len(d) > 0 && !it.isErr {
		writeBody(&b, d, limit, m.width, st)
	}
	if !m.expanded && it.done && !it.isErr && len(d) == 0 {
		writeBody(&b, collapsedResult(it.name, it.result), collapsedLines, m.width, st)
	}
	if m.expanded {
		if len(it.input) > 0 {
			writeBody(&b, strings.Split("input: "+string(it.input), "\n"), limit, m.width, st)
		}
		if it.result != "" {
			writeBody(&b, strings.Split(it.result, "\n"), limit, m.width, st)
		}
	} else if it.isErr && it.result != "" {
		writeBody(&b, []string{st.fail.Render(firstLineOf(it.result))}, 1, m.width, st)
	}
	return b.String()
}

// collapsedLines is how many lines of a tool's output show until ctrl+o expands it.
const collapsedLines = 3

// collapsedResult is what a finished call shows of its result while collapsed: a Read's line
// count (the content is the file), nothing for a todo list (shown on its own), else the
// output itself, of which writeBody keeps the first lines.
func collapsedResult(name, result string) []string {
	result = strings.TrimRight(result, "\n")
	switch {
	case result == "" || name == "TodoWrite":
		return nil
	case name == "Read":
		n := strings.Count(result, "\n") + 1
		if n == 1 {
			return []string{"Read 1 line"}
		}
		return []string{fmt.Sprintf("Read %d lines", n)}
	}
	return strings.Split(result, "\n")
}

// writeBody adds lines under a tool line, indented, cut to limit lines and the width.
func writeBody(b *strings.Builder, lines []string, limit, width int, st styles) {
	for i, l := range lines {
		if i == limit {
			b.WriteString("\n    " + st.dim.Render(fmt.Sprintf("… +%d lines (ctrl+o)", len(lines)-limit)))
			return
		}
		prefix := "    "
		if i == 0 {
			prefix = "  ⎿ "
		}
		b.WriteString("\n" + prefix + ansi.Truncate(l, max(width-4, 10), "…"))
	}
}

// diffLines shows what an Edit or Write changes, coloured.
func diffLines(st styles, name string, raw json.RawMessage) []string {
	var in struct {
		Old     string `json:"old_string"`
		New     string `json:"new_string"`
		Content string `json:"content"`
		Edits   []struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
		} `json:"edits"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return nil
	}
	var out []string
	pair := func(o, n string) {
		for _, l := range strings.Split(o, "\n") {
			out = append(out, st.del.Render("- "+l))
		}
		for _, l := range strings.Split(n, "\n") {
			out = append(out, st.add.Render("+ "+l))
		}
	}
	switch name {
	case "Edit":
		pair(in.Old, in.New)
	case "MultiEdit":
		for _, e := range in.Edits {
			pair(e.Old, e.New)
		}
	case "Write":
		for _, l := range strings.Split(strings.TrimSuffix(in.Content, "\n"), "\n") {
			out = append(out, st.add.Render("+ "+l))
		}
	}
	return out
}

// keyArg is the one argument that says what a tool call does.
func keyArg(name string, raw json.RawMessage, cwd string) string {
	return render.KeyArg(name, raw, cwd)
}

// wrapPrefixed word-wraps text to width with a first-line and a continuation prefix.
func wrapPrefixed(first, rest, text string, width int) string {
	w := max(width-lipgloss.Width(first), 10)
	lines := strings.Split(ansi.Wrap(text, w, " "), "\n")
	for i := range lines {
		if i == 0 {
			lines[i] = first + lines[i]
		} else {
			lines[i] = rest + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// fmtDur is a short human duration: 850ms, 1.2s, 2m03s.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// fmtTokens is a short token count: 950, 1.2k, 3.4M.
func fmtTokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}
