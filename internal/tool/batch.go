package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Call is one tool_use of the model's turn.
type Call struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Gate wraps every call: permission checks and PreToolUse hooks before, PostToolUse hooks
// after. The session implements it; a nil Gate lets every call run.
type Gate interface {
	// Before decides whether the call runs. It may rewrite call.Input (a hook's updatedInput).
	// When it returns false the call does not run and the returned Result answers it.
	Before(ctx context.Context, env *Env, t Tool, call *Call) (Result, bool)
	// After sees the result and may amend it (a PostToolUse hook's additional context).
	After(ctx context.Context, env *Env, t Tool, call Call, res *Result)
}

// Observer is told when each call starts and ends, for events and the transcript.
type Observer interface {
	ToolStarted(call Call)
	ToolEnded(call Call, res Result, dur time.Duration)
}

// Runner runs the tool calls of one model turn.
type Runner struct {
	Pool *Pool
	// Fallback, if set, finds a tool the pool does not hold (see loop.Agent.Lookup).
	Fallback  func(name string) (Tool, bool)
	Validator *Validator
	Gate      Gate
	Observer  Observer
}

// The results of calls an interrupt or a crash kept from finishing. They keep the history
// valid (every tool_use has its tool_result) and tell the model whether the call may already
// have had its effect, so it does not blindly repeat a command that ran.
const (
	// InterruptedText follows whatever a call returned when the user interrupted it.
	InterruptedText = "Interrupted by user before the call finished; it may have partly run — check before repeating it."
	// NotRunText answers a call the interrupt came before.
	NotRunText = "Interrupted by user before the call started; it did not run."
	// CrashNotRunText answers a call keel stopped (crashed, killed) before starting.
	CrashNotRunText = "keel stopped before this call ran; it did not run."
)

// CrashMayHaveRunText answers a call that was started at started when keel stopped (crashed,
// was killed) before its result was recorded.
func CrashMayHaveRunText(started time.Time) string {
	return fmt.Sprintf("keel stopped before this call finished; it may have run (started at %s) — check before repeating it.",
		started.UTC().Format(time.RFC3339))
}

// Run runs calls as one batch and returns their results in the model's order. Consecutive
// concurrency-safe calls run in parallel; any other call runs alone, in order. newEnv builds
// the environment of each call.
func (r *Runner) Run(ctx context.Context, calls []Call, newEnv func(Call) *Env) []Result {
	results := make([]Result, len(calls))
	for start := 0; start < len(calls); {
		end := start + 1
		if r.safe(calls[start]) {
			for end < len(calls) && r.safe(calls[end]) {
				end++
			}
		}
		var wg sync.WaitGroup
		for i := start; i < end; i++ {
			wg.Go(func() { results[i] = r.one(ctx, calls[i], newEnv(calls[i])) })
		}
		wg.Wait()
		start = end
	}
	return results
}

func (r *Runner) lookup(name string) (Tool, bool) {
	if t, ok := r.Pool.Lookup(name); ok {
		return t, true
	}
	if r.Fallback != nil {
		return r.Fallback(name)
	}
	return nil, false
}

func (r *Runner) safe(c Call) bool {
	t, ok := r.lookup(c.Name)
	if !ok || !json.Valid(c.Input) {
		return true // answered with an error at once; harmless in parallel
	}
	return t.ConcurrencySafe(c.Input)
}

func (r *Runner) one(ctx context.Context, c Call, env *Env) (res Result) {
	if ctx.Err() != nil {
		return Errorf("%s", NotRunText)
	}
	started := time.Now()
	// The observer hears of a call once it may run — after the gate, so a UI shows it
	// running only once it was allowed — or, for a call refused before, just before its end.
	announced := false
	announce := func() {
		if r.Observer != nil && !announced {
			announced = true
			r.Observer.ToolStarted(c)
		}
	}
	if r.Observer != nil {
		defer func() {
			announce()
			r.Observer.ToolEnded(c, res, time.Since(started))
		}()
	}
	t, ok := r.lookup(c.Name)
	if !ok {
		return inputError(Errorf("No such tool: %s. Available tools: %s", c.Name, strings.Join(r.Pool.Names(), ", ")))
	}
	if err := r.Validator.Validate(t, c.Input); err != nil {
		return inputError(Errorf("InputValidationError: %v", err))
	}
	if r.Gate != nil {
		if res, run := r.Gate.Before(ctx, env, t, &c); !run {
			return res
		}
		if err := r.Validator.Validate(t, c.Input); err != nil {
			return inputError(Errorf("InputValidationError (after a hook rewrote the input): %v", err))
		}
	}
	announce()
	res = t.Call(ctx, env, c.Input)
	if ctx.Err() != nil {
		res.Content = append(res.Content, Errorf("%s", InterruptedText).Content...)
		res.IsError = true
	}
	if r.Gate != nil {
		r.Gate.After(ctx, env, t, c, &res)
	}
	return res
}

func inputError(r Result) Result {
	r.InputError = true
	return r
}
