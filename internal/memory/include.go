package memory

import (
	"strings"
)

// includeRef is one @path mention found in plain text.
type includeRef struct {
	// Raw is the mention without the leading @, escapes removed, #fragment cut.
	Raw string
	// Line is the 1-based line of the mention.
	Line int
}

// findIncludes returns the @path mentions of a markdown text, in order, skipping fenced code
// blocks and inline code spans. A mention starts at the beginning of a line or after
// whitespace; it runs to the next unescaped whitespace ("\ " keeps a space). Whether a mention
// is an include is decided later by resolving it: "@handle" that names no file stays text.
func findIncludes(text string) []includeRef {
	var refs []includeRef
	lines := strings.Split(text, "\n")
	var fence string // the opening fence while inside a fenced block
	var para []string
	paraStart := 0
	flush := func() {
		if len(para) > 0 {
			refs = append(refs, scanParagraph(para, paraStart)...)
			para = nil
		}
	}
	for i, line := range lines {
		trimmed := strings.TrimRight(line, "\r")
		if fence != "" {
			if closesFence(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if f := openingFence(trimmed); f != "" {
			flush()
			fence = f
			continue
		}
		if strings.TrimSpace(trimmed) == "" {
			flush()
			continue
		}
		if len(para) == 0 {
			paraStart = i + 1
		}
		para = append(para, trimmed)
	}
	flush()
	return refs
}

// openingFence returns the fence run (``` or ~~~, three or more) a line opens with, after at
// most three spaces of indentation, or "".
func openingFence(line string) string {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 || len(s) < 3 {
		return ""
	}
	c := s[0]
	if c != '`' && c != '~' {
		return ""
	}
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	if n < 3 {
		return ""
	}
	// A backtick fence's info string may not contain backticks (CommonMark).
	if c == '`' && strings.ContainsRune(s[n:], '`') {
		return ""
	}
	return s[:n]
}

// closesFence reports whether line closes a block opened with fence: the same character, at
// least as long, nothing after it but spaces.
func closesFence(line, fence string) bool {
	s := strings.TrimLeft(line, " ")
	if len(line)-len(s) > 3 {
		return false
	}
	n := 0
	for n < len(s) && s[n] == fence[0] {
		n++
	}
	return n >= len(fence) && strings.TrimSpace(s[n:]) == ""
}

// scanParagraph finds mentions in the lines of one paragraph, outside inline code spans. A
// code span opens with a run of N backticks and closes at the next run of exactly N; an
// unclosed run is literal text. Spans stay within the paragraph, as in CommonMark.
func scanParagraph(lines []string, firstLine int) []includeRef {
	text := strings.Join(lines, "\n")
	// Mark bytes inside code spans.
	inCode := make([]bool, len(text))
	for i := 0; i < len(text); {
		if text[i] != '`' {
			i++
			continue
		}
		n := runLen(text, i, '`')
		closeAt := -1
		for j := i + n; j < len(text); {
			if text[j] != '`' {
				j++
				continue
			}
			m := runLen(text, j, '`')
			if m == n {
				closeAt = j
				break
			}
			j += m
		}
		if closeAt < 0 {
			i += n
			continue
		}
		for k := i; k < closeAt+n; k++ {
			inCode[k] = true
		}
		i = closeAt + n
	}

	var refs []includeRef
	line := firstLine
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			line++
			continue
		}
		if text[i] != '@' || inCode[i] {
			continue
		}
		if i > 0 && !isSpace(text[i-1]) {
			continue
		}
		var b strings.Builder
		j := i + 1
		for j < len(text) && !inCode[j] {
			c := text[j]
			if c == '\\' && j+1 < len(text) && text[j+1] == ' ' {
				b.WriteByte(' ')
				j += 2
				continue
			}
			if isSpace(c) {
				break
			}
			b.WriteByte(c)
			j++
		}
		raw := b.String()
		if k := strings.IndexByte(raw, '#'); k >= 0 {
			raw = raw[:k]
		}
		if raw != "" {
			refs = append(refs, includeRef{Raw: raw, Line: line})
		}
		i = j - 1
	}
	return refs
}

func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// candidatePaths returns what a mention may name, most literal first: the mention itself, then
// with trailing sentence punctuation removed ("see @notes.md." names notes.md).
func candidatePaths(raw string) []string {
	out := []string{raw}
	if t := strings.TrimRight(raw, ".,;:!?)]}'\""); t != raw && t != "" {
		out = append(out, t)
	}
	return out
}

// looksLikePath rejects mentions that cannot be a path at all (e.g. "@" alone, "@@", a lone
// "/"), so they are never looked up on disk.
func looksLikePath(raw string) bool {
	if raw == "" || raw == "/" || raw == "~" || raw == "~/" {
		return false
	}
	c := raw[0]
	switch {
	case strings.HasPrefix(raw, "./"), strings.HasPrefix(raw, "../"), strings.HasPrefix(raw, "~/"):
		return true
	case c == '/':
		return true
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		return true
	}
	return false
}
