package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/shell"
)

// Host is where Read, Write and Edit read and write text files and where Bash runs its
// foreground commands when that is not this process's file system and shell: an editor
// driving keel over the Agent Client Protocol offers its buffers (the agent reads unsaved
// changes, and its writes land in the editor's undo history) and its terminals (the user
// watches the command run). Permission checks, path resolution and the read-before-write
// rule stay keel's: a Host only performs the I/O the tools already decided on.
//
// A method returns [ErrNotHosted] to leave that call to the operating system (a client that
// offers terminals but not files). Methods may be called from several goroutines at once.
type Host interface {
	// ReadTextFile returns the text of the file at the absolute path as the user sees it.
	ReadTextFile(ctx context.Context, path string) (string, error)
	// WriteTextFile replaces (or creates) the file at the absolute path with content.
	WriteTextFile(ctx context.Context, path, content string) error
	// RunCommand runs c for the tool call toolUseID and returns what [shell.Run] would:
	// output, exit code, and whether it timed out or was interrupted (ctx ended). It must
	// not return before the command has stopped.
	RunCommand(ctx context.Context, toolUseID string, c shell.Command) (shell.Result, error)
}

// ErrNotHosted is a [Host]'s answer for a call it leaves to the operating system.
var ErrNotHosted = errors.New("not hosted")

// hostKey is the context key of a Host.
type hostKey struct{}

// WithHost returns ctx carrying h: the built-in tools of every agent that runs under ctx (the
// main agent of one Send, and the subagents it starts) do their file and command I/O through
// h. The context carries it because the host belongs to the request — the editor connection
// that sent the prompt — not to the session.
func WithHost(ctx context.Context, h Host) context.Context {
	return context.WithValue(ctx, hostKey{}, h)
}

func toolHost(ctx context.Context) Host {
	h, _ := ctx.Value(hostKey{}).(Host)
	return h
}

// readBytes returns the content of the file at path: through the context's host when it
// holds it, else from disk.
func readBytes(ctx context.Context, path string) ([]byte, error) {
	if h := toolHost(ctx); h != nil {
		text, err := h.ReadTextFile(ctx, path)
		if !errors.Is(err, ErrNotHosted) {
			return []byte(text), err
		}
	}
	return readNoLinks(path)
}

// readNoLinks reads the file a tool acts on, path resolved already, without following a link on
// the way ([atomicfile.ReadRegular]): a sandboxed command running in the background can swap a
// directory of the workspace for a link (rename-exchange, in a loop) between the path's check
// and its use, and keel, outside the sandbox, would then read a file the permission check
// never saw. Edit, Write and NotebookEdit need the whole file, so one past maxEditBytes
// (a sparse file a command made for nothing, say) is an error, never read into memory.
func readNoLinks(path string) ([]byte, error) { return atomicfile.ReadWhole(path, maxEditBytes) }

// maxEditBytes bounds the files Edit, Write and NotebookEdit change; Bash edits larger ones.
const maxEditBytes = 256 << 20

// openRegular opens path for reading as readNoLinks does, without waiting on a FIFO swapped
// in; anything but a regular file is an error.
func openRegular(path string) (*os.File, error) { return atomicfile.OpenRegular(path) }

// checkRegular returns f if it is a regular file, else closes it.
func checkRegular(f *os.File) (*os.File, error) {
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file any more (something replaced it)", f.Name())
	}
	return f, nil
}

// hostedWrite writes content through the context's host; ok is false when there is none or
// it leaves writes to the operating system.
func hostedWrite(ctx context.Context, path string, content []byte) (ok bool, err error) {
	h := toolHost(ctx)
	if h == nil {
		return false, nil
	}
	err = h.WriteTextFile(ctx, path, string(content))
	if errors.Is(err, ErrNotHosted) {
		return false, nil
	}
	return true, err
}

// runCommand runs a foreground command through the context's host, else with [shell.Run]. A
// sandboxed command never goes to the host: an editor's terminal is outside the sandbox.
func runCommand(ctx context.Context, toolUseID string, c shell.Command) (shell.Result, error) {
	if h := toolHost(ctx); h != nil && c.Sandbox == nil {
		res, err := h.RunCommand(ctx, toolUseID, c)
		if !errors.Is(err, ErrNotHosted) {
			return res, err
		}
	}
	return shell.Run(ctx, c)
}
