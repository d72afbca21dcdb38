package builtin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/tool"
)

// Todos is an agent's todo list, written by TodoWrite. The session owns it: onChange lets it
// emit an [event.Todos] and persist the list. It is safe for concurrent use.
type Todos struct {
	// mu guards items.
	mu       sync.Mutex
	items    []event.Todo
	onChange func([]event.Todo)
}

// NewTodos returns an empty list; onChange (may be nil) is called with a copy of the list after
// every TodoWrite, on the calling goroutine.
func NewTodos(onChange func([]event.Todo)) *Todos { return &Todos{onChange: onChange} }

// List returns a copy of the current list.
func (t *Todos) List() []event.Todo {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.items)
}

// Set replaces the list (a resumed session restores it this way) without calling onChange.
func (t *Todos) Set(items []event.Todo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.items = slices.Clone(items)
}

type todoInput struct {
	Todos []event.Todo `json:"todos"`
}

const todoSchema = `{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{
"content":{"type":"string","minLength":1},
"status":{"type":"string","enum":["pending","in_progress","completed"]},
"activeForm":{"type":"string","minLength":1}},
"required":["content","status","activeForm"],"additionalProperties":false}}},
"required":["todos"],"additionalProperties":false}`

var todoStatuses = []string{"pending", "in_progress", "completed"}

// TodoWrite returns the TodoWrite tool, which replaces the list in todos. It touches no files,
// so it counts as read-only.
func TodoWrite(todos *Todos) tool.Tool {
	return tool.New(tool.Spec[todoInput]{
		Name:        "TodoWrite",
		Description: description("TodoWrite"),
		Schema:      []byte(todoSchema),
		IsReadOnly:  tool.Always[todoInput],
		// Rarely a first call, and Claude Code defers its task-list tools too: the schema joins
		// a request once the model looks it up.
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in todoInput) tool.Result {
			counts := map[string]int{}
			for i, it := range in.Todos {
				if !slices.Contains(todoStatuses, it.Status) {
					return tool.Errorf("todos[%d].status is %q; it must be one of %s.", i, it.Status, strings.Join(todoStatuses, ", "))
				}
				if strings.TrimSpace(it.Content) == "" {
					return tool.Errorf("todos[%d].content is empty.", i)
				}
				counts[it.Status]++
			}
			items := slices.Clone(in.Todos)
			todos.mu.Lock()
			todos.items = items
			todos.mu.Unlock()
			if todos.onChange != nil {
				todos.onChange(slices.Clone(items))
			}
			return tool.Result{
				Content: tool.Text(fmt.Sprintf("Todo list updated: %d items (%d completed, %d in progress, %d pending). Keep it current as you work.",
					len(items), counts["completed"], counts["in_progress"], counts["pending"])).Content,
				Output: map[string]any{"newTodos": items},
			}
		},
	})
}
