//go:build unix

package builtin

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/toolpath"
)

// TestFileToolsFollowNoSwappedLink: a file tool uses the path it resolved and checked without
// following a link on its way. A sandboxed command in the background can swap a directory of
// the workspace for a link to elsewhere (rename-exchange, in a loop) between the check and the
// use, so here the link is already there when the resolved path is used: reading, replacing,
// creating and writing in place through it all fail, and nothing where it leads is read or
// written (adversary9 F4, F5).
func TestFileToolsFollowNoSwappedLink(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "d")); err != nil {
		t.Fatal(err)
	}
	resolved := filepath.Join(ws, "d", "f")
	if b, err := readNoLinks(resolved); err == nil {
		t.Errorf("read through the link: %q", b)
	}
	if err := overwriteFile(resolved, []byte("planted")); err == nil {
		t.Error("a replacement was written through the link")
	}
	if err := overwriteInPlace(resolved, []byte("planted")); err == nil {
		t.Error("the file was written in place through the link")
	}
	if err := atomicfile.MkdirAllNoLinks(filepath.Join(ws, "d", "sub")); err == nil {
		t.Error("a directory was made through the link")
	}
	if err := create(t.Context(), filepath.Join(ws, "d", "new"), []byte("planted")); err == nil {
		t.Error("a file was created through the link")
	}
	if b, err := os.ReadFile(filepath.Join(outside, "f")); err != nil || string(b) != "SECRET" {
		t.Errorf("the file the link leads to: %q, %v", b, err)
	}
	for _, made := range []string{"new", "sub"} {
		if _, err := os.Lstat(filepath.Join(outside, made)); err == nil {
			t.Errorf("%s was made where the link leads", made)
		}
	}
}

// TestFileToolsWaitOnNoFIFO: a FIFO swapped in for the file a tool checked (adversary9 F8) is
// an error, at once: opening it to read or to write in place would wait for a writer or a
// reader that never comes.
func TestFileToolsWaitOnNoFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readNoLinks(fifo); err == nil {
		t.Errorf("read a FIFO: %q", b)
	}
	if err := overwriteInPlace(fifo, []byte("x")); err == nil {
		t.Error("wrote a FIFO in place")
	}
}

// TestFileToolsActOnlyOnTheCheckedPath: a file tool acts on the path the permission gate
// checked (env.Paths), never on its input resolved again, and opens it refusing a link at its
// own name too. Here the named file was swapped for a link to a protected file after the
// check — which also is a file the agent read, so the read-before-write rule would let an
// edit through: every tool refuses, says the path changed, and leaves the file alone
// (adversary10 N6).
func TestFileToolsActOnlyOnTheCheckedPath(t *testing.T) {
	const nb = `{"cells": [{"cell_type": "code", "execution_count": null, "id": "a1", "metadata": {}, "outputs": [], "source": ["print(1)"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`
	tests := []struct {
		tool  tool.Tool
		name  string // the file the call names, a link to protected now
		input map[string]any
	}{
		{Read(), "x.txt", map[string]any{}},
		{Write(), "x.txt", map[string]any{"content": "planted"}},
		{Edit(), "x.txt", map[string]any{"old_string": "[core]", "new_string": "[core]\n\tfsmonitor = planted"}},
		{NotebookEdit(), "x.ipynb", map[string]any{"cell_id": "a1", "new_source": "planted()"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Name(), func(t *testing.T) {
			env := newEnv(t, t.TempDir())
			ws := env.State.Cwd
			content := "[core]\n\tbare = false\n"
			if tt.tool.Name() == "NotebookEdit" {
				content = nb
			}
			protected := filepath.Join(ws, ".git", "config"+filepath.Ext(tt.name))
			writeFiles(t, ws, map[string]string{".git/config" + filepath.Ext(tt.name): content})
			recordWrite(env, resolve(env.State, protected), []byte(content), mustStat(t, protected))
			named := filepath.Join(ws, tt.name)
			// What the gate checked: the file itself, before the swap.
			env.Paths = []toolpath.Path{{Given: named, Abs: named, Real: named}}
			if err := os.Symlink(protected, named); err != nil {
				t.Fatal(err)
			}
			input := map[string]any{"file_path": named}
			if tt.tool.Name() == "NotebookEdit" {
				input = map[string]any{"notebook_path": named}
			}
			maps.Copy(input, tt.input)
			res := call(t, tt.tool, env, input)
			if !res.IsError || !strings.Contains(res.ResultText(), "changed while the call ran") || strings.Contains(res.ResultText(), "bare") {
				t.Errorf("result %q, want the refusal", res.ResultText())
			}
			if got := readFile(t, protected); got != content {
				t.Errorf("the protected file is now %q", got)
			}
		})
	}
}
