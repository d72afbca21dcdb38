package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validator checks tool inputs against tool schemas. Schemas are compiled on first use and
// kept; it is safe for concurrent use.
type Validator struct {
	// mu guards compiled.
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

// NewValidator returns an empty validator.
func NewValidator() *Validator { return &Validator{compiled: map[string]*jsonschema.Schema{}} }

// Validate reports why input does not satisfy t's schema, or nil. A schema that does not
// compile is reported as the tool's fault, not the model's.
func (v *Validator) Validate(t Tool, input json.RawMessage) error {
	s, err := v.schema(t)
	if err != nil {
		return fmt.Errorf("tool %s has an invalid input schema: %w", t.Name(), err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return fmt.Errorf("input is not valid JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("input does not match the schema of %s: %s", t.Name(), describe(err))
	}
	return nil
}

func (v *Validator) schema(t Tool) (*jsonschema.Schema, error) {
	raw := t.InputSchema()
	key := t.Name() + "\x00" + string(raw)
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.compiled[key]; ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	url := "keel:///tools/" + t.Name() + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	v.compiled[key] = s
	return s, nil
}

// describe flattens a validation error into one line the model can act on.
func describe(err error) string {
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			parts = append(parts, fmt.Sprintf("at %s: %s", loc, e.ErrorKind))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(parts, "; ")
}
