package tool

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validator checks tool inputs against tool schemas. Schemas are resolved on first use and
// kept; it is safe for concurrent use.
type Validator struct {
	// mu guards resolved.
	mu       sync.Mutex
	resolved map[string]*jsonschema.Resolved
}

// NewValidator returns an empty validator.
func NewValidator() *Validator { return &Validator{resolved: map[string]*jsonschema.Resolved{}} }

// Validate reports why input does not satisfy t's schema, or nil. A schema that does not
// resolve is reported as the tool's fault, not the model's.
func (v *Validator) Validate(t Tool, input json.RawMessage) error {
	s, err := v.schema(t)
	if err != nil {
		return fmt.Errorf("tool %s has an invalid input schema: %w", t.Name(), err)
	}
	var inst any
	if err := json.Unmarshal(input, &inst); err != nil {
		return fmt.Errorf("input is not valid JSON: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("input does not match the schema of %s: %v", t.Name(), err)
	}
	return nil
}

func (v *Validator) schema(t Tool) (*jsonschema.Resolved, error) {
	raw := t.InputSchema()
	key := t.Name() + "\x00" + string(raw)
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.resolved[key]; ok {
		return s, nil
	}
	var doc jsonschema.Schema
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	s, err := doc.Resolve(nil)
	if err != nil {
		return nil, err
	}
	v.resolved[key] = s
	return s, nil
}
