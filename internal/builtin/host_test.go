package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
)

// bufferHost is an editor in miniature: files it holds are read and written in its buffers,
// others are left to the disk; commands are recorded and answered with a fixed result.
type bufferHost struct {
	mu       sync.Mutex
	buffers  map[string]string
	commands []shell.Command
}

func (h *bufferHost) ReadTextFile(_ context.Context, path string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	text, ok := h.buffers[path]
	if !ok {
		return "", ErrNotHosted
	}
	return text, nil
}

func (h *bufferHost) WriteTextFile(_ context.Context, path, content string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buffers[path] = content
	return nil
}

func (h *bufferHost) RunCommand(_ context.Context, _ string, c shell.Command) (shell.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.commands = append(h.commands, c)
	return shell.Result{Output: "from the editor terminal\n", ExitCode: 3}, nil
}

func callHosted(t *testing.T, h Host, tl tool.Tool, env *tool.Env, input any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(WithHost(t.Context(), h), env, raw)
}

// TestHostFiles: with a host, Read shows the editor's unsaved buffer, and Edit and Write change
// the buffer, not the file on disk; the read-before-write rule holds against the buffer.
func TestHostFiles(t *testing.T) {
	dir := t.TempDir()
	env := newEnv(t, dir)
	path := filepath.Join(env.State.Cwd, "main.go")
	if err := os.WriteFile(path, []byte("package main // on disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &bufferHost{buffers: map[string]string{path: "package main // unsaved\n"}}

	if res := callHosted(t, h, Edit(), env, editInput{FilePath: path, OldString: "unsaved", NewString: "edited"}); !res.IsError {
		t.Fatalf("Edit before Read passed: %s", render(res, dir))
	}
	res := callHosted(t, h, Read(), env, readInput{FilePath: path})
	if res.IsError || !strings.Contains(render(res, dir), "// unsaved") {
		t.Fatalf("Read did not show the buffer: %s", render(res, dir))
	}
	if res := callHosted(t, h, Edit(), env, editInput{FilePath: path, OldString: "unsaved", NewString: "edited"}); res.IsError {
		t.Fatalf("Edit: %s", render(res, dir))
	}
	if got := h.buffers[path]; got != "package main // edited\n" {
		t.Fatalf("buffer after Edit = %q", got)
	}
	if res := callHosted(t, h, Write(), env, writeInput{FilePath: path, Content: "package main // written\n"}); res.IsError {
		t.Fatalf("Write after Edit: %s", render(res, dir))
	}
	if got := h.buffers[path]; got != "package main // written\n" {
		t.Fatalf("buffer after Write = %q", got)
	}
	if disk, _ := os.ReadFile(path); string(disk) != "package main // on disk\n" {
		t.Fatalf("the file on disk changed: %q", disk)
	}

	// The editor changes its buffer behind the agent's back: the next Edit must refuse.
	h.buffers[path] = "package main // changed by the user\n"
	if res := callHosted(t, h, Edit(), env, editInput{FilePath: path, OldString: "user", NewString: "agent"}); !res.IsError {
		t.Fatalf("Edit of a buffer changed since it was read passed: %s", render(res, dir))
	}

	// A file the host does not hold is read from disk.
	other := filepath.Join(env.State.Cwd, "other.txt")
	if err := os.WriteFile(other, []byte("disk only\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := callHosted(t, h, Read(), env, readInput{FilePath: other}); !strings.Contains(render(res, dir), "disk only") {
		t.Fatalf("Read of an unhosted file: %s", render(res, dir))
	}
}

// TestHostCommand: with a host, a foreground Bash command runs there and its result is the
// tool's; a background one still runs in keel's own shell jobs.
func TestHostCommand(t *testing.T) {
	env := newEnv(t, t.TempDir())
	h := &bufferHost{buffers: map[string]string{}}
	jobs := shell.NewJobs()
	t.Cleanup(func() { jobs.Close() })
	res := callHosted(t, h, Bash(jobs), env, bashInput{Command: "go test ./..."})
	if !res.IsError || !strings.Contains(res.Content[0].Text, "from the editor terminal") || !strings.Contains(res.Content[0].Text, "[Exit code 3]") {
		t.Fatalf("Bash through the host: %+v", res.Content)
	}
	if len(h.commands) != 1 || h.commands[0].Script != "go test ./..." || h.commands[0].Dir != env.State.Cwd {
		t.Fatalf("the host ran %+v", h.commands)
	}
}
