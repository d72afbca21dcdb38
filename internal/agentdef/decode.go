package agentdef

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/effort"
	"github.com/keel-dev/keel/internal/frontmatter"
	"github.com/keel-dev/keel/internal/permission"
)

// decoder turns the fields of one file into a Definition, collecting the file's diagnostics.
// It keeps going after an error, so one run reports every problem in the file.
type decoder struct {
	path    string
	def     *Definition
	diags   []Diagnostic
	keys    map[string]handler
	seen    map[string]int // canonical key → line of its first occurrence
	unknown []string
	unkLine int
}

// handler decodes one key. canonical names the Definition field it sets, so that two spellings
// of one field (tools and allowedTools) are noticed.
type handler struct {
	canonical string
	set       func(d *decoder, f frontmatter.Field)
}

func newDecoder(path string, keys map[string]handler, def *Definition) *decoder {
	return &decoder{path: path, def: def, keys: keys, seen: map[string]int{}}
}

func (d *decoder) errorf(line int, format string, args ...any) {
	d.diags = append(d.diags, Diagnostic{Path: d.path, Line: line, Severity: SeverityError, Message: fmt.Sprintf(format, args...)})
}

func (d *decoder) warnf(line int, format string, args ...any) {
	d.diags = append(d.diags, Diagnostic{Path: d.path, Line: line, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)})
}

func (d *decoder) failed() bool {
	return slices.ContainsFunc(d.diags, func(x Diagnostic) bool { return x.Severity == SeverityError })
}

// decode applies every field, then reports unknown keys in one warning.
func (d *decoder) decode(fields []frontmatter.Field) {
	for _, f := range fields {
		h, ok := d.keys[f.Key]
		if !ok {
			d.keep(f)
			continue
		}
		if first, dup := d.seen[h.canonical]; dup {
			d.warnf(f.Line, "%s repeats %q from line %d; the later value wins", f.Key, h.canonical, first)
		} else {
			d.seen[h.canonical] = f.Line
		}
		h.set(d, f)
	}
	if len(d.unknown) > 0 {
		d.warnf(d.unkLine, "unknown fields kept but not used: %s", strings.Join(d.unknown, ", "))
	}
}

// keep stores an unknown key in Extra, to be reported as unknown.
func (d *decoder) keep(f frontmatter.Field) {
	if len(d.unknown) == 0 {
		d.unkLine = f.Line
	}
	d.unknown = append(d.unknown, f.Key)
	d.extra(f)
}

// extra stores a key in Extra without reporting it.
func (d *decoder) extra(f frontmatter.Field) {
	if d.def.Extra == nil {
		d.def.Extra = map[string]any{}
	}
	d.def.Extra[f.Key] = f.Value
}

// unsupported keeps a key another harness understands and keel has no equivalent for.
func (d *decoder) unsupported(f frontmatter.Field, harness string) {
	d.warnf(f.Line, "%s field %q has no keel equivalent; ignored", harness, f.Key)
	d.extra(f)
}

// kind names a decoded value's type for error messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case bool:
		return "true/false"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	default:
		return "a number"
	}
}

// scalar returns a string, number or bool as text; ok is false for lists, maps and nil.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(v), true
	}
	return "", false
}

func (d *decoder) str(f frontmatter.Field) (string, bool) {
	s, ok := scalar(f.Value)
	if !ok {
		if f.Value == nil {
			return "", true
		}
		d.errorf(f.Line, "%s must be a string, got %s", f.Key, kind(f.Value))
	}
	return strings.TrimSpace(s), ok
}

// integer reads a whole number written as a number or, after the lenient parser, as text.
func integer(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int64:
		return int(v), v >= math.MinInt32 && v <= math.MaxInt32
	case uint64:
		return int(v), v <= math.MaxInt32
	case float64:
		return int(v), v == math.Trunc(v) && math.Abs(v) <= math.MaxInt32
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil && n <= math.MaxInt32 && n >= math.MinInt32
	}
	return 0, false
}

func boolean(v any) (bool, bool) {
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "on":
			return true, true
		case "false", "no", "off":
			return false, true
		}
	}
	return false, false
}

// quoted renders a bad value for a message: strings quoted, other values as written.
func quoted(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if s, ok := scalar(v); ok {
		return s
	}
	return kind(v)
}

// oneOf formats the valid values of an enumeration.
func oneOf[T ~string](values []T) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// enum checks a value against its valid set.
func enum[T ~string](d *decoder, f frontmatter.Field, valid []T) (T, bool) {
	s, ok := scalar(f.Value)
	if ok {
		if i := slices.Index(valid, T(strings.TrimSpace(s))); i >= 0 {
			return valid[i], true
		}
	}
	d.errorf(f.Line, "%s %s is not one of %s", f.Key, quoted(f.Value), oneOf(valid))
	return "", false
}

func (d *decoder) positive(f frontmatter.Field) (int, bool) {
	n, ok := integer(f.Value)
	if !ok || n <= 0 {
		d.errorf(f.Line, "%s must be a positive integer, got %s", f.Key, quoted(f.Value))
		return 0, false
	}
	return n, true
}

func (d *decoder) flag(f frontmatter.Field) (bool, bool) {
	b, ok := boolean(f.Value)
	if !ok {
		d.errorf(f.Line, "%s must be true or false, got %s", f.Key, quoted(f.Value))
	}
	return b, ok
}

// stringList reads a list of names written as a list or a comma- or space-separated string.
func (d *decoder) stringList(f frontmatter.Field) ([]string, bool) {
	switch v := f.Value.(type) {
	case nil:
		return nil, true
	case string:
		return permission.SplitToolList(v), true
	case []any:
		var out []string
		for i, item := range v {
			s, ok := scalar(item)
			if !ok {
				d.errorf(f.Line, "%s entry %d must be a name, got %s", f.Key, i+1, kind(item))
				return nil, false
			}
			out = append(out, permission.SplitToolList(s)...)
		}
		return dedupe(out), true
	}
	d.errorf(f.Line, "%s must be a list of names, got %s", f.Key, kind(f.Value))
	return nil, false
}

// effort reads a level name or a positive token budget.
func (d *decoder) effort(f frontmatter.Field) (Effort, bool) {
	if n, ok := integer(f.Value); ok && n > 0 {
		return Effort{Tokens: n}, true
	}
	if s, ok := f.Value.(string); ok {
		s = strings.ToLower(strings.TrimSpace(s))
		if slices.Contains(effort.Levels, s) {
			return Effort{Level: s}, true
		}
	}
	d.errorf(f.Line, "effort %s is not one of %s or a positive integer", quoted(f.Value), oneOf(effort.Levels))
	return Effort{}, false
}

// color accepts the named colours and hex colours; anything else is dropped with a warning,
// because a colour never changes what an agent does.
func (d *decoder) color(f frontmatter.Field) {
	s, ok := scalar(f.Value)
	s = strings.TrimSpace(s)
	if ok && (slices.Contains(Colors, strings.ToLower(s)) || isHexColor(s)) {
		if !isHexColor(s) {
			s = strings.ToLower(s)
		}
		d.def.Color = s
		return
	}
	d.warnf(f.Line, "color %s is not one of %s or a #RRGGBB hex colour; ignored", quoted(f.Value), strings.Join(Colors, ", "))
}

func isHexColor(s string) bool {
	if len(s) != 7 && len(s) != 4 || s[0] != '#' {
		return false
	}
	for _, c := range s[1:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// requireIdentity reports a missing name or description; where says which kind of file
// (frontmatter, the --agents JSON, a TOML role) lacked it.
func (d *decoder) requireIdentity(line int, where string) {
	if d.def.Name == "" {
		d.errorf(line, "missing required %q field in %s", "name", where)
	}
	if d.def.Description == "" {
		d.errorf(line, "missing required %q field in %s", "description", where)
	}
}
