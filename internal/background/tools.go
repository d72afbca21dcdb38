package background

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/tool"
)

// Tool names, as in Claude Code.
const (
	OutputToolName = "TaskOutput"
	StopToolName   = "TaskStop"
)

// DefaultOutputTimeout is how long TaskOutput blocks when the input names no timeout.
const DefaultOutputTimeout = 30 * time.Second

type outputInput struct {
	TaskID  string `json:"task_id"`
	Block   *bool  `json:"block,omitempty"`
	Timeout int    `json:"timeout,omitempty"`
}

type stopInput struct {
	TaskID string `json:"task_id"`
	// ShellID is Claude Code's legacy name for task_id.
	ShellID string `json:"shell_id,omitempty"`
}

// OutputTool returns the TaskOutput tool: the status, progress and result of a background
// task, waiting for it to end unless block is false.
func OutputTool(r *Registry) tool.Tool {
	return tool.New(tool.Spec[outputInput]{
		Name: OutputToolName,
		Description: "Get the output of a background task (a background agent or command) by its task_id. " +
			"By default waits for the task to finish, up to timeout milliseconds (default 30000, max 600000); " +
			"with block: false it returns the current status and output at once. " +
			"Finished background agents also report by themselves, so you rarely need to wait on one.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"task_id":{"type":"string","description":"The task id"},` +
			`"block":{"type":"boolean","description":"Wait for the task to finish (default true)"},` +
			`"timeout":{"type":"number","minimum":0,"maximum":600000,"description":"Maximum wait in milliseconds"}},` +
			`"required":["task_id"],"additionalProperties":false}`),
		IsReadOnly:        tool.Always[outputInput],
		IsConcurrencySafe: tool.Always[outputInput],
		Deferred:          true,
		Run: func(ctx context.Context, env *tool.Env, in outputInput) tool.Result {
			info, ok := r.Get(in.TaskID)
			if !ok {
				return tool.Errorf("No task found with id %s", in.TaskID)
			}
			if in.Block == nil || *in.Block {
				d := DefaultOutputTimeout
				if in.Timeout > 0 {
					d = time.Duration(in.Timeout) * time.Millisecond
				}
				wctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				var err error
				info, err = r.Wait(wctx, in.TaskID)
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return tool.Errorf("waiting for task %s: %v", in.TaskID, err)
				}
			}
			return tool.Result{Content: tool.Text(describe(info)).Content, Output: info}
		},
	})
}

// StopTool returns the TaskStop tool, which kills a running background task.
func StopTool(r *Registry) tool.Tool {
	return tool.New(tool.Spec[stopInput]{
		Name:        StopToolName,
		Description: "Stop a running background task (a background agent or command) by its task_id.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"task_id":{"type":"string","description":"The id of the task to stop"},` +
			`"shell_id":{"type":"string","description":"Deprecated: use task_id"}},"additionalProperties":false}`),
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in stopInput) tool.Result {
			id := in.TaskID
			if id == "" {
				id = in.ShellID
			}
			info, ok := r.Get(id)
			if !ok {
				return tool.Errorf("No task found with id %s", id)
			}
			if info.Status.Terminal() {
				return tool.Errorf("Task %s is not running (status: %s)", id, info.Status)
			}
			info, err := r.Stop(ctx, id)
			if err != nil {
				return tool.Errorf("stop task %s: %v", id, err)
			}
			return tool.Result{Content: tool.Text(fmt.Sprintf("Stopped task %s (%s)", id, info.Description)).Content, Output: info}
		},
	})
}

func describe(info Info) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<task_id>%s</task_id>\n<task_type>%s</task_type>\n<status>%s</status>\n", info.ID, info.Kind, info.Status)
	if info.Output != "" {
		fmt.Fprintf(&b, "<output>\n%s</output>\n", info.Output)
	}
	if info.Result != "" {
		fmt.Fprintf(&b, "<result>\n%s\n</result>\n", info.Result)
	}
	if info.Error != "" {
		fmt.Fprintf(&b, "<error>%s</error>\n", info.Error)
	}
	return strings.TrimRight(b.String(), "\n")
}
