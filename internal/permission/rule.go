package permission

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// Behavior is what a rule or decision does with a tool call.
type Behavior int

// The behaviors, ordered so a larger value is stricter: deny beats ask beats
// allow.
const (
	Allow Behavior = iota + 1
	Ask
	Deny
)

func (b Behavior) String() string {
	switch b {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Behavior(%d)", int(b))
}

// Source says where a rule came from, so a decision can name the file to
// edit and path patterns know what they are relative to.
type Source struct {
	// Name is the kind of source: "managed", "cli", "local", "project",
	// "user", "session", "agent"...
	Name string
	// Path is the settings file, empty for flags and answers.
	Path string
	// Dir is the directory /path patterns are anchored at (Claude Code:
	// relative to the settings file). For project and local settings this
	// is the project directory (the parent of .keel or .claude); empty means
	// the checker's first working directory. path and ./path patterns are
	// always anchored at the working directory, whatever the source.
	Dir string
	// Line and Col place the rule in its settings file, when known.
	Line, Col int
}

func (s Source) String() string {
	switch {
	case s.Path != "" && s.Line > 0:
		return fmt.Sprintf("%s settings %s:%d", s.Name, s.Path, s.Line)
	case s.Path != "":
		return s.Name + " settings " + s.Path
	}
	return s.Name
}

// Rule is one parsed allow, ask or deny entry such as Bash(go test:*).
// Rules are values; the compiled matcher is shared by copies.
type Rule struct {
	Behavior Behavior
	// Tool is the canonical tool name ("Agent" for "Task") or an MCP name,
	// possibly ending in "__*".
	Tool string
	// Specifier is the text inside the parentheses, empty for a whole-tool
	// rule.
	Specifier string
	Source    Source

	bash   *bashPattern
	path   *pathPattern
	domain string
}

// String renders the rule the way it is written in settings.
func (r Rule) String() string {
	if r.Specifier == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Specifier + ")"
}

// RuleError is a rule that could not be parsed: which rule, from where, and
// what is wrong with it.
type RuleError struct {
	Rule   string
	Source Source
	Reason string
}

// ValidRuleForms lists the shapes a permission rule may take, for error messages.
const ValidRuleForms = "Tool, Tool(specifier) or an MCP name, e.g. Bash, Bash(npm run test:*), Bash(git status), " +
	"Read(./src/**), Edit(//abs/path/**), WebFetch(domain:example.com), mcp__server, mcp__server__tool"

// Error names the file, line and column when known (path:line:col:, the form editors jump
// to), the rule, what is wrong, and the valid forms.
func (e *RuleError) Error() string {
	var where string
	switch s := e.Source; {
	case s.Path != "" && s.Line > 0:
		where = fmt.Sprintf("%s:%d:%d: %s settings: ", s.Path, s.Line, s.Col, s.Name)
	case s.String() != "":
		where = s.String() + ": "
	}
	return fmt.Sprintf("%spermission rule %q: %s (valid forms: %s)", where, e.Rule, e.Reason, ValidRuleForms)
}

var (
	toolNameRE = lazy.Regexp{Expr: `^[A-Za-z][A-Za-z0-9_-]*$`}
	mcpNameRE  = lazy.Regexp{Expr: `^mcp__[A-Za-z0-9_.-]+?(__[A-Za-z0-9_.*-]+)?$`}
)

// ParseRule parses one rule in Claude Code's syntax: Tool, Tool(specifier),
// mcp__server, mcp__server__* or mcp__server__tool.
func ParseRule(text string, b Behavior, src Source) (Rule, error) {
	fail := func(format string, args ...any) (Rule, error) {
		return Rule{}, &RuleError{Rule: text, Source: src, Reason: fmt.Sprintf(format, args...)}
	}
	s := strings.TrimSpace(text)
	if s == "" {
		return fail("empty rule")
	}
	r := Rule{Behavior: b, Source: src, Tool: s}
	if i := strings.IndexByte(s, '('); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return fail("missing closing parenthesis")
		}
		r.Tool, r.Specifier = s[:i], s[i+1:len(s)-1]
		if strings.TrimSpace(r.Specifier) == "" {
			return fail("empty specifier; write %s alone to match every call", r.Tool)
		}
	} else if strings.HasSuffix(s, ")") {
		return fail("closing parenthesis without an opening one")
	}
	r.Tool = canonicalTool(r.Tool)
	switch {
	case strings.HasPrefix(r.Tool, "mcp__"):
		if !mcpNameRE.Get().MatchString(r.Tool) || (strings.Contains(r.Tool, "*") && !strings.HasSuffix(r.Tool, "__*")) {
			return fail("MCP rules are mcp__server, mcp__server__* or mcp__server__tool")
		}
		if r.Specifier != "" {
			return fail("MCP rules take no specifier")
		}
		return r, nil
	case !toolNameRE.Get().MatchString(r.Tool):
		return fail("tool name %q must start with a letter and hold only letters, digits, '_' and '-'", r.Tool)
	}
	if r.Specifier == "" {
		return r, nil
	}
	var err error
	switch kinds.Get()[r.Tool] {
	case KindShell:
		if r.Specifier == "*" {
			r.Specifier = "" // Bash(*) is every command, like Bash.
			return r, nil
		}
		r.bash, err = parseBashPattern(r.Specifier)
	case KindRead, KindEdit:
		r.path, err = parsePathPattern(r.Specifier)
	case KindFetch:
		r.domain, err = parseDomain(r.Specifier)
	}
	if err != nil {
		return fail("%v", err)
	}
	return r, nil
}

func parseDomain(spec string) (string, error) {
	host, ok := strings.CutPrefix(spec, "domain:")
	if !ok || host == "" {
		return "", fmt.Errorf("WebFetch specifiers are domain:HOST (e.g. domain:example.com)")
	}
	host = strings.ToLower(host)
	if strings.ContainsAny(host, "/: ") || strings.Contains(strings.TrimPrefix(host, "*."), "*") {
		return "", fmt.Errorf("domain %q must be a host name, optionally starting with \"*.\"", host)
	}
	return host, nil
}

// ParseToolList parses a --allowedTools or --disallowedTools value: rules
// separated by commas or spaces, where separators inside parentheses belong
// to the specifier ("Bash(git log:*),Edit Read(src/**)").
func ParseToolList(list string, b Behavior, src Source) ([]Rule, error) {
	parts, unclosed := splitToolList(list)
	if unclosed != "" {
		return nil, &RuleError{Rule: unclosed, Source: src, Reason: "missing closing parenthesis"}
	}
	var rules []Rule
	for _, p := range parts {
		r, err := ParseRule(p, b, src)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// ParseRules parses a settings list (permissions.allow etc.), returning every
// rule that parsed and one error per rule that did not, so one bad entry
// does not disable the others.
func ParseRules(texts []string, b Behavior, src Source) ([]Rule, []error) {
	var (
		rules []Rule
		errs  []error
	)
	for _, t := range texts {
		r, err := ParseRule(t, b, src)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rules = append(rules, r)
	}
	return rules, errs
}

// toolMatches reports whether the rule's tool part covers the request's tool.
func (r Rule) toolMatches(tool string, k Kind) bool {
	tool = canonicalTool(tool)
	if r.Tool == tool {
		return true
	}
	if strings.HasPrefix(r.Tool, "mcp__") {
		prefix, ok := strings.CutSuffix(r.Tool, "*")
		if !ok {
			prefix = r.Tool + "__"
			if strings.Count(r.Tool, "__") > 1 {
				return false
			}
		}
		return strings.HasPrefix(tool, prefix)
	}
	// Edit rules cover every editing tool and Read rules every reading tool;
	// an Edit allow also lets the same paths be read (checked by the caller).
	switch r.Tool {
	case "Edit":
		return k == KindEdit || (k == KindRead && r.Behavior == Allow)
	case "Read":
		return k == KindRead
	}
	return false
}
