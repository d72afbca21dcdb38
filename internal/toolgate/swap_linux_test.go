package toolgate

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/swaptest"
	"github.com/keel-dev/keel/internal/tool"
)

// swapCalls is how many calls each case makes while the names are being swapped; enough that
// a tool resolving its path again would, without fail, land on the link's target a few times.
const swapCalls = 300

// swapRig runs file tool calls the way an agent's batch does — the runner, this gate with a
// real permission checker (acceptEdits, nobody to ask, Read(./secrets/**) denied), the
// built-in tools — in the workspace ws.
type swapRig struct {
	ws     string
	runner *tool.Runner
	files  *tool.FileState
	// servers records what the language servers were told of.
	servers *fakeLSP
}

func newSwapRig(t *testing.T) *swapRig {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return newSwapRigIn(t, ws)
}

// newSwapRigIn is newSwapRig with the workspace ws, as the session names it.
func newSwapRigIn(t *testing.T, ws string) *swapRig {
	t.Helper()
	deny, err := permission.ParseRule("Read(./secrets/**)", permission.Deny, permission.Source{Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	checker := permission.New(permission.Config{Home: t.TempDir(), Policy: permission.Policy{
		Mode: permission.ModeAcceptEdits, Rules: []permission.Rule{deny}, Dirs: []string{ws}}})
	servers := &fakeLSP{}
	gate := New(Config{Checker: checker, Hooks: &fakeHooks{out: map[hooks.Event]hooks.Outcome{}}, Emit: func(event.Event) {}, LSP: servers})
	pool := tool.Assemble([]tool.Tool{builtin.Read(), builtin.Write(), builtin.Edit(), builtin.NotebookEdit()}, nil)
	return &swapRig{ws: ws, files: tool.NewFileState(), servers: servers,
		runner: &tool.Runner{Pool: pool, Validator: tool.NewValidator(), Gate: gate}}
}

// call runs one call of name with input and returns its result.
func (r *swapRig) call(t *testing.T, name string, input any) tool.Result {
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	res := r.runner.Run(t.Context(), []tool.Call{{ID: "c", Name: name, Input: in}}, func(tool.Call) *tool.Env {
		return &tool.Env{State: tool.State{Cwd: r.ws}, Files: r.files, Progress: func(string) {}, Logger: logger}
	})
	return res[0]
}

func (r *swapRig) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := filepath.Join(r.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (r *swapRig) link(t *testing.T, rel, target string) string {
	t.Helper()
	p := filepath.Join(r.ws, rel)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFileToolsActOnTheCheckedPathUnderASwap: the gate resolves a file tool's path once, and the
// tool acts on exactly that path. A command in the background exchanges the named file with a
// link to a file the rules protect, in a tight loop: the gate approves the harmless file when
// it sees it, the protected one never, and the tool then reads or writes the harmless file or
// refuses — it never reads the Read-denied secret, nor writes .claude/settings.json,
// .git/config or a notebook under .claude (adversary10 N6); and the language servers open
// only the file that was read (N5).
func TestFileToolsActOnTheCheckedPathUnderASwap(t *testing.T) {
	t.Run("Read", func(t *testing.T) {
		r := newSwapRig(t)
		r.write(t, "secrets/k.txt", "TOPSECRET-123\n")
		x := r.write(t, "x.txt", "decoy\n")
		l := r.link(t, "l.txt", "secrets/k.txt")
		stop := swaptest.Start(t, x, l)
		for i := range swapCalls {
			if res := r.call(t, "Read", map[string]any{"file_path": x}); strings.Contains(res.ResultText(), "TOPSECRET") {
				t.Errorf("call %d read the denied file: %q", i, res.ResultText())
				break
			}
		}
		stop()
		// The language servers open what was read: the file checked, never the link's target.
		for _, p := range r.servers.touched {
			if p != x {
				t.Errorf("the language servers were told to open %s", p)
				break
			}
		}
	})
	t.Run("Write", func(t *testing.T) {
		r := newSwapRig(t)
		if err := os.Mkdir(filepath.Join(r.ws, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		settings := filepath.Join(r.ws, ".claude", "settings.json")
		w := r.link(t, "w.json", "z.json") // z.json does not exist: a Write creates it
		v := r.link(t, "v.json", ".claude/settings.json")
		swaptest.Start(t, w, v)
		for i := range swapCalls {
			r.call(t, "Write", map[string]any{"file_path": w, "content": `{"hooks":{}}`})
			if _, err := os.Lstat(settings); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("call %d: .claude/settings.json was written (%v)", i, err)
				break
			}
		}
	})
	t.Run("Edit", func(t *testing.T) {
		r := newSwapRig(t)
		const config = "[core]\n\tbare = false\n"
		gitConfig := r.write(t, ".git/config", config)
		if res := r.call(t, "Read", map[string]any{"file_path": gitConfig}); res.IsError {
			t.Fatalf("reading .git/config: %s", res.ResultText())
		}
		e := r.write(t, "e.txt", "[core]\n")
		f := r.link(t, "f.txt", ".git/config")
		swaptest.Start(t, e, f)
		for i := range swapCalls {
			r.call(t, "Edit", map[string]any{"file_path": e, "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = planted"})
			if b, err := os.ReadFile(gitConfig); err != nil || string(b) != config {
				t.Errorf("call %d: .git/config is now %q (%v)", i, b, err)
				break
			}
		}
	})
	t.Run("NotebookEdit", func(t *testing.T) {
		r := newSwapRig(t)
		const nb = `{"cells": [{"cell_type": "code", "execution_count": null, "id": "a1", "metadata": {}, "outputs": [], "source": ["print(1)"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`
		protected := r.write(t, ".claude/n.ipynb", nb)
		if res := r.call(t, "Read", map[string]any{"file_path": protected}); res.IsError {
			t.Fatalf("reading the notebook: %s", res.ResultText())
		}
		n := r.write(t, "n.ipynb", nb)
		m := r.link(t, "m.ipynb", ".claude/n.ipynb")
		swaptest.Start(t, n, m)
		for i := range swapCalls {
			r.call(t, "NotebookEdit", map[string]any{"notebook_path": n, "cell_id": "a1", "new_source": "planted()"})
			if b, err := os.ReadFile(protected); err != nil || string(b) != nb {
				t.Errorf("call %d: .claude/n.ipynb is now %q (%v)", i, b, err)
				break
			}
		}
	})
}

// TestFileToolsFollowAStableLink: resolving once changes nothing for links that stay put. In a
// workspace reached through a symlinked directory, a file that is a link to another file of
// the workspace is read, written and edited as that file, which stays a regular file behind
// the link; a link to a file the rules deny is refused by the check.
func TestFileToolsFollowAStableLink(t *testing.T) {
	real, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, ws); err != nil {
		t.Fatal(err)
	}
	r := newSwapRigIn(t, ws)
	r.write(t, "b.txt", "one\n")
	r.write(t, "secrets/k.txt", "TOPSECRET-123\n")
	r.link(t, "a.txt", "b.txt")
	r.link(t, "s.txt", "secrets/k.txt")
	a := filepath.Join(ws, "a.txt")
	steps := []struct {
		name  string
		input map[string]any
		want  string // in the result
	}{
		{"Read", map[string]any{"file_path": a}, "1\tone"},
		{"Edit", map[string]any{"file_path": a, "old_string": "one", "new_string": "two"}, "Edited " + a},
		{"Write", map[string]any{"file_path": "a.txt", "content": "three\n"}, "Updated " + a},
		{"Read", map[string]any{"file_path": "s.txt"}, `denied by rule "Read(./secrets/**)"`},
	}
	for _, s := range steps {
		if res := r.call(t, s.name, s.input); !strings.Contains(res.ResultText(), s.want) {
			t.Errorf("%s %v: %q, want %q in it", s.name, s.input, res.ResultText(), s.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(real, "b.txt")); err != nil || string(b) != "three\n" {
		t.Errorf("b.txt is %q (%v), want the written content", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(real, "a.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("a.txt is no longer a link: %v, %v", fi, err)
	}
	if want := filepath.Join(real, "b.txt"); len(r.servers.touched) != 1 || r.servers.touched[0] != want {
		t.Errorf("language servers opened %q, want %s", r.servers.touched, want)
	}
}
