package loop

import (
	"context"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// runBatch runs the tool calls of one reply and returns the user message of their results, in
// the model's order, and each call's result. Modifiers are applied after the whole batch, in
// the model's order, so parallel tools never race on the agent's state and the next request
// is reproducible.
func (a *Agent) runBatch(ctx context.Context, calls []tool.Call, invalid map[string]string) (message.Message, []tool.Result) {
	runner := &tool.Runner{Pool: a.pool(ctx), Fallback: a.Lookup, Validator: a.validator(), Gate: a.gate(), Observer: batchObserver{a}}
	state := a.State
	var runnable []tool.Call
	for _, c := range calls {
		if _, bad := invalid[c.ID]; !bad {
			runnable = append(runnable, c)
		}
	}
	ran := runner.Run(ctx, runnable, func(c tool.Call) *tool.Env {
		traceparent := ""
		if a.Traceparent != nil {
			traceparent = a.Traceparent(c.ID)
		}
		return &tool.Env{
			Traceparent: traceparent,
			Environ:     a.Environ,
			State:       state,
			ToolUseID:   c.ID,
			SessionID:   a.SessionID,
			AgentID:     a.Origin.AgentID,
			Files:       a.Files,
			Progress: func(msg string) {
				a.emit(event.ToolProgress{Origin: a.Origin, ID: c.ID, Name: c.Name, Message: msg})
			},
			Logger: a.Logger.With("tool", c.Name, "tool_use_id", c.ID),
		}
	})
	blocks := make([]message.Block, 0, len(calls))
	results := make([]tool.Result, 0, len(calls))
	next := 0
	for _, c := range calls {
		var res tool.Result
		if raw, bad := invalid[c.ID]; bad {
			res = tool.Errorf("InputValidationError: the input of %s was not a JSON object: %q", c.Name, truncate(raw, 200))
		} else {
			res = ran[next]
			next++
		}
		results = append(results, res)
		if res.Modifier != nil {
			res.Modifier(&a.State)
		}
		content := res.Content
		if len(content) == 0 {
			content = []message.Block{message.Text("(no output)")}
		}
		blocks = append(blocks, message.ToolResult(c.ID, content, res.IsError))
	}
	return message.User(blocks...), results
}

func (a *Agent) validator() *tool.Validator {
	if a.Validator == nil {
		a.Validator = tool.NewValidator()
	}
	return a.Validator
}

type batchObserver struct{ a *Agent }

func (o batchObserver) ToolStarted(c tool.Call) {
	o.a.emit(event.ToolStart{Origin: o.a.Origin, ID: c.ID, Name: c.Name, Input: c.Input})
}

func (o batchObserver) ToolEnded(c tool.Call, res tool.Result, dur time.Duration) {
	o.a.emit(event.ToolEnd{Origin: o.a.Origin, ID: c.ID, Name: c.Name, Result: res.Content, IsError: res.IsError, Duration: dur})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
