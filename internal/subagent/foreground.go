package subagent

import (
	"context"
	"sync"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// foreground is a child whose Agent call is waiting for it. Detaching it (Ctrl+B in the
// terminal) ends that wait: the call returns a receipt and the child goes on as a background
// task that reports through its parent's notification queue.
type foreground struct {
	detach chan struct{}
	once   sync.Once
}

func (f *foreground) signal() { f.once.Do(func() { close(f.detach) }) }

// Background detaches the foreground children the agent agentID ("" for the main thread) is
// waiting for, and returns how many there were. Each one's Agent call returns at once with an
// async_launched receipt; the child keeps running and its result arrives as a task
// notification, as if it had been started with run_in_background.
func (r *Runner) Background(agentID string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for f := range r.fg[agentID] {
		f.signal()
		n++
	}
	delete(r.fg, agentID)
	return n
}

// runForeground runs a child while its Agent call waits. The child's context is its own —
// cancelled with the call's while it is in the foreground, by TaskStop once detached — so a
// detached child survives the end of the turn that started it. announce runs once the child
// can be detached, so a UI that sees its task start may move it at once.
func (r *Runner) runForeground(ctx context.Context, c *child, task background.Spec, announce func()) (result, bool) {
	f := &foreground{detach: make(chan struct{})}
	parent := c.spec.parent.id
	r.mu.Lock()
	if r.fg[parent] == nil {
		r.fg[parent] = map[*foreground]struct{}{}
	}
	r.fg[parent][f] = struct{}{}
	r.mu.Unlock()
	announce()
	unregister := func() {
		r.mu.Lock()
		delete(r.fg[parent], f)
		if len(r.fg[parent]) == 0 {
			delete(r.fg, parent)
		}
		r.mu.Unlock()
	}

	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopFollowing := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	done := make(chan result, 1)
	go func() { done <- r.run(runCtx, c) }()
	select {
	case res := <-done:
		unregister()
		stopFollowing()
		cancel(nil)
		return res, false
	case <-f.detach:
	}
	unregister()
	if !stopFollowing() {
		// The call was cancelled before the detach: the child is being interrupted, and its
		// caller waits for the interruption as usual.
		res := <-done
		cancel(nil)
		return res, false
	}
	task.Announced = true
	_, err := r.cfg.Tasks.Start(task, func(tctx context.Context, t *background.Task) (string, error) {
		stop := context.AfterFunc(tctx, func() { cancel(context.Cause(tctx)) })
		defer stop()
		res := <-done
		cancel(nil)
		t.SetUsage(res.taskUsage())
		return res.text, res.err
	})
	if err != nil {
		// No registry to report to: wait for the child after all.
		res := <-done
		cancel(nil)
		return res, false
	}
	return result{}, true
}

// receipt is what an Agent call returns for a child that went to the background.
func receipt(c *child, detached bool) tool.Result {
	text := "Async agent launched successfully.\n"
	if detached {
		text = "The user moved this agent to the background; it is still running.\n"
	}
	text += trailerLine(c.n.id) + "\ntask_id: " + c.n.id +
		"\nThe agent is working in the background; you will be notified automatically when it completes. Do not poll it or duplicate its work."
	return tool.Result{Content: []message.Block{message.Text(text)},
		Output: Output{Status: "async_launched", AgentID: c.n.id, TaskID: c.n.id, AgentType: c.spec.def.Name, Prompt: c.spec.in.Prompt}}
}
