package frontmatter

import (
	"errors"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Field is one top-level key of a frontmatter block with its decoded value.
type Field struct {
	Key string
	// Value is the decoded YAML value: string, bool, int64, uint64, float64, []any,
	// map[string]any or nil. Fields read by [Lenient] hold only strings, []any of strings and
	// nil, so consumers must accept "true" and "12" where they expect a bool or a number.
	Value any
	// Line is the 1-based line of the key in the file.
	Line int
}

// SyntaxError says why a frontmatter block is not a valid YAML mapping.
type SyntaxError struct {
	// Line is the 1-based line in the file, or 0 when the parser gave none.
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Fields decodes the top-level keys of d's frontmatter in file order. Real files are often not
// valid YAML (an unquoted ": " inside a description is the usual cause), and dropping such a
// file would lose a working agent or skill; so when strict parsing fails, Fields falls back to
// [Lenient] and returns the fields it recovered together with a *SyntaxError that the caller
// reports as a warning. A document without frontmatter has no fields and no error.
func (d Document) Fields() ([]Field, *SyntaxError) {
	if len(d.YAML) == 0 {
		return nil, nil
	}
	fields, err := strict(d.YAML, d.YAMLLine)
	if err == nil {
		return fields, nil
	}
	return Lenient(d.YAML, d.YAMLLine), err
}

func strict(data []byte, firstLine int) ([]Field, *SyntaxError) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(err, firstLine)
	}
	var fields []Field
	for _, doc := range file.Docs {
		switch body := doc.Body.(type) {
		case nil:
			// An empty or comment-only block has no keys.
		case *ast.MappingNode:
			for _, kv := range body.Values {
				f, err := field(kv, firstLine)
				if err != nil {
					return nil, err
				}
				fields = append(fields, f)
			}
		case *ast.MappingValueNode:
			f, err := field(body, firstLine)
			if err != nil {
				return nil, err
			}
			fields = append(fields, f)
		default:
			return nil, &SyntaxError{Line: firstLine, Msg: fmt.Sprintf("frontmatter is a %s, not a mapping of keys", body.Type())}
		}
	}
	return fields, nil
}

func field(kv *ast.MappingValueNode, firstLine int) (Field, *SyntaxError) {
	line := firstLine + kv.Key.GetToken().Position.Line - 1
	var key any
	if err := yaml.NodeToValue(kv.Key, &key); err != nil {
		return Field{}, syntaxError(err, firstLine)
	}
	var value any
	if err := yaml.NodeToValue(kv.Value, &value); err != nil {
		return Field{}, syntaxError(err, firstLine)
	}
	return Field{Key: fmt.Sprint(key), Value: value, Line: line}, nil
}

func syntaxError(err error, firstLine int) *SyntaxError {
	var ye yaml.Error
	if errors.As(err, &ye) {
		line := 0
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			line = firstLine + tk.Position.Line - 1
		}
		return &SyntaxError{Line: line, Msg: ye.GetMessage()}
	}
	return &SyntaxError{Line: firstLine, Msg: err.Error()}
}
