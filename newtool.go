package keel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/keel-dev/keel/internal/tool"
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
	return tool.New(tool.Spec[In]{
		Name:              name,
		Description:       description,
		Schema:            raw,
		IsReadOnly:        func(In) bool { return o.ReadOnly },
		IsConcurrencySafe: func(In) bool { return o.ConcurrencySafe },
		Run: func(ctx context.Context, _ *tool.Env, in In) tool.Result {
			out, err := fn(ctx, in)
			if err != nil {
				return tool.Errorf("%v", err)
			}
			if s, ok := any(out).(string); ok {
				return tool.Text(s)
			}
			b, err := json.Marshal(out)
			if err != nil {
				return tool.Errorf("encode result of %s: %v", name, err)
			}
			return tool.Text(string(b))
		},
	}), nil
}
