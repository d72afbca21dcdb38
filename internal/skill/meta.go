package skill

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/keel-dev/keel/internal/frontmatter"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/permission"
)

// parsed is one file's frontmatter as generic values, with where each key sits.
type parsed struct {
	values map[string]any
	// keyLine maps a top-level key to its 1-based line in the file.
	keyLine map[string]int
	// bodyLine is the 1-based line where the body starts.
	bodyLine int
	body     string
	problems []Problem
}

// splitFile cuts a skill or command file into frontmatter values and body.
//
// Two departures from strict YAML, both because real files need them and both reported as
// warnings: frontmatter preceded by blank lines is still frontmatter (people write it, and the
// block is unmistakable), and frontmatter that is not valid YAML is read as top-level
// "key: value" lines, so name and description survive an unquoted ": " in a description.
func splitFile(path string, data []byte) parsed {
	p := parsed{keyLine: map[string]int{}, bodyLine: 1}
	skipped := 0
	doc := frontmatter.Split(data)
	if doc.YAML == nil {
		trimmed := bytes.TrimLeft(data, " \t\r\n")
		if n := bytes.Count(data[:len(data)-len(trimmed)], []byte("\n")); n > 0 {
			if d := frontmatter.Split(trimmed); d.YAML != nil {
				doc, skipped = d, n
				p.problems = append(p.problems, Problem{Path: path, Line: n + 1,
					Msg: "frontmatter starts after blank lines; read as frontmatter"})
			}
		}
	}
	p.body = string(doc.Body)
	if doc.YAML == nil {
		return p
	}
	first := doc.YAMLLine + skipped
	yamlText := string(doc.YAML)
	p.bodyLine = first + strings.Count(yamlText, "\n") + 1
	for i, line := range strings.Split(yamlText, "\n") {
		if m := topKey.Get().FindStringSubmatch(line); m != nil {
			if _, dup := p.keyLine[m[1]]; !dup {
				p.keyLine[m[1]] = first + i
			}
		}
	}
	var values map[string]any
	if err := yaml.Unmarshal(doc.YAML, &values); err != nil {
		line := first
		if se, ok := err.(yaml.Error); ok && se.GetToken() != nil && se.GetToken().Position != nil {
			line = first + se.GetToken().Position.Line - 1
		}
		p.problems = append(p.problems, Problem{Path: path, Line: line,
			Msg: "frontmatter is not valid YAML (" + yamlMessage(err) + "); read its top-level key: value lines instead"})
		values = recoverLines(yamlText)
	}
	if values == nil {
		values = map[string]any{}
	}
	p.values = values
	return p
}

var topKey = lazy.Regexp{Expr: `^([A-Za-z_][A-Za-z0-9_-]*)\s*:(\s|$)`}

// recoverLines reads YAML that a parser rejected as a flat list of top-level keys. A value is
// the rest of its line plus the indented (or blank) lines after it; a value made only of "- "
// items is a list; "|" and ">" start a block kept as text; quotes around a one-line value
// are removed. Comment lines end a value.
func recoverLines(src string) map[string]any {
	out := map[string]any{}
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		m := topKey.Get().FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		key := m[1]
		head := strings.TrimSpace(lines[i][len(m[0]):])
		var cont []string
		for i+1 < len(lines) {
			next := lines[i+1]
			if strings.TrimSpace(next) != "" && next[0] != ' ' && next[0] != '\t' {
				break
			}
			cont = append(cont, next)
			i++
		}
		for len(cont) > 0 && strings.TrimSpace(cont[len(cont)-1]) == "" {
			cont = cont[:len(cont)-1]
		}
		if _, dup := out[key]; !dup {
			out[key] = recoverValue(head, cont)
		}
	}
	return out
}

func recoverValue(head string, cont []string) any {
	if head == "" && len(cont) > 0 {
		var items []any
		for _, c := range cont {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			item, ok := strings.CutPrefix(c, "- ")
			if !ok {
				items = nil
				break
			}
			items = append(items, unquote(strings.TrimSpace(item)))
		}
		if items != nil {
			return items
		}
	}
	if strings.HasPrefix(head, "|") || strings.HasPrefix(head, ">") {
		var b strings.Builder
		for _, c := range cont {
			b.WriteString(strings.TrimSpace(c))
			b.WriteByte('\n')
		}
		return b.String()
	}
	if len(cont) == 0 {
		return unquote(head)
	}
	// A plain scalar continued on indented lines: lines fold into spaces, blank lines into
	// newlines, as YAML would have read it.
	text := head
	for _, c := range cont {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			text += "\n"
		case strings.HasSuffix(text, "\n") || text == "":
			text += c
		default:
			text += " " + c
		}
	}
	return strings.TrimSpace(text)
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// yamlMessage is the parser's first line without its "[line:col]" prefix, which counts from
// the frontmatter, not the file.
func yamlMessage(err error) string {
	msg := firstLine(err.Error())
	if strings.HasPrefix(msg, "[") {
		if _, rest, ok := strings.Cut(msg, "] "); ok {
			return rest
		}
	}
	return msg
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// known lists the frontmatter keys keel reads; the rest go to Skill.Extra.
var known = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"name": true, "description": true, "allowed-tools": true, "model": true, "context": true,
		"agent": true, "argument-hint": true, "disable-model-invocation": true, "user-invocable": true,
	}
}}

// fields fills the frontmatter fields of s from p. A value of the wrong type or outside its
// valid set is an error naming the file, line and valid values; the entry is then dropped.
func (p *parsed) fields(path string, s *Skill) error {
	bad := func(key, format string, args ...any) error {
		return Problem{Path: path, Line: p.keyLine[key], Msg: key + ": " + fmt.Sprintf(format, args...), Skipped: true}
	}
	str := func(key string) (string, error) {
		switch v := p.values[key].(type) {
		case nil:
			return "", nil
		case string:
			return strings.TrimSpace(v), nil
		case []any:
			// argument-hint: [objective] is a YAML list; the author meant the brackets.
			parts := make([]string, len(v))
			for i, x := range v {
				parts[i] = fmt.Sprint(x)
			}
			return "[" + strings.Join(parts, ", ") + "]", nil
		case bool, int, uint64, int64, float64:
			return fmt.Sprint(v), nil
		default:
			return "", bad(key, "want a string, got %s", describeType(v))
		}
	}
	boolean := func(key string, def bool) (bool, error) {
		switch v := p.values[key].(type) {
		case nil:
			return def, nil
		case bool:
			return v, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true", "yes":
				return true, nil
			case "false", "no":
				return false, nil
			}
		}
		return false, bad(key, "%v is not one of true, false", p.values[key])
	}
	var err error
	if s.Name, err = str("name"); err != nil {
		return err
	}
	if s.Description, err = str("description"); err != nil {
		return err
	}
	s.hasDescription = s.Description != ""
	if s.Model, err = str("model"); err != nil {
		return err
	}
	if s.Agent, err = str("agent"); err != nil {
		return err
	}
	if s.ArgumentHint, err = str("argument-hint"); err != nil {
		return err
	}
	ctx, err := str("context")
	if err != nil {
		return err
	}
	switch ctx {
	case "", "inline":
		s.Context = ContextInline
	case "fork":
		s.Context = ContextFork
	default:
		return bad("context", "%q is not one of inline, fork", ctx)
	}
	if s.DisableModelInvocation, err = boolean("disable-model-invocation", false); err != nil {
		return err
	}
	if s.UserInvocable, err = boolean("user-invocable", true); err != nil {
		return err
	}
	if s.AllowedTools, err = toolList(p.values["allowed-tools"]); err != nil {
		return bad("allowed-tools", "%v", err)
	}
	for k, v := range p.values {
		if !known.Get()[k] {
			if s.Extra == nil {
				s.Extra = map[string]any{}
			}
			s.Extra[k] = v
		}
	}
	return nil
}

// toolList reads allowed-tools in every shape people write: a YAML list, a comma-separated
// string, or a space-separated string (the Agent Skills style). Parentheses group, so
// "Bash(gh pr view:*)" stays one rule.
func toolList(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return permission.SplitToolList(v), nil
	case []any:
		var out []string
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("entry %v is not a string; want tool names such as Read, Bash(git status:*)", x)
			}
			out = append(out, permission.SplitToolList(s)...)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("want a list or a comma-separated string, got %s", describeType(v))
	}
}

func describeType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}
