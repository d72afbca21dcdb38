package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type listKind int

const (
	listTools listKind = 1 << iota
	listPrompts
	listResources
	listAll = listTools | listPrompts | listResources
)

// lists is what one listing found.
type lists struct {
	tools     []*mcpTool
	prompts   []*mcp.Prompt
	resources []*mcp.Resource
	warnings  []string
}

// list fetches the server's tools, prompts and resources (those its capabilities offer). Tools
// with an invalid input schema are skipped with a warning: one bad tool must not take the
// server's other tools down, nor reach the model.
func (c *conn) list(ctx context.Context, sess *mcp.ClientSession, kind listKind) (lists, error) {
	var l lists
	caps := &mcp.ServerCapabilities{}
	if init := sess.InitializeResult(); init != nil && init.Capabilities != nil {
		caps = init.Capabilities
	}
	if kind&listTools != 0 && caps.Tools != nil {
		seen := map[string]string{}
		for t, err := range sess.Tools(ctx, nil) {
			if err != nil {
				return l, fmt.Errorf("tools/list: %w", err)
			}
			mt, warn := c.newTool(t)
			if warn != "" {
				l.warnings = append(l.warnings, warn)
				c.logger.Warn("mcp tool skipped", "reason", warn)
				continue
			}
			if other, dup := seen[mt.name]; dup {
				w := fmt.Sprintf("tool %q collides with tool %q as %s after normalisation; skipped", t.Name, other, mt.name)
				l.warnings = append(l.warnings, w)
				c.logger.Warn("mcp tool skipped", "reason", w)
				continue
			}
			seen[mt.name] = t.Name
			l.tools = append(l.tools, mt)
		}
	}
	if kind&listPrompts != 0 && caps.Prompts != nil {
		for p, err := range sess.Prompts(ctx, nil) {
			if err != nil {
				return l, fmt.Errorf("prompts/list: %w", err)
			}
			l.prompts = append(l.prompts, p)
		}
	}
	if kind&listResources != 0 && caps.Resources != nil {
		for r, err := range sess.Resources(ctx, nil) {
			if err != nil {
				return l, fmt.Errorf("resources/list: %w", err)
			}
			l.resources = append(l.resources, r)
		}
	}
	return l, nil
}

// apply installs a listing; c.m.mu must be held.
func (c *conn) apply(l lists) {
	c.tools, c.prompts, c.resources, c.warnings = l.tools, l.prompts, l.resources, l.warnings
}

// newTool wraps an MCP tool, or says why it cannot be offered.
func (c *conn) newTool(t *mcp.Tool) (*mcpTool, string) {
	raw, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		return nil, fmt.Sprintf("tool %q has no usable input schema", t.Name)
	}
	if err := checkSchema(raw); err != nil {
		return nil, fmt.Sprintf("tool %q has an invalid input schema: %v", t.Name, err)
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, raw)
	mt := &mcpTool{
		c:       c,
		server:  c.cfg.Name,
		rawTool: t.Name,
		name:    QualifiedName(c.cfg.Name, t.Name),
		desc:    description(t),
		schema:  buf.Bytes(),
	}
	if t.Annotations != nil {
		mt.readOnly = t.Annotations.ReadOnlyHint
		mt.annotations = t.Annotations
	}
	return mt, ""
}

// maxDescription caps a tool description: it sits in every request prefix.
const maxDescription = 2048

func description(t *mcp.Tool) string {
	d := t.Description
	if r := []rune(d); len(r) > maxDescription {
		d = string(r[:maxDescription]) + "… [truncated]"
	}
	return d
}

// checkSchema requires an object schema that compiles.
func checkSchema(raw []byte) error {
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return fmt.Errorf("not a JSON object")
	}
	if ty, ok := top["type"]; !ok || ty != "object" {
		return fmt.Errorf(`type is %v, want "object"`, top["type"])
	}
	// The same library validates tool inputs (internal/tool), so a schema that passes here is
	// one the batch runner can check calls against.
	var doc jsonschema.Schema
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if _, err := doc.Resolve(nil); err != nil {
		return err
	}
	return checkTypes(top)
}

// jsonTypes are the type names a JSON schema may use.
var jsonTypes = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}
}}

// checkTypes rejects unknown "type" names anywhere in a schema, which Resolve lets through;
// a tool with one could never be called correctly.
func checkTypes(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "type" {
				names, _ := x.([]any)
				if s, ok := x.(string); ok {
					names = []any{s}
				}
				for _, n := range names {
					if s, _ := n.(string); !jsonTypes.Get()[s] {
						return fmt.Errorf("type %v is not a JSON schema type", n)
					}
				}
				continue
			}
			if err := checkTypes(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := checkTypes(x); err != nil {
				return err
			}
		}
	}
	return nil
}
