package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Spec describes a tool whose input decodes into In. [New] turns it into a Tool, so a tool
// is written as one function over a typed input.
type Spec[In any] struct {
	Name        string
	Description string
	// Schema is the JSON schema of In. It is compacted once, so its bytes are stable.
	Schema json.RawMessage
	// IsReadOnly and IsConcurrencySafe answer for a decoded input; nil means false.
	IsReadOnly        func(In) bool
	IsConcurrencySafe func(In) bool
	// Deferred marks a rarely needed tool (see [Deferrable]): its schema stays out of the
	// first request until the model looks it up.
	Deferred bool
	Run      func(ctx context.Context, env *Env, in In) Result
}

// New builds a Tool from spec. It panics on a schema that is not JSON: that is a programming
// error in the tool, found by the first test that builds it.
func New[In any](spec Spec[In]) Tool {
	var buf bytes.Buffer
	if err := json.Compact(&buf, spec.Schema); err != nil {
		panic(fmt.Sprintf("tool %s: schema is not JSON: %v", spec.Name, err))
	}
	spec.Schema = buf.Bytes()
	return &typed[In]{spec}
}

type typed[In any] struct{ spec Spec[In] }

func (t *typed[In]) Name() string                 { return t.spec.Name }
func (t *typed[In]) Description() string          { return t.spec.Description }
func (t *typed[In]) InputSchema() json.RawMessage { return t.spec.Schema }
func (t *typed[In]) DeferLoading() bool           { return t.spec.Deferred }

func (t *typed[In]) ReadOnly(input json.RawMessage) bool {
	return t.ask(t.spec.IsReadOnly, input)
}

func (t *typed[In]) ConcurrencySafe(input json.RawMessage) bool {
	return t.ask(t.spec.IsConcurrencySafe, input)
}

func (t *typed[In]) ask(f func(In) bool, input json.RawMessage) bool {
	if f == nil {
		return false
	}
	var in In
	if err := json.Unmarshal(input, &in); err != nil {
		return false
	}
	return f(in)
}

func (t *typed[In]) Call(ctx context.Context, env *Env, input json.RawMessage) Result {
	var in In
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("InputValidationError: %v", err)
	}
	return t.spec.Run(ctx, env, in)
}

// Always is a predicate for IsReadOnly / IsConcurrencySafe that says yes to every input.
func Always[In any](In) bool { return true }
