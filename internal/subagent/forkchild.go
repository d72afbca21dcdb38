package subagent

import (
	"context"
	"errors"
	"fmt"

	"github.com/keel-dev/keel/internal/tool"
)

// fanOut is an Agent call with items: the main thread's only, through the session's fan-out
// (Config.FanOut), which runs each item's agent through this runner.
func (r *Runner) fanOut(ctx context.Context, env *tool.Env, in Input) tool.Result {
	switch {
	case r.cfg.FanOut == nil:
		return tool.Errorf("items (a fan-out) are not available in this session: it keeps no transcript for the fan-out's ledger")
	case env.AgentID != "":
		return tool.Errorf("only the main thread fans out; do the items yourself or one at a time")
	case in.Name != "" || in.RunInBackground || in.Isolation != "":
		return tool.Errorf("items cannot be combined with name, run_in_background or isolation")
	}
	return r.cfg.FanOut(ctx, in)
}

// RunForkChild runs prompt as a fork child of the main thread and returns its final text. A
// fork inherits the main thread's conversation and the exact bytes of its newest request, so
// its first request reads all of that from the prompt cache and only the directive is new:
// what the items of a fan-out want, whose siblings then share one long prefix.
func (r *Runner) RunForkChild(ctx context.Context, description, prompt string) (string, error) {
	main := r.node("")
	if main == nil {
		return "", errors.New("fork: the session has not started")
	}
	res := r.launch(ctx, spawn{parent: main, def: forkDefinition(), fork: true,
		in: Input{Description: description, Prompt: prompt}, foreground: true})
	if res.IsError {
		return "", errors.New(res.ResultText())
	}
	if out, ok := res.Output.(Output); ok {
		if out.Status == "interrupted" {
			// Cut off, not finished: a fan-out gives the item back instead of keeping it.
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("fork %s: interrupted: %w", description, err)
			}
			return "", fmt.Errorf("fork %s: interrupted", description)
		}
		return out.Content, nil // the answer without the receipt's agent id and usage
	}
	return res.ResultText(), nil
}
