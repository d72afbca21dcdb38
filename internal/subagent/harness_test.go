package subagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
)

// world is a parent agent (the "main thread") wired to a Runner, against a scripted model.
type world struct {
	t       *testing.T
	srv     *scripted.Server
	prov    provider.Provider
	runner  *Runner
	tasks   *background.Registry
	main    *loop.Agent
	checker *permission.Checker
	dir     string
	session string

	// mu guards events.
	mu     sync.Mutex
	events []event.Event
}

type worldOptions struct {
	defs     []*agentdef.Definition
	forks    bool
	maxDepth int
	mode     permission.Mode
	rules    []string
	asker    permission.Asker
	system   string
	session  string // transcript path; "" → in t.TempDir
	tasksDir string
	dir      string // working directory; "" → a temporary one
	tools    []tool.Tool
	cfg      func(*Config)
}

func newWorld(t *testing.T, sc *scripted.Scenario, o worldOptions) *world {
	t.Helper()
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return newWorldOn(t, srv, o)
}

func newWorldOn(t *testing.T, srv *scripted.Server, o worldOptions) *world {
	t.Helper()
	prov, model, err := connect.Open(connect.Config{BaseURL: srv.URL(), APIKey: "test", Model: "claude-sonnet-4-5",
		Retry: &provider.RetryPolicy{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	if o.dir != "" {
		dir = o.dir
	}
	w := &world{t: t, srv: srv, prov: prov, dir: dir}
	w.session = o.session
	if w.session == "" {
		w.session = filepath.Join(dir, "session.jsonl")
	}
	if o.tasksDir == "" {
		o.tasksDir = filepath.Join(filepath.Dir(w.session), "tasks")
	}
	w.tasks = background.New(background.Options{Dir: o.tasksDir, Emit: w.emit})
	t.Cleanup(w.tasks.Close)
	rules, _ := permission.ParseRules(o.rules, permission.Allow, permission.Source{Name: "test"})
	asker := o.asker
	if asker == nil {
		asker = permission.Headless{}
	}
	w.checker = permission.New(permission.Config{Policy: permission.Policy{Mode: o.mode, Rules: rules, Dirs: []string{dir}}, Asker: asker})
	defs := append(agentdef.Builtins(), o.defs...)
	cfg := Config{Defs: agentdef.NewSet(defs), Provider: prov, Tasks: w.tasks, SessionID: "sess-1", SessionPath: w.session,
		Forks: o.forks, MaxDepth: o.maxDepth, Emit: w.emit}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	w.runner = New(cfg)
	system := o.system
	if system == "" {
		system = "You are the parent agent of a test."
	}
	sys := loop.System{Blocks: []provider.SystemBlock{{Text: system}}, Names: []string{"static"}}
	jobs := builtinJobs(t)
	pool := tool.Assemble(append(builtin.Tools(builtin.Options{Jobs: jobs}), w.runner.Tool(), w.runner.SendMessageTool(),
		background.OutputTool(w.tasks), background.StopTool(w.tasks)), o.tools)
	files := tool.NewFileState()
	prepare := func(r *provider.Request) { provider.PlaceBreakpoints(r, provider.TTLPolicy{}) }
	mainQueue, err := w.tasks.Queue(background.MainOwner)
	if err != nil {
		t.Fatal(err)
	}
	w.main = &loop.Agent{
		Provider: prov, Model: model, System: func(context.Context) loop.System { return sys },
		Pool: func(context.Context) *tool.Pool { return pool }, Gate: checkGate{w.checker}, Files: files,
		State: tool.State{Cwd: dir}, SessionID: "sess-1", Source: "main", Prepare: prepare,
		Observers: []loop.Observer{mainQueue}, AfterTurn: w.runner.AfterTurn(""), Sink: ackSink{w: w, q: mainQueue},
	}
	w.runner.SetMain(Parent{Model: model, System: w.main.System, Pool: w.main.Pool, Checker: w.checker, Files: files,
		State: func() tool.State { return w.main.State }, Prepare: prepare, Source: "main"})
	return w
}

func builtinJobs(t *testing.T) *shell.Jobs {
	j := shell.NewJobs()
	t.Cleanup(j.Close)
	return j
}

func (w *world) emit(e event.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, e)
}

func (w *world) run(prompt string, history ...message.Message) *loop.Outcome {
	w.t.Helper()
	out, err := w.main.Run(w.t.Context(), append(history, message.User(message.Text(prompt))))
	if err != nil {
		w.t.Fatalf("parent run: %v", err)
	}
	return out
}

// toolResults returns the text of every tool_result in the history, by tool_use id order.
func toolResults(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == message.TypeToolResult {
				out = append(out, message.Message{Content: b.Content}.TextOf())
			}
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func has(s, sub string) bool { return strings.Contains(s, sub) }

// ackSink acks the main queue at the end of each turn, as the session does after its
// transcript sync.
type ackSink struct {
	w *world
	q *background.Queue
}

func (k ackSink) Emit(e event.Event) { k.w.emit(e) }

func (k ackSink) Append(context.Context, message.Message) (string, error) { return "", nil }

func (k ackSink) EndTurn(context.Context) error { return k.q.Ack() }

// gateTool blocks until release is closed: it holds a background agent until the test lets go.
func gateTool(release <-chan struct{}) tool.Tool { return blockTool(nil, release) }

// blockTool is gateTool that also says, on entered, when a call has started.
func blockTool(entered chan<- struct{}, release <-chan struct{}) tool.Tool {
	return tool.New(tool.Spec[struct{}]{Name: "mcp__test__wait", Description: "waits", Schema: []byte(`{"type":"object"}`),
		IsReadOnly: tool.Always[struct{}],
		Run: func(ctx context.Context, env *tool.Env, in struct{}) tool.Result {
			if entered != nil {
				entered <- struct{}{}
			}
			select {
			case <-release:
				return tool.Text("released")
			case <-ctx.Done():
				return tool.Errorf("cancelled")
			}
		}})
}
