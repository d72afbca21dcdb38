package agentdef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/keel-dev/keel/internal/frontmatter"
)

// ParseMarkdown reads one agent file in keel's format, which is Claude Code's: YAML
// frontmatter with the fields, the body as the system prompt. The definition is nil when the
// file has an error; the diagnostics hold the errors and warnings either way. Source is left
// for the caller to set.
func ParseMarkdown(path string, data []byte) (*Definition, []Diagnostic) {
	return parseMarkdown(path, data, FormatKeel, keelFields.Get(), "")
}

// parseMarkdown reads a markdown agent file with the given key table. identity, when set, is
// the agent's name taken from the file path (opencode), and the frontmatter's name is not used.
func parseMarkdown(path string, data []byte, format Format, keys map[string]handler, identity string) (*Definition, []Diagnostic) {
	doc := frontmatter.Split(data)
	def := &Definition{Format: format, Path: path, Prompt: strings.TrimSpace(string(doc.Body))}
	d := newDecoder(path, keys, def)
	if doc.YAML == nil {
		d.warnf(1, "no frontmatter (a first line of ---); not an agent definition, skipped")
		return nil, d.diags
	}
	fields, serr := doc.Fields()
	if serr != nil {
		d.warnf(serr.Line, "frontmatter is not valid YAML (%s); read it line by line, recovering only simple keys", serr.Msg)
	}
	d.decode(fields)
	if identity != "" {
		def.Name = identity
	}
	d.requireIdentity(doc.YAMLLine-1, "frontmatter")
	if d.failed() {
		return nil, d.diags
	}
	return def, d.diags
}

// ParseJSON reads the value of the --agents flag: a JSON object mapping each agent's name to
// its fields (the frontmatter keys, plus "prompt" for the system prompt), as Claude Code
// accepts it. path names the origin in diagnostics. Each agent is checked on its own, so one
// bad agent does not drop the others; a JSON syntax error drops them all.
func ParseJSON(path string, data []byte) ([]*Definition, []Diagnostic) {
	dec := newJSONReader(data)
	var defs []*Definition
	var diags []Diagnostic
	bad := func(err error) ([]*Definition, []Diagnostic) {
		return nil, []Diagnostic{dec.syntaxError(path, err)}
	}
	if err := dec.expectDelim('{'); err != nil {
		return bad(err)
	}
	for dec.More() {
		line := dec.nextLine()
		name, err := dec.key()
		if err != nil {
			return bad(err)
		}
		fields, err := dec.object()
		if err != nil {
			return bad(err)
		}
		fields = append([]frontmatter.Field{{Key: "name", Value: name, Line: line}}, fields...)
		def, ds := decodeJSONAgent(path, line, fields)
		diags = append(diags, ds...)
		if def != nil {
			defs = append(defs, def)
		}
	}
	if err := dec.expectDelim('}'); err != nil {
		return bad(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad(errors.New("data after the closing brace"))
	}
	return defs, diags
}

// parseJSONFile reads an agent file written as one JSON object with "name", "description",
// "prompt" and the other frontmatter keys.
func parseJSONFile(path string, data []byte) (*Definition, []Diagnostic) {
	dec := newJSONReader(data)
	line := dec.nextLine()
	fields, err := dec.object()
	if err == nil {
		if _, eof := dec.Token(); eof != io.EOF {
			err = errors.New("data after the closing brace")
		}
	}
	if err != nil {
		return nil, []Diagnostic{dec.syntaxError(path, err)}
	}
	return decodeJSONAgent(path, line, fields)
}

func decodeJSONAgent(path string, line int, fields []frontmatter.Field) (*Definition, []Diagnostic) {
	def := &Definition{Format: FormatKeel, Path: path}
	keys := withFields(map[string]handler{
		"prompt": {"prompt", func(d *decoder, f frontmatter.Field) {
			if s, ok := d.str(f); ok {
				d.def.Prompt = s
			}
		}},
	})
	d := newDecoder(path, keys, def)
	d.decode(fields)
	where := "agent definition"
	if def.Name != "" {
		where = fmt.Sprintf("agent %q", def.Name)
	}
	d.requireIdentity(line, where)
	if d.failed() {
		return nil, d.diags
	}
	return def, d.diags
}

// jsonReader decodes JSON objects into fields that carry their line numbers, so that JSON
// errors point at a line like frontmatter errors do.
type jsonReader struct {
	*json.Decoder
	data []byte
}

func newJSONReader(data []byte) *jsonReader {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &jsonReader{Decoder: dec, data: data}
}

// syntaxError reports err at the line where decoding stopped: a syntax error's offset, the end
// of the input for a truncated document, else the decoder's position.
func (r *jsonReader) syntaxError(path string, err error) Diagnostic {
	off := int(r.InputOffset())
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		off = int(se.Offset)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		off = len(r.data)
		err = errors.New("unexpected end of input")
	}
	off = min(max(off, 0), len(r.data))
	line := 1 + bytes.Count(r.data[:off], []byte("\n"))
	return Diagnostic{Path: path, Line: line, Severity: SeverityError, Message: fmt.Sprintf("invalid JSON: %v", err)}
}

// nextLine is the line of the next token: the current offset after skipping white space and
// the separators a Decoder has not consumed yet.
func (r *jsonReader) nextLine() int {
	off := min(int(r.InputOffset()), len(r.data))
	for off < len(r.data) && strings.IndexByte(" \t\r\n,:", r.data[off]) >= 0 {
		off++
	}
	return 1 + bytes.Count(r.data[:off], []byte("\n"))
}

func (r *jsonReader) expectDelim(want json.Delim) error {
	tok, err := r.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", string(want), tok)
	}
	return nil
}

func (r *jsonReader) key() (string, error) {
	tok, err := r.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("expected a key, found %v", tok)
	}
	return s, nil
}

// object reads one object's keys in order; each value is decoded whole.
func (r *jsonReader) object() ([]frontmatter.Field, error) {
	if err := r.expectDelim('{'); err != nil {
		return nil, err
	}
	var fields []frontmatter.Field
	for r.More() {
		line := r.nextLine()
		k, err := r.key()
		if err != nil {
			return nil, err
		}
		var v any
		if err := r.Decode(&v); err != nil {
			return nil, err
		}
		fields = append(fields, frontmatter.Field{Key: k, Value: normalizeJSON(v), Line: line})
	}
	return fields, r.expectDelim('}')
}

// normalizeJSON turns json.Number into the integer or float types YAML decoding produces.
func normalizeJSON(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case []any:
		for i := range v {
			v[i] = normalizeJSON(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalizeJSON(v[k])
		}
	}
	return v
}
