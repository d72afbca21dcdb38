package keel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// ToolOptions are optional properties of a tool made with [NewTool].
type ToolOptions struct {
	// ReadOnly tools run in plan mode and without asking in the default mode.
	ReadOnly bool
	// ConcurrencySafe tools may run in parallel with other such tools.
	ConcurrencySafe bool
}

// NewTool makes a tool from a Go function. The input schema is inferred from In (use
// `json` and `jsonschema:"description"` struct tags); Out is encoded as JSON for the model,
// or passed as is when it is a string. An error from fn goes back to the model as an error
// result.
func NewTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...ToolOptions) (Tool, error) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, fmt.Errorf("infer input schema of tool %s: %w", name, err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("encode input schema of tool %s: %w", name, err)
	}
	var o ToolOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return funcTool[In, Out]{name: name, description: description, schema: raw, fn: fn, opts: o}, nil
}

// funcTool is a Tool made of a Go function.
type funcTool[In, Out any] struct {
	name, description string
	schema            json.RawMessage
	fn                func(ctx context.Context, in In) (Out, error)
	opts              ToolOptions
}

func (t funcTool[In, Out]) Name() string                         { return t.name }
func (t funcTool[In, Out]) Description() string                  { return t.description }
func (t funcTool[In, Out]) InputSchema() json.RawMessage         { return t.schema }
func (t funcTool[In, Out]) ReadOnly(json.RawMessage) bool        { return t.opts.ReadOnly }
func (t funcTool[In, Out]) ConcurrencySafe(json.RawMessage) bool { return t.opts.ConcurrencySafe }

func (t funcTool[In, Out]) Call(ctx context.Context, _ ToolEnv, input json.RawMessage) (ToolResult, error) {
	var in In
	if err := json.Unmarshal(input, &in); err != nil {
		return ToolResult{}, fmt.Errorf("decode input of %s: %w", t.name, err)
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return ToolResult{}, err
	}
	if s, ok := any(out).(string); ok {
		return TextResult(s), nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ToolResult{}, fmt.Errorf("encode result of %s: %w", t.name, err)
	}
	return TextResult(string(b)), nil
}
