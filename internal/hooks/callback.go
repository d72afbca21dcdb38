package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Callback is a hook group that the program driving keel answers itself (the Agent SDK's
// hook callbacks, registered in its initialize request) instead of a command. Each id is
// called with the event's JSON input and answers with the JSON a command hook would print,
// so decisions mean exactly what they mean for settings hooks.
type Callback struct {
	Event   string
	Matcher string
	IDs     []string
	// Timeout is in seconds; 0 means the runner's default.
	Timeout float64
}

// CallFunc asks the driving program to run callback id on input; toolUseID is the call a
// tool event is about, else empty. The answer is the callback's JSON output.
type CallFunc func(ctx context.Context, id string, input json.RawMessage, toolUseID string) (json.RawMessage, error)

// callback runs one callback hook within timeout. Its answer is read like the stdout of a
// command hook that exited 0; a failed call is a non-blocking error, as a crashed hook is.
func (r *Runner) callback(ctx context.Context, p planned, toolUseID string, stdin []byte, timeout time.Duration) Result {
	res := Result{Command: "callback " + p.cmd.Command, From: p.from, ExitCode: -1}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	out, err := r.cfg.Call(tctx, p.cmd.Command, stdin, toolUseID)
	res.Duration = time.Since(start)
	switch {
	case ctx.Err() != nil:
		res.Err = fmt.Errorf("hook cancelled: %w", context.Cause(ctx))
	case tctx.Err() != nil:
		res.TimedOut = true
		res.Err = fmt.Errorf("hook callback timed out after %v", timeout)
	case err != nil:
		res.Err = fmt.Errorf("hook callback %s: %w", p.cmd.Command, err)
	default:
		res.ExitCode = 0
		res.Stdout = string(out)
		var async struct {
			Async bool `json:"async"`
		}
		if json.Unmarshal(out, &async) == nil && async.Async {
			// The callback goes on in the background and has no say in this event.
			res.Stdout = ""
		}
	}
	return res
}
