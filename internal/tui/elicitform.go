package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/textinput"
	"github.com/google/jsonschema-go/jsonschema"
)

// fieldKind is how a form field is edited.
type fieldKind int

const (
	fieldText    fieldKind = iota // free text (string, with an optional format)
	fieldNumber                   // a number typed as text
	fieldInteger                  // an integer typed as text
	fieldBool                     // a checkbox
	fieldEnum                     // one of a list
	fieldMulti                    // any of a list (an array of enum strings)
)

// option is one choice of an enum field: the value sent and the label shown.
type option struct{ value, label string }

// formField is one property of an elicitation's requested schema.
type formField struct {
	name, title, desc string
	required          bool
	kind              fieldKind
	input             textinput.Model // text, number, integer
	checked           bool            // bool
	options           []option        // enum, multi
	choice            int             // enum: index into options, -1 for none yet
	picked            []bool          // multi: which options are chosen
	cursor            int             // multi: the option under the cursor
	format            string          // a string's format: email, uri, date or date-time
	schema            *jsonschema.Resolved
	err               string // why the current value is not accepted
}

// formSchema parses an elicitation's requested schema (a flat object of primitive
// properties, MCP's restricted subset) into fields, defaults prefilled (SEP-1034). The
// order is the schema's required list, then the other properties by name: the SDK hands
// the schema over as a map, so the server's own order is not known.
func formSchema(raw any, newInput func() textinput.Model) ([]*formField, *jsonschema.Resolved, error) {
	if raw == nil {
		return nil, nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("requested schema: %w", err)
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(b, &root); err != nil {
		return nil, nil, fmt.Errorf("requested schema: %w", err)
	}
	whole, err := root.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("requested schema: %w", err)
	}
	names := slices.Sorted(maps.Keys(root.Properties))
	order := slices.DeleteFunc(slices.Clone(root.Required), func(n string) bool { return root.Properties[n] == nil })
	for _, n := range names {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	var fields []*formField
	for _, name := range order {
		f, err := newField(name, root.Properties[name], slices.Contains(root.Required, name), newInput)
		if err != nil {
			return nil, nil, err
		}
		fields = append(fields, f)
	}
	return fields, whole, nil
}

func newField(name string, s *jsonschema.Schema, required bool, newInput func() textinput.Model) (*formField, error) {
	f := &formField{name: name, title: s.Title, desc: s.Description, required: required, choice: -1, format: s.Format}
	if f.title == "" {
		f.title = name
	}
	prop := *s
	prop.Title, prop.Description = "", ""
	rs, err := prop.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("property %q: %w", name, err)
	}
	f.schema = rs
	var def any
	if len(s.Default) > 0 {
		if err := json.Unmarshal(s.Default, &def); err != nil {
			return nil, fmt.Errorf("property %q: default: %w", name, err)
		}
	}
	switch {
	case s.Type == "array":
		f.kind = fieldMulti
		if s.Items != nil {
			f.options = enumOptions(s.Items.Enum, s.Items.Extra, s.Items.AnyOf)
		}
		f.picked = make([]bool, len(f.options))
		if list, ok := def.([]any); ok {
			for i, o := range f.options {
				f.picked[i] = slices.Contains(list, any(o.value))
			}
		}
	case len(s.Enum) > 0 || len(s.OneOf) > 0:
		f.kind = fieldEnum
		f.options = enumOptions(s.Enum, s.Extra, s.OneOf)
		if d, ok := def.(string); ok {
			f.choice = slices.IndexFunc(f.options, func(o option) bool { return o.value == d })
		}
	case s.Type == "boolean":
		f.kind = fieldBool
		f.checked, _ = def.(bool)
	default:
		f.kind = fieldText
		switch s.Type {
		case "number":
			f.kind = fieldNumber
		case "integer":
			f.kind = fieldInteger
		}
		f.input = newInput()
		f.input.Placeholder = placeholder(s)
		switch d := def.(type) {
		case string:
			f.input.SetValue(d)
		case float64:
			f.input.SetValue(strconv.FormatFloat(d, 'f', -1, 64))
		}
	}
	return f, nil
}

// enumOptions lists the choices of an enum: plain values (labelled by the legacy
// enumNames if given) or titled consts (oneOf / anyOf).
func enumOptions(enum []any, extra map[string]any, titled []*jsonschema.Schema) []option {
	var out []option
	names, _ := extra["enumNames"].([]any)
	for i, v := range enum {
		o := option{value: fmt.Sprint(v)}
		o.label = o.value
		if i < len(names) {
			if n, ok := names[i].(string); ok && n != "" {
				o.label = n
			}
		}
		out = append(out, o)
	}
	for _, t := range titled {
		if t == nil || t.Const == nil {
			continue
		}
		o := option{value: fmt.Sprint(*t.Const), label: t.Title}
		if o.label == "" {
			o.label = o.value
		}
		out = append(out, o)
	}
	return out
}

// placeholder hints at what a text field takes.
func placeholder(s *jsonschema.Schema) string {
	var hints []string
	switch s.Format {
	case "email":
		hints = append(hints, "an email address")
	case "uri":
		hints = append(hints, "https://…")
	case "date":
		hints = append(hints, "YYYY-MM-DD")
	case "date-time":
		hints = append(hints, "YYYY-MM-DDThh:mm:ssZ")
	}
	switch {
	case s.Minimum != nil && s.Maximum != nil:
		hints = append(hints, fmt.Sprintf("%g–%g", *s.Minimum, *s.Maximum))
	case s.Minimum != nil:
		hints = append(hints, fmt.Sprintf("at least %g", *s.Minimum))
	case s.Maximum != nil:
		hints = append(hints, fmt.Sprintf("at most %g", *s.Maximum))
	}
	if len(hints) == 0 {
		return ""
	}
	// In parentheses, so without colour a hint does not pass for a value.
	return "(" + strings.Join(hints, ", ") + ")"
}

// value is the field's answer; ok is false when it is left empty (then it is omitted).
func (f *formField) value() (v any, ok bool, err error) {
	switch f.kind {
	case fieldBool:
		return f.checked, true, nil
	case fieldEnum:
		if f.choice < 0 {
			return nil, false, nil
		}
		return f.options[f.choice].value, true, nil
	case fieldMulti:
		var list []any
		for i, o := range f.options {
			if f.picked[i] {
				list = append(list, o.value)
			}
		}
		if list == nil {
			return nil, false, nil
		}
		return list, true, nil
	}
	text := strings.TrimSpace(f.input.Value())
	if text == "" {
		return nil, false, nil
	}
	switch f.kind {
	case fieldInteger:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, false, errors.New("must be a whole number")
		}
		return float64(n), true, nil
	case fieldNumber:
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, false, errors.New("must be a number")
		}
		return n, true, nil
	}
	return f.input.Value(), true, nil
}

// check validates the field against its schema and records why it fails, if it does.
func (f *formField) check() bool {
	f.err = ""
	v, ok, err := f.value()
	switch {
	case err != nil:
		f.err = err.Error()
	case !ok && f.required:
		f.err = "required"
	case ok:
		f.err = f.problem(v)
	}
	return f.err == ""
}

// problem says in the user's words why v does not fit the field's schema: the limits MCP
// forms use, then anything else the schema validator finds.
func (f *formField) problem(v any) string {
	s := f.schema.Schema()
	switch v := v.(type) {
	case string:
		n := utf8.RuneCountInString(v)
		switch {
		case s.MinLength != nil && n < *s.MinLength:
			return fmt.Sprintf("at least %d characters", *s.MinLength)
		case s.MaxLength != nil && n > *s.MaxLength:
			return fmt.Sprintf("at most %d characters", *s.MaxLength)
		}
		if p := formatProblem(f.format, v); p != "" {
			return p
		}
	case float64:
		switch {
		case s.Minimum != nil && v < *s.Minimum:
			return fmt.Sprintf("at least %g", *s.Minimum)
		case s.Maximum != nil && v > *s.Maximum:
			return fmt.Sprintf("at most %g", *s.Maximum)
		}
	}
	if err := f.schema.Validate(v); err != nil {
		return schemaMessage(err)
	}
	return ""
}

// formatProblem checks the formats MCP allows in elicitation schemas, which the schema
// validator treats as annotations only.
func formatProblem(format, s string) string {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "must be an email address (name@example.com)"
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return "must be an absolute URI (https://…)"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "must be a date (YYYY-MM-DD)"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "must be a date and time (YYYY-MM-DDThh:mm:ssZ)"
		}
	}
	return ""
}

// schemaMessage shortens the validator's message ("validating root: minLength: …") to what
// the user needs.
func schemaMessage(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "validating ") {
		if j := strings.Index(msg, ": "); j >= 0 && j < i {
			msg = msg[j+2:]
		}
	}
	return msg
}
