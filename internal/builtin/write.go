package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/tool"
)

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

const writeSchema = `{"type":"object","properties":{
"file_path":{"type":"string","description":"Absolute path, or relative to the working directory"},
"content":{"type":"string","description":"The file's whole new content"}},
"required":["file_path","content"],"additionalProperties":false}`

// Write returns the Write tool: it creates a file (and its parent directories) or replaces one
// the agent has read and that has not changed since. A replaced file keeps its mode, its
// encoding, its byte-order mark and its CRLF line endings.
func Write() tool.Tool {
	return tool.New(tool.Spec[writeInput]{
		Name:        "Write",
		Description: description("Write"),
		Schema:      []byte(writeSchema),
		Run:         runWrite,
	})
}

func runWrite(ctx context.Context, env *tool.Env, in writeInput) tool.Result {
	if in.FilePath == "" {
		return tool.Errorf("file_path is empty.")
	}
	t := checked(env, in.FilePath)
	if res, ok := checkWritable(env.State, t); !ok {
		return res
	}
	content := []byte(in.Content)
	old, err := readNoLinks(t.real)
	if err == nil {
		old, err = readBytes(ctx, t.real)
	}
	if res, ok := changed(t, err, "written"); ok {
		return res
	}
	verb := "Updated"
	switch {
	case err == nil:
		if res, ok := checkFresh(env, t, old); !ok {
			return res
		}
		if content, err = keepEncoding(old, in.Content); err != nil {
			return tool.Errorf("%v", err)
		}
		if err := overwrite(ctx, t.real, content); err != nil {
			return writeFailed(t, err)
		}
	case notExist(err):
		verb = "Created"
		if err := atomicfile.MkdirAllNoLinks(filepath.Dir(t.real)); err != nil {
			if res, ok := changed(t, err, "written"); ok {
				return res
			}
			return tool.Errorf("Cannot create the directory of %s: %v", t.abs, err)
		}
		if err := create(ctx, t.real, content); err != nil {
			return writeFailed(t, err)
		}
	default:
		if info, serr := os.Lstat(t.real); serr == nil && info.IsDir() {
			return tool.Errorf("%s is a directory.", t.abs)
		}
		return tool.Errorf("Cannot read %s before writing it: %v", t.abs, err)
	}
	// A host may not have saved the file yet; the hash is what counts.
	info, _ := os.Lstat(t.real)
	recordWrite(env, t, content, info)
	return tool.Result{
		Content: tool.Text(fmt.Sprintf("%s %s (%s).", verb, t.abs, lines(lineCount(in.Content)))).Content,
		Output:  map[string]any{"type": strings.ToLower(verb), "filePath": t.abs},
	}
}

// writeFailed answers a write of t that failed; a link met on the checked path means the path
// changed while the call ran ([changed]).
func writeFailed(t target, err error) tool.Result {
	if res, ok := changed(t, err, "written"); ok {
		return res
	}
	return tool.Errorf("Cannot write %s: %v", t.abs, err)
}

// overwrite gives an existing file new content so that a kill or crash at any moment leaves
// the old content or the new, never an empty or half-written file: the new content goes into a
// file beside it that then takes its place, with its mode and owner. A file that cannot be
// swapped without changing what it is (other hard links, an owner keel cannot give a file, a
// directory keel cannot create in) is written in place instead.
//
// Through a [Host] the host writes it (an editor's buffer, saved by the editor).
func overwrite(ctx context.Context, path string, content []byte) error {
	if ok, err := hostedWrite(ctx, path, content); ok {
		return err
	}
	return overwriteFile(path, content)
}

// overwriteFile is overwrite on disk.
func overwriteFile(path string, content []byte) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if info.Mode()&os.ModeSymlink != 0 {
		return &atomicfile.LinkError{Link: path} // swapped in since the file was read
	}
	// The path is resolved already and checked: no link on its way is followed, since a
	// command in the background could swap one in meanwhile ([readNoLinks]).
	err = atomicfile.ReplaceNoLinks(path, content, info)
	if errors.Is(err, atomicfile.ErrNotReplaceable) {
		return overwriteInPlace(path, content)
	}
	return err
}

// create makes a new file with content, through the context's [Host] when there is one.
func create(ctx context.Context, path string, content []byte) error {
	if ok, err := hostedWrite(ctx, path, content); ok {
		return err
	}
	return atomicfile.CreateNoLinks(path, content, 0o644)
}

// overwriteInPlace rewrites the file itself, so its links and owner stay as they were.
func overwriteInPlace(path string, content []byte) error {
	f, err := atomicfile.OpenNoLinks(path, os.O_WRONLY|os.O_TRUNC|syscall.O_NONBLOCK, 0) // a FIFO swapped in fails, never waits
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

func lines(n int) string { return plural(n, "line") }
