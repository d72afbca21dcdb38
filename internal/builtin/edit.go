package builtin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/tool"
)

type editInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

const editSchema = `{"type":"object","properties":{
"file_path":{"type":"string","description":"Absolute path, or relative to the working directory"},
"old_string":{"type":"string","description":"Exact text to replace"},
"new_string":{"type":"string","description":"Replacement text (must differ)"},
"replace_all":{"type":"boolean","default":false,"description":"Replace every occurrence"}},
"required":["file_path","old_string","new_string"],"additionalProperties":false}`

// snippetContext is how many lines around a change Edit shows.
const snippetContext = 3

// Edit returns the Edit tool: an exact string replacement in a file the agent has read. Only
// the replaced bytes change: the file keeps its encoding (UTF-8, UTF-16, Latin-1,
// Windows-1252), its byte-order mark, its CRLF line endings and its mode.
func Edit() tool.Tool {
	return tool.New(tool.Spec[editInput]{
		Name:        "Edit",
		Description: description("Edit"),
		Schema:      []byte(editSchema),
		Run:         runEdit,
	})
}

func runEdit(ctx context.Context, env *tool.Env, in editInput) tool.Result {
	if in.FilePath == "" {
		return tool.Errorf("file_path is empty.")
	}
	if in.OldString == in.NewString {
		return tool.Errorf("old_string and new_string are the same; there is nothing to change.")
	}
	t := checked(env, in.FilePath)
	if res, ok := checkWritable(env.State, t); !ok {
		return res
	}
	data, err := readNoLinks(t.real)
	if err == nil {
		data, err = readBytes(ctx, t.real)
	}
	if err != nil {
		if res, ok := changed(t, err, "changed"); ok {
			return res
		}
		if notExist(err) {
			return editMissing(ctx, env, t, in)
		}
		if info, serr := os.Lstat(t.real); serr == nil && info.IsDir() {
			return tool.Errorf("%s is a directory.", t.abs)
		}
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	if res, ok := checkFresh(env, t, data); !ok {
		return res
	}
	enc, err := detectEncoding(data, false)
	if err != nil {
		return tool.Errorf("%s is %s. Edit only changes text, so the file was left unchanged.", t.abs, err)
	}
	text, err := enc.decode(data[len(enc.bom):])
	if err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	crlf := usesCRLF(text)
	if in.OldString == "" {
		if text != "" {
			return tool.Errorf("old_string is empty, but %s is not. Give the exact text to replace, or use Write to replace the whole file.", t.abs)
		}
		repl := in.NewString
		if crlf {
			repl = toCRLF(repl)
		}
		body, err := enc.encode(repl)
		if err != nil {
			return tool.Errorf("%v", err)
		}
		return applyEdit(ctx, env, t, append(append([]byte(nil), enc.bom...), body...), repl, 0, 1, repl)
	}
	out, n, at, repl, err := enc.splice(data, in.OldString, in.NewString, in.ReplaceAll, crlf)
	if err == nil && n == 0 {
		// Text copied from Read with its line numbers still matches.
		if old, ok := withoutLineNumbers(in.OldString, true); ok {
			newString := in.NewString
			if s, ok := withoutLineNumbers(newString, false); ok {
				newString = s
			}
			out, n, at, repl, err = enc.splice(data, old, newString, in.ReplaceAll, crlf)
		}
	}
	switch {
	case err != nil:
		return tool.Errorf("%v", err)
	case n == 0:
		return tool.Errorf("old_string was not found in %s. It must match the file exactly, including whitespace and indentation; Read the file again to check.", t.abs)
	case n > 1 && !in.ReplaceAll:
		return tool.Errorf("old_string occurs %d times in %s. Include more surrounding lines to pick one, or set replace_all to change every occurrence.", n, t.abs)
	}
	newText, err := enc.decode(out[len(enc.bom):])
	if err != nil {
		return tool.Errorf("Cannot read %s back: %v", t.abs, err)
	}
	before, err := enc.decode(data[len(enc.bom) : len(enc.bom)+at])
	if err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	return applyEdit(ctx, env, t, out, newText, len(before), n, repl)
}

// withoutLineNumbers returns s without the line numbers Read puts before each line ("12\t",
// or padded to six columns as keel once wrote them), when every line of s has one (counting
// up by one, if consecutive is set); ok is false otherwise.
func withoutLineNumbers(s string, consecutive bool) (string, bool) {
	lines := strings.Split(s, "\n")
	prev := -1
	for i, l := range lines {
		rest := strings.TrimLeft(l, " ")
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		if digits == 0 || digits > 9 || !strings.HasPrefix(rest[digits:], "\t") {
			return "", false
		}
		n, _ := strconv.Atoi(rest[:digits])
		if consecutive && prev >= 0 && n != prev+1 {
			return "", false
		}
		prev = n
		lines[i] = rest[digits+1:]
	}
	return strings.Join(lines, "\n"), true
}

// usesCRLF reports whether most line endings of text are CRLF.
func usesCRLF(text string) bool {
	crlf := strings.Count(text, "\r\n")
	return crlf > 0 && crlf*2 >= strings.Count(text, "\n")
}

// applyEdit writes the new content — the old bytes with only the replaced ones changed — and
// shows the lines of text (the content decoded) around the change, which starts at byte at
// of text and is repl.
func applyEdit(ctx context.Context, env *tool.Env, t target, content []byte, text string, at, n int, repl string) tool.Result {
	if err := overwrite(ctx, t.real, content); err != nil {
		return writeFailed(t, err)
	}
	// A host may not have saved the file yet; the hash is what counts.
	info, _ := os.Lstat(t.real)
	recordWrite(env, t, content, info)
	times := "1 replacement"
	if n > 1 {
		times = fmt.Sprintf("%d replacements; the first shown", n)
	}
	return tool.Text(fmt.Sprintf("Edited %s (%s):\n%s", t.abs, times, snippet(text, at, len(repl))))
}

// editMissing handles an Edit of a file that does not exist: an empty old_string creates it;
// otherwise the error says whether it was deleted since it was read.
func editMissing(ctx context.Context, env *tool.Env, t target, in editInput) tool.Result {
	if in.OldString != "" {
		if env.Files != nil {
			if _, read := env.Files.Lookup(t.real); read {
				return tool.Errorf("%s was deleted since it was read; it no longer exists. Nothing was changed.", t.abs)
			}
		}
		return tool.Errorf("File does not exist: %s. To create it, use Write (or Edit with an empty old_string).", t.abs)
	}
	if err := atomicfile.MkdirAllNoLinks(filepath.Dir(t.real)); err != nil {
		return tool.Errorf("Cannot create the directory of %s: %v", t.abs, err)
	}
	content := []byte(in.NewString)
	if err := create(ctx, t.real, content); err != nil {
		return writeFailed(t, err)
	}
	// A host may not have saved the file yet; the hash is what counts.
	info, _ := os.Lstat(t.real)
	recordWrite(env, t, content, info)
	return tool.Text(fmt.Sprintf("Created %s (%s).", t.abs, lines(lineCount(in.NewString))))
}

// snippet returns the numbered lines of text around the span [at, at+size).
func snippet(text string, at, size int) string {
	lines := strings.Split(text, "\n")
	first := strings.Count(text[:at], "\n") // 0-based line of the change
	last := first + strings.Count(text[at:at+size], "\n")
	from := max(first-snippetContext, 0)
	to := min(last+snippetContext, len(lines)-1)
	if to == len(lines)-1 && lines[to] == "" && to > from {
		to-- // the empty string after a final newline is not a line
	}
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(formatLine(i+1, lines[i]))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
