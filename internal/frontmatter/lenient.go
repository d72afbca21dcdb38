package frontmatter

import (
	"strconv"
	"strings"
)

// Lenient reads a frontmatter block line by line, for blocks that are not valid YAML. It
// recognises top-level "key: value" lines (the value may hold further ": "), plain values
// continued on indented lines, quoted values (also across lines), "|" and ">" block scalars,
// one-line and multi-line flow lists, and block lists of "- item" lines. Values are strings or
// []any of strings; a key whose value is a nested mapping gets nil. Comment lines are skipped.
// firstLine is the file line of the first byte of data, as in [Document.YAMLLine].
func Lenient(data []byte, firstLine int) []Field {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var fields []Field
	for i := 0; i < len(lines); {
		line := lines[i]
		key, value, ok := topLevelKey(line)
		if !ok {
			i++
			continue
		}
		f := Field{Key: key, Line: firstLine + i}
		i++
		var cont []string // the lines that belong to this key
		for i < len(lines) && !startsKey(lines[i]) {
			cont = append(cont, lines[i])
			i++
		}
		f.Value = lenientValue(value, cont)
		fields = append(fields, f)
	}
	return fields
}

// topLevelKey reports whether line starts a top-level key: no indentation, not a comment or a
// list item, and a colon followed by a space or the end of the line.
func topLevelKey(line string) (key, value string, ok bool) {
	if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '-' {
		return "", "", false
	}
	for i := 0; i < len(line); i++ {
		if line[i] != ':' {
			continue
		}
		if i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t' || line[i+1] == '\r' {
			key = strings.TrimSpace(line[:i])
			key = unquote(key)
			if key == "" {
				return "", "", false
			}
			return key, strings.TrimSpace(line[i+1:]), true
		}
	}
	return "", "", false
}

func startsKey(line string) bool {
	_, _, ok := topLevelKey(line)
	return ok
}

func lenientValue(value string, cont []string) any {
	// Trailing blank and comment-only lines belong to nobody.
	for len(cont) > 0 {
		t := strings.TrimSpace(cont[len(cont)-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		cont = cont[:len(cont)-1]
	}
	switch {
	case value == "" && len(cont) == 0:
		return ""
	case value == "":
		return nested(cont)
	case value[0] == '|' || value[0] == '>':
		return blockScalar(value, cont)
	case value[0] == '[':
		return flowList(joinFlow(value, cont))
	case value[0] == '"' || value[0] == '\'':
		return unquote(joinQuoted(value, cont))
	}
	parts := []string{stripComment(value)}
	for _, c := range cont {
		if t := strings.TrimSpace(c); t != "" && !strings.HasPrefix(t, "#") {
			parts = append(parts, stripComment(t))
		}
	}
	return strings.Join(parts, " ")
}

// nested reads the indented lines under a key with no inline value: a list of "- item" lines
// becomes []any; anything else (a nested mapping) cannot be recovered line by line.
func nested(cont []string) any {
	var items []any
	for _, c := range cont {
		t := strings.TrimSpace(c)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		item, ok := strings.CutPrefix(t, "-")
		if !ok || (item != "" && item[0] != ' ' && item[0] != '\t') {
			if len(items) > 0 && (c[0] == ' ' || c[0] == '\t') {
				continue // a continuation or nested key of the previous item
			}
			return nil
		}
		items = append(items, unquote(stripComment(strings.TrimSpace(item))))
	}
	return items
}

func blockScalar(header string, cont []string) string {
	folded := header[0] == '>'
	chomp := byte(0)
	if strings.Contains(header, "-") {
		chomp = '-'
	} else if strings.Contains(header, "+") {
		chomp = '+'
	}
	indent := -1
	var out []string
	for _, c := range cont {
		if strings.TrimSpace(c) == "" {
			out = append(out, "")
			continue
		}
		n := len(c) - len(strings.TrimLeft(c, " \t"))
		if indent < 0 || n < indent {
			if indent < 0 {
				indent = n
			} else {
				n = indent // a less-indented line: keep its text whole
				c = strings.Repeat(" ", indent) + strings.TrimLeft(c, " \t")
			}
		}
		out = append(out, c[indent:])
	}
	var text string
	if folded {
		var b strings.Builder
		for i, l := range out {
			switch {
			case l == "":
				b.WriteByte('\n')
				continue
			case i == 0 || out[i-1] == "":
			default:
				b.WriteByte(' ')
			}
			b.WriteString(l)
		}
		text = b.String()
	} else {
		text = strings.Join(out, "\n")
	}
	switch chomp {
	case '-':
		return strings.TrimRight(text, "\n")
	case '+':
		return text + "\n"
	}
	return strings.TrimRight(text, "\n") + "\n"
}

func joinFlow(value string, cont []string) string {
	parts := []string{value}
	for _, c := range cont {
		if strings.Contains(parts[len(parts)-1], "]") {
			break
		}
		parts = append(parts, strings.TrimSpace(c))
	}
	return strings.Join(parts, " ")
}

func flowList(s string) []any {
	s = strings.TrimPrefix(s, "[")
	if i := strings.LastIndexByte(s, ']'); i >= 0 {
		s = s[:i]
	}
	items := []any{}
	for _, p := range splitOutsideQuotes(s) {
		if p = strings.TrimSpace(p); p != "" {
			items = append(items, unquote(p))
		}
	}
	return items
}

func splitOutsideQuotes(s string) []string {
	var parts []string
	var quote byte
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'':
			quote = c
		case c == ',':
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

func joinQuoted(value string, cont []string) string {
	parts := []string{value}
	for _, c := range cont {
		if closed(strings.Join(parts, " ")) {
			break
		}
		parts = append(parts, strings.TrimSpace(c))
	}
	return strings.Join(parts, " ")
}

// closed reports whether a quoted scalar starting at s[0] has its closing quote.
func closed(s string) bool {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '"' && s[i] == '\\':
			i++
		case q == '\'' && s[i] == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return true
		}
	}
	return false
}

// unquote removes YAML quotes from s when it is one complete quoted scalar (with an optional
// trailing comment); otherwise s is returned unchanged.
func unquote(s string) string {
	if len(s) < 2 || (s[0] != '"' && s[0] != '\'') {
		return s
	}
	q := s[0]
	end := -1
	for i := 1; i < len(s); i++ {
		if q == '"' && s[i] == '\\' {
			i++
			continue
		}
		if q == '\'' && s[i] == '\'' && i+1 < len(s) && s[i+1] == '\'' {
			i++
			continue
		}
		if s[i] == q {
			end = i
			break
		}
	}
	if end < 0 {
		return s
	}
	if rest := strings.TrimSpace(s[end+1:]); rest != "" && !strings.HasPrefix(rest, "#") {
		return s
	}
	inner := s[1:end]
	if q == '\'' {
		return strings.ReplaceAll(inner, "''", "'")
	}
	if u, err := strconv.Unquote(`"` + inner + `"`); err == nil {
		return u
	}
	return inner
}

// stripComment drops a " #" comment from a plain scalar, as YAML does.
func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return strings.TrimRight(s[:i], " \t")
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		return strings.TrimRight(s[:i], " \t")
	}
	return s
}
