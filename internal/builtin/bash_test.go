package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
)

func TestBash(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   bashInput
	}{
		{"echo", bashInput{Command: "echo hello; echo oops >&2"}},
		{"no output", bashInput{Command: "true"}},
		{"exit code", bashInput{Command: "echo failing; exit 3"}},
		{"cd", bashInput{Command: "cd sub && pwd"}},
		{"timeout", bashInput{Command: "echo started; sleep 30", Timeout: 1000}},
		{"huge output", bashInput{Command: "seq 1 200000"}},
		{"trimmed output", bashInput{Command: `printf '\033[32mok\033[0m\n'; for i in 1 2 3; do printf 'downloading %d%%\r' $((i*33)); done; echo; yes waiting | head -50; echo done`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, dir)
			res := call(t, Bash(shell.NewJobs()), env, tt.in)
			golden(t, "bash/"+strings.ReplaceAll(tt.name, " ", "_"), render(res, env.State.Cwd))
		})
	}
}

func TestBashCdPersists(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir)
	bash := Bash(shell.NewJobs())
	res := call(t, bash, env, bashInput{Command: "cd sub"})
	if res.Modifier == nil {
		t.Fatal("cd returned no modifier")
	}
	res.Modifier(&env.State)
	if want := filepath.Join(newEnv(t, dir).State.Cwd, "sub"); env.State.Cwd != want {
		t.Errorf("cwd = %s, want %s", env.State.Cwd, want)
	}
	if out := call(t, bash, env, bashInput{Command: "basename $PWD"}).ResultText(); out != "sub" {
		t.Errorf("next call ran in %q", out)
	}
	if res := call(t, bash, env, bashInput{Command: "echo same"}); res.Modifier != nil {
		t.Error("a command without cd returned a modifier")
	}
}

func TestBashTimeoutKillsChild(t *testing.T) {
	dir := t.TempDir()
	env := newEnv(t, dir)
	// The timeout must fire after the command started its child, which a loaded machine may
	// not manage in time: such a run proves nothing and is repeated with twice the timeout.
	for ms := 1000; ; ms *= 2 {
		res := call(t, Bash(shell.NewJobs()), env, bashInput{Command: "sleep 300 & echo $! > pid.tmp && mv pid.tmp pid; wait", Timeout: ms})
		if !res.IsError {
			t.Fatalf("no timeout: %s", res.ResultText())
		}
		if _, err := os.Stat(filepath.Join(dir, "pid")); err == nil || time.Duration(ms)*time.Millisecond >= waittest.Timeout() {
			break
		}
		t.Logf("the command was killed after %d ms before it started its child; again", ms)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(dir, "pid"))))
	if err != nil {
		t.Fatal(err)
	}
	// The shell package returns only once the group is gone: a zombie awaiting init has exited.
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if f[0] != "Z" && f[0] != "X" {
			t.Errorf("child %d survived the timeout", pid)
		}
	}
}

func TestBackgroundShell(t *testing.T) {
	dir := t.TempDir()
	jobs := shell.NewJobs()
	defer jobs.Close()
	tools := tool.Assemble(Tools(Options{Jobs: jobs}), nil)
	lookup := func(name string) tool.Tool { tl, _ := tools.Lookup(name); return tl }
	env := newEnv(t, dir)
	res := call(t, lookup("Bash"), env, bashInput{Command: "echo ready; echo noise; sleep 300", RunInBackground: true})
	golden(t, "bash/background_start", render(res, env.State.Cwd))
	if err := jobs.WaitOutput(t.Context(), "bash_1", "noise\n"); err != nil {
		t.Fatal(err)
	}
	res = call(t, lookup("BashOutput"), env, bashOutputInput{BashID: "bash_1", Filter: "^re"})
	golden(t, "bash/background_output", render(res, env.State.Cwd))
	res = call(t, lookup("BashOutput"), env, bashOutputInput{BashID: "bash_1"})
	golden(t, "bash/background_output_again", render(res, env.State.Cwd))
	res = call(t, lookup("KillShell"), env, killShellInput{ShellID: "bash_1"})
	golden(t, "bash/background_kill", render(res, env.State.Cwd))
	res = call(t, lookup("BashOutput"), env, bashOutputInput{BashID: "bash_1"})
	golden(t, "bash/background_after_kill", render(res, env.State.Cwd))
	res = call(t, lookup("KillShell"), env, killShellInput{ShellID: "bash_7"})
	golden(t, "bash/background_unknown", render(res, env.State.Cwd))
}

func TestTodoWrite(t *testing.T) {
	var got [][]event.Todo
	todos := NewTodos(func(items []event.Todo) { got = append(got, items) })
	env := newEnv(t, t.TempDir())
	items := []event.Todo{
		{Content: "Write tests", Status: "completed", ActiveForm: "Writing tests"},
		{Content: "Run tests", Status: "in_progress", ActiveForm: "Running tests"},
		{Content: "Ship", Status: "pending", ActiveForm: "Shipping"},
	}
	res := call(t, TodoWrite(todos), env, todoInput{Todos: items})
	golden(t, "todo/ok", render(res, env.State.Cwd))
	if diff := cmp.Diff([][]event.Todo{items}, got); diff != "" {
		t.Errorf("onChange mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(items, todos.List()); diff != "" {
		t.Errorf("list mismatch (-want +got):\n%s", diff)
	}
	// The schema rejects a bad status before the tool runs; the tool checks again for callers
	// that skip validation.
	raw := []byte(`{"todos":[{"content":"x","status":"done","activeForm":"x"}]}`)
	if err := tool.NewValidator().Validate(TodoWrite(todos), raw); err == nil {
		t.Error("schema accepted status done")
	}
	res = TodoWrite(todos).Call(t.Context(), env, raw)
	golden(t, "todo/bad_status", render(res, env.State.Cwd))
	if len(got) != 1 || len(todos.List()) != 3 {
		t.Error("a rejected TodoWrite changed the list")
	}
}

// The environment the call's Environ gives is read at each call: a folder put on PATH
// between two calls (an enabled plugin's bin/) is found by the next command.
func TestBashEnviron(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "plugin-tool"), []byte("#!/bin/sh\necho from the plugin\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := os.Getenv("PATH")
	bash := Bash(shell.NewJobs())
	env := func() *tool.Env {
		e := newEnv(t, dir)
		e.Environ = func() []string { return []string{"PATH=" + path} }
		return e
	}
	res := call(t, bash, env(), bashInput{Command: "plugin-tool"})
	if !res.IsError {
		t.Fatalf("plugin-tool ran before its folder was on PATH: %v", res.Content)
	}
	path = bin + string(os.PathListSeparator) + path
	res = call(t, bash, env(), bashInput{Command: "plugin-tool"})
	if res.IsError || !strings.Contains(render(res, dir), "from the plugin") {
		t.Errorf("plugin-tool on PATH: %s", render(res, dir))
	}
}

// TestBashOutputHeldOpen: the daemon case, `setsid sh -c 'exec sleep 600' & echo done`
// with a 3 s timeout. The call returns with "done" and a note instead of waiting for the daemon
// (which here waits until it left the group before the shell ends, so it is not killed).
func TestBashOutputHeldOpen(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "ready"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(dir, "pid")))); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	env := newEnv(t, dir)
	res := call(t, Bash(shell.NewJobs()), env, bashInput{
		Command: `setsid sh -c 'echo $$ > pid.tmp && mv pid.tmp pid; echo > ready; exec sleep 600' & read x < ready; echo done`,
		Timeout: 3000,
	})
	golden(t, "bash/output_held_open", render(res, env.State.Cwd))
}
