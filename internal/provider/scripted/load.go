package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Valid keys per YAML mapping, in the order they are listed in error messages.
var (
	topKeys      = []string{"rules", "fallback", "cache"}
	ruleKeys     = []string{"name", "when", "times", "reply", "stop_reason", "fault"}
	fallbackKeys = []string{"reply", "stop_reason", "fault"}
	whenKeys     = []string{"user_text", "tool_result", "has_tool", "lacks_tool", "request", "system", "contains", "model"}
	blockKeys    = []string{"text", "thinking", "tool_use", "tool_search", "web_search"}
	searchKeys   = []string{"query", "found"}
	webKeys      = []string{"query", "results", "answer", "error"}
	resultKeys   = []string{"title", "url", "page_age", "text"}
	toolUseKeys  = []string{"name", "input"}
	faultKeys    = []string{"status", "retry_after", "retry_after_ms", "message", "drop_after", "delay"}
	cacheKeys    = []string{"min_tokens", "lookback"}
)

// LoadScenario reads a scenario file. Errors name the file and line.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario: %w", err)
	}
	return ParseScenario(path, data)
}

// ParseScenario parses scenario YAML; name is used in error messages ("name:line: …").
func ParseScenario(name string, data []byte) (*Scenario, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			return nil, fmt.Errorf("%s:%d: %s", name, ye.GetToken().Position.Line, ye.GetMessage())
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := &decoder{file: name}
	sc := &Scenario{}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return nil, fmt.Errorf("%s:1: empty scenario; valid keys: %s", name, joinValid(topKeys))
	}
	if len(f.Docs) > 1 {
		return nil, d.errorf(f.Docs[1], "a scenario is one YAML document")
	}
	err = d.mapping(f.Docs[0].Body, "scenario", topKeys, func(key string, v ast.Node) error {
		switch key {
		case "rules":
			return d.sequence(v, "rules", func(i int, n ast.Node) error {
				var r Rule
				if err := d.rule(n, &r, ruleKeys); err != nil {
					return err
				}
				sc.Rules = append(sc.Rules, r)
				return nil
			})
		case "fallback":
			sc.Fallback = &Rule{}
			return d.rule(v, sc.Fallback, fallbackKeys)
		default: // cache
			return d.mapping(v, "cache", cacheKeys, func(key string, v ast.Node) error {
				if key == "min_tokens" {
					return d.int(v, key, &sc.Cache.MinTokens)
				}
				return d.int(v, key, &sc.Cache.Lookback)
			})
		}
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// decoder walks the YAML AST so every error can name the line of the offending node and the
// valid keys or values.
type decoder struct{ file string }

func (d *decoder) errorf(n ast.Node, format string, args ...any) error {
	line := 0
	if n != nil && n.GetToken() != nil {
		line = n.GetToken().Position.Line
	}
	return fmt.Errorf("%s:%d: %s", d.file, line, fmt.Sprintf(format, args...))
}

// unwrap strips anchors and tags, which carry no meaning in a scenario.
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
}

func (d *decoder) mapping(n ast.Node, what string, valid []string, fn func(key string, v ast.Node) error) error {
	n = unwrap(n)
	m, ok := n.(*ast.MappingNode)
	if !ok {
		if mv, ok := n.(*ast.MappingValueNode); ok { // a one-key mapping parses as a bare value node
			m = &ast.MappingNode{Values: []*ast.MappingValueNode{mv}}
		} else {
			return d.errorf(n, "%s must be a mapping with keys %s", what, joinValid(valid))
		}
	}
	seen := map[string]bool{}
	for _, mv := range m.Values {
		key := keyString(mv.Key)
		if !slices.Contains(valid, key) {
			return d.errorf(mv.Key, "unknown key %q in %s; valid keys: %s", key, what, joinValid(valid))
		}
		if seen[key] {
			return d.errorf(mv.Key, "duplicate key %q in %s", key, what)
		}
		seen[key] = true
		if err := fn(key, mv.Value); err != nil {
			return err
		}
	}
	return nil
}

func keyString(k ast.MapKeyNode) string {
	if s, ok := unwrap(k).(*ast.StringNode); ok {
		return s.Value
	}
	return k.GetToken().Value
}

func (d *decoder) sequence(n ast.Node, what string, fn func(i int, n ast.Node) error) error {
	s, ok := unwrap(n).(*ast.SequenceNode)
	if !ok {
		return d.errorf(n, "%s must be a list", what)
	}
	for i, v := range s.Values {
		if err := fn(i, v); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) string(n ast.Node, what string, dst *string) error {
	switch v := unwrap(n).(type) {
	case *ast.StringNode:
		*dst = v.Value
	case *ast.LiteralNode:
		*dst = v.Value.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		*dst = v.GetToken().Value
	default:
		return d.errorf(n, "%s must be a string", what)
	}
	return nil
}

func (d *decoder) int(n ast.Node, what string, dst *int) error {
	v, ok := unwrap(n).(*ast.IntegerNode)
	if !ok {
		return d.errorf(n, "%s must be an integer", what)
	}
	i, err := strconv.Atoi(fmt.Sprint(v.Value))
	if err != nil || i < 0 {
		return d.errorf(n, "%s must be a non-negative integer", what)
	}
	*dst = i
	return nil
}

func (d *decoder) rule(n ast.Node, r *Rule, valid []string) error {
	err := d.mapping(n, "rule", valid, func(key string, v ast.Node) error {
		switch key {
		case "name":
			return d.string(v, key, &r.Name)
		case "when":
			return d.when(v, &r.When)
		case "times":
			return d.int(v, key, &r.Times)
		case "reply":
			return d.sequence(v, "reply", func(i int, n ast.Node) error {
				b, err := d.block(n)
				r.Reply = append(r.Reply, b)
				return err
			})
		case "stop_reason":
			if err := d.string(v, key, &r.StopReason); err != nil {
				return err
			}
			if !slices.Contains(validStopReasons, r.StopReason) {
				return d.errorf(v, "stop_reason %q is not one of %s", r.StopReason, joinValid(validStopReasons))
			}
			return nil
		default: // fault
			r.Fault = &Fault{}
			return d.fault(v, r.Fault)
		}
	})
	if err != nil {
		return err
	}
	if len(r.Reply) == 0 && (r.Fault == nil || r.Fault.Status == 0) && slices.Contains(valid, "when") {
		return d.errorf(n, "rule needs a reply (a list of text, thinking or tool_use blocks) or a fault with a status")
	}
	return nil
}

func (d *decoder) when(n ast.Node, m *Match) error {
	return d.mapping(n, "when", whenKeys, func(key string, v ast.Node) error {
		switch key {
		case "user_text":
			return d.string(v, key, &m.UserText)
		case "tool_result":
			return d.string(v, key, &m.ToolResult)
		case "has_tool":
			return d.string(v, key, &m.HasTool)
		case "lacks_tool":
			return d.string(v, key, &m.LacksTool)
		case "request":
			if err := d.int(v, key, &m.Request); err != nil {
				return err
			}
			if m.Request == 0 {
				return d.errorf(v, "request counts from 1")
			}
			return nil
		case "system":
			return d.string(v, key, &m.System)
		case "contains":
			return d.string(v, key, &m.Contains)
		default:
			return d.string(v, key, &m.Model)
		}
	})
}

func (d *decoder) block(n ast.Node) (Block, error) {
	var b Block
	count := 0
	err := d.mapping(n, "reply block", blockKeys, func(key string, v ast.Node) error {
		count++
		if count > 1 {
			return d.errorf(v, "a reply block has exactly one of %s", joinValid(blockKeys))
		}
		switch key {
		case "text":
			b.Kind = KindText
			return d.string(v, key, &b.Text)
		case "thinking":
			b.Kind = KindThinking
			return d.string(v, key, &b.Text)
		case "web_search":
			b.Kind = KindWebSearch
			return d.webSearch(v, &b)
		case "tool_search":
			b.Kind = KindToolSearch
			return d.mapping(v, "tool_search", searchKeys, func(key string, v ast.Node) error {
				if key == "query" {
					return d.string(v, key, &b.Text)
				}
				return d.sequence(v, key, func(_ int, n ast.Node) error {
					var name string
					err := d.string(n, key, &name)
					b.Found = append(b.Found, name)
					return err
				})
			})
		default:
			b.Kind = KindToolUse
			return d.mapping(v, "tool_use", toolUseKeys, func(key string, v ast.Node) error {
				if key == "name" {
					return d.string(v, key, &b.Name)
				}
				if _, ok := unwrap(v).(*ast.MappingNode); !ok {
					if _, ok := unwrap(v).(*ast.MappingValueNode); !ok {
						return d.errorf(v, "tool_use input must be a mapping")
					}
				}
				raw, err := d.json(v)
				b.Input = raw
				return err
			})
		}
	})
	if err == nil && b.Kind == KindToolUse && b.Name == "" {
		err = d.errorf(n, "tool_use needs a name")
	}
	if err == nil && b.Kind == KindWebSearch && b.Text == "" {
		err = d.errorf(n, "web_search needs a query")
	}
	if err == nil && b.Kind == KindToolSearch && len(b.Found) == 0 {
		err = d.errorf(n, "tool_search needs found: a list of deferred tool names")
	}
	return b, err
}

// webSearch reads {query, results: [{title, url, page_age, text}], answer, error}.
func (d *decoder) webSearch(n ast.Node, b *Block) error {
	return d.mapping(n, "web_search", webKeys, func(key string, v ast.Node) error {
		switch key {
		case "query":
			return d.string(v, key, &b.Text)
		case "answer":
			return d.string(v, key, &b.Answer)
		case "error":
			return d.string(v, key, &b.SearchError)
		}
		return d.sequence(v, key, func(_ int, n ast.Node) error {
			var r WebResult
			err := d.mapping(n, "web_search result", resultKeys, func(key string, v ast.Node) error {
				switch key {
				case "title":
					return d.string(v, key, &r.Title)
				case "url":
					return d.string(v, key, &r.URL)
				case "page_age":
					return d.string(v, key, &r.PageAge)
				}
				return d.string(v, key, &r.Text)
			})
			if err == nil && r.URL == "" {
				err = d.errorf(n, "a web_search result needs a url")
			}
			b.Results = append(b.Results, r)
			return err
		})
	})
}

func (d *decoder) fault(n ast.Node, f *Fault) error {
	return d.mapping(n, "fault", faultKeys, func(key string, v ast.Node) error {
		switch key {
		case "status":
			if err := d.int(v, key, &f.Status); err != nil {
				return err
			}
			if f.Status < 400 || f.Status > 599 {
				return d.errorf(v, "fault status %d is not an HTTP error status (400-599; e.g. 429, 500, 529)", f.Status)
			}
			return nil
		case "retry_after":
			return d.int(v, key, &f.RetryAfter)
		case "retry_after_ms":
			return d.int(v, key, &f.RetryAfterMS)
		case "message":
			return d.string(v, key, &f.Message)
		case "drop_after":
			if err := d.int(v, key, &f.DropAfter); err != nil {
				return err
			}
			if f.DropAfter == 0 {
				return d.errorf(v, "drop_after counts stream events and must be at least 1")
			}
			return nil
		default: // delay
			var s string
			if err := d.string(v, key, &s); err != nil {
				return err
			}
			dur, err := time.ParseDuration(s)
			if err != nil || dur < 0 {
				return d.errorf(v, "delay %q is not a duration like 50ms or 1s", s)
			}
			f.Delay = dur
			return nil
		}
	})
}

// json converts a YAML node to JSON, keeping mapping keys in file order so tool inputs are
// sent as written.
func (d *decoder) json(n ast.Node) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := d.writeJSON(&buf, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (d *decoder) writeJSON(buf *bytes.Buffer, n ast.Node) error {
	switch v := unwrap(n).(type) {
	case *ast.MappingNode:
		buf.WriteByte('{')
		for i, mv := range v.Values {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(keyString(mv.Key))
			buf.Write(k)
			buf.WriteByte(':')
			if err := d.writeJSON(buf, mv.Value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case *ast.MappingValueNode:
		return d.writeJSON(buf, &ast.MappingNode{Values: []*ast.MappingValueNode{v}})
	case *ast.SequenceNode:
		buf.WriteByte('[')
		for i, e := range v.Values {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := d.writeJSON(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case *ast.NullNode:
		buf.WriteString("null")
	case *ast.LiteralNode:
		b, _ := json.Marshal(v.Value.Value)
		buf.Write(b)
	case *ast.AliasNode:
		return d.errorf(n, "YAML aliases are not supported in a scenario")
	case ast.ScalarNode:
		b, err := json.Marshal(v.GetValue())
		if err != nil {
			return d.errorf(n, "value cannot be expressed in JSON: %v", err)
		}
		buf.Write(b)
	default:
		return d.errorf(n, "unsupported YAML value %s", n.Type())
	}
	return nil
}
