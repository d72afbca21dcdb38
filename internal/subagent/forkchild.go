package subagent

import (
	"context"
	"errors"
)

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
		return out.Content, nil // the answer without the receipt's agent id and usage
	}
	return res.ResultText(), nil
}
