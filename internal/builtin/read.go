package builtin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/text/transform"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// Read limits.
const (
	defaultReadLines = 2000
	maxLineChars     = 2000
	// maxReadBytes caps a whole-file read and the text one Read returns.
	maxReadBytes = 256 << 10
	// maxImageBytes keeps the base64 of an image under the API's 5 MB.
	maxImageBytes = 3750 << 10
	binarySniff   = 8000
)

type readInput struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

const readSchema = `{"type":"object","properties":{
"file_path":{"type":"string","description":"Absolute path, or relative to the working directory"},
"offset":{"type":"integer","minimum":0,"description":"Line number to start at (1-based)"},
"limit":{"type":"integer","minimum":1,"description":"Number of lines to read"}},
"required":["file_path"],"additionalProperties":false}`

// Read returns the Read tool: text with line numbers, images, notebooks. It records what it
// read in env.Files. Read-only and concurrency-safe.
func Read() tool.Tool {
	return tool.New(tool.Spec[readInput]{
		Name:              "Read",
		Description:       description("Read"),
		Schema:            []byte(readSchema),
		IsReadOnly:        tool.Always[readInput],
		IsConcurrencySafe: tool.Always[readInput],
		Run:               runRead,
	})
}

func runRead(ctx context.Context, env *tool.Env, in readInput) tool.Result {
	if in.FilePath == "" {
		return tool.Errorf("file_path is empty.")
	}
	t := checked(env, in.FilePath)
	// Lstat, not Stat: the checked path has every link resolved, so a link at it now was
	// swapped in since.
	info, err := os.Lstat(t.real)
	if err != nil {
		if notExist(err) {
			if target, lerr := os.Readlink(t.abs); lerr == nil {
				return tool.Errorf("%s is a symlink to %s, which does not exist.", t.abs, target)
			}
			return tool.Errorf("File does not exist: %s (working directory: %s).", t.abs, env.State.Cwd)
		}
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		if _, err := os.Stat(t.real); errors.Is(err, syscall.ELOOP) {
			return tool.Errorf("Cannot read %s: %v", t.abs, err) // a loop of links, never resolved
		}
		return linkNow(t, "read")
	case info.IsDir():
		return tool.Errorf("%s is a directory. Use Glob to find files in it, or Bash `ls` to list it.", t.abs)
	case !info.Mode().IsRegular():
		return tool.Errorf("%s is not a regular file (%s); Read only reads files.", t.abs, info.Mode().Type())
	}
	f, err := openRegular(t.real)
	if err != nil {
		if res, ok := changed(t, err, "read"); ok {
			return res
		}
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	defer f.Close()
	// What is read is the file opened: its size and time, not those the name had before.
	if info, err = f.Stat(); err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	head := make([]byte, binarySniff)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	if mt := imageType(head); mt != "" {
		return readImage(env, t, f, info, mt)
	}
	if strings.EqualFold(filepath.Ext(t.abs), ".ipynb") {
		return readNotebook(env, t, f, info)
	}
	enc, err := sniffEncoding(f, head, info.Size())
	if err != nil {
		if bin, ok := errors.AsType[*errBinary](err); ok {
			detail := ""
			if bin.detail != "" {
				detail = ", " + bin.detail
			}
			return tool.Errorf("%s is %s (%d bytes%s). Read shows text, images (PNG, JPEG, GIF, WebP) and Jupyter notebooks; inspect other files with Bash (e.g. `file`, `xxd | head`).", t.abs, bin.kind, info.Size(), detail)
		}
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	if in.Offset == 0 && in.Limit == 0 && info.Size() > maxReadBytes {
		return tool.Errorf("%s is %d KB, over the %d KB Read returns at once. Read it in parts with offset and limit (e.g. offset=1, limit=500), or use Grep to find the lines you need.",
			t.abs, info.Size()>>10, maxReadBytes>>10)
	}
	if h := toolHost(ctx); h != nil {
		// The editor's buffer is what the user sees, unsaved changes included; it hands over
		// text, so no encoding is left to undo.
		text, err := h.ReadTextFile(ctx, t.real)
		if !errors.Is(err, ErrNotHosted) {
			if err != nil {
				return tool.Errorf("Cannot read %s: %v", t.abs, err)
			}
			return readText(env, t, strings.NewReader(text), info, in, utf8Text)
		}
	}
	return readText(env, t, f, info, in, enc)
}

// readText formats lines like `cat -n`, with the line number as narrow as it is (Claude Code's
// format: "7\tline"), a tab, the line. It reads the whole file to hash it, but keeps only the
// requested lines, and of each line no more than it shows, so a file of any size (or a line
// of any length) costs the same memory. A file in another encoding than UTF-8 is decoded on
// the way (enc); the hash is of its bytes.
func readText(env *tool.Env, t target, f io.Reader, info os.FileInfo, in readInput, enc textEncoding) tool.Result {
	start := max(in.Offset, 1)
	limit := in.Limit
	if limit == 0 {
		limit = defaultReadLines
	}
	h := sha256.New()
	src := io.TeeReader(f, h)
	if _, err := io.CopyN(io.Discard, src, int64(len(enc.bom))); err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	if enc.enc != nil {
		src = transform.NewReader(src, enc.enc.NewDecoder())
	}
	lr := lineReader{r: bufio.NewReaderSize(src, 64<<10)}
	var out strings.Builder
	lineNo, shown, last := 0, 0, 0
	stopped := false // output hit maxReadBytes
	for {
		head, chars, ok, err := lr.next()
		if err != nil {
			return tool.Errorf("Cannot read %s: %v", t.abs, err)
		}
		if !ok {
			break
		}
		lineNo++
		if lineNo >= start && shown < limit && !stopped {
			text := numberedLine(lineNo, head, chars)
			if out.Len()+len(text) > maxReadBytes {
				stopped = true
			} else {
				out.WriteString(text)
				shown++
				last = lineNo
			}
		}
	}
	partial := start > 1 || last < lineNo
	view := fmt.Sprintf("lines %d+%d", start, limit)
	unchanged := recordRead(env, t, tool.FileRead{ModTime: info.ModTime(), Size: info.Size(), Hash: hex.EncodeToString(h.Sum(nil)), Partial: partial, View: view})
	switch {
	case lineNo == 0:
		return tool.Text(fmt.Sprintf("%s is empty.", t.abs))
	case start > lineNo:
		return tool.Text(fmt.Sprintf("%s has %d lines; offset %d is past the end.", t.abs, lineNo, start))
	}
	if stopped {
		fmt.Fprintf(&out, "\n[Output stopped at %d KB after line %d of %d. Continue with offset=%d.]", maxReadBytes>>10, last, lineNo, last+1)
	} else if last < lineNo {
		fmt.Fprintf(&out, "\n[Showing lines %d-%d of %d. Continue with offset=%d.]", start, last, lineNo, last+1)
	}
	if note := enc.note(); note != "" {
		out.WriteString("\n" + note)
	}
	if unchanged && out.Len() > len(unchangedStub) {
		return tool.Text(unchangedStub)
	}
	return tool.Text(strings.TrimSuffix(out.String(), "\n"))
}

// unchangedStub answers a Read of what the agent's context already holds: the same view of
// the file, unchanged since (Claude Code answers the same way).
const unchangedStub = "Unchanged since your last Read of it, which is still current: refer to that result instead of reading again."

// recordRead records what Read showed of a file, and reports whether the agent's context
// already holds it: the same view of the same content, read by this agent, not dropped
// since (a compaction or rewind forgets views, a child agent starts without them).
func recordRead(env *tool.Env, t target, rec tool.FileRead) (unchanged bool) {
	if env.Files == nil {
		return false
	}
	prev, ok := env.Files.Lookup(t.real)
	env.Files.Record(t.real, rec)
	return ok && prev.View != "" && prev.View == rec.View && prev.Hash == rec.Hash
}

// keepLineBytes is as much of a line as Read may show: maxLineChars characters.
const keepLineBytes = maxLineChars*utf8.UTFMax + 1

// lineReader reads lines keeping no more of each than Read shows.
type lineReader struct {
	r    *bufio.Reader
	head []byte
}

// next reads the next line: its first keepLineBytes bytes (without the newline, and without
// a \r before it when they hold the whole line), and its length in characters (a \r before
// the newline not counted). ok is false at the end of the input. head is valid until the
// next call.
func (lr *lineReader) next() (head []byte, chars int, ok bool, err error) {
	lr.head = lr.head[:0]
	size := 0
	var last byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		complete := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		if room := keepLineBytes - len(lr.head); room > 0 {
			lr.head = append(lr.head, chunk[:min(room, len(chunk))]...)
		}
		for _, c := range chunk {
			if !isContinuation(c) {
				chars++
			}
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		size += len(chunk)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && !errors.Is(err, io.EOF):
			return nil, 0, false, err
		case !complete && size == 0:
			return nil, 0, false, nil
		}
		if last == '\r' {
			chars--
			if len(lr.head) == size {
				lr.head = lr.head[:size-1]
			}
		}
		return lr.head, chars, true, nil
	}
}

func isContinuation(c byte) bool { return c&0xC0 == 0x80 }

// formatLine formats line n (its text without the newline) as Read shows it.
func formatLine(n int, line string) string {
	line = strings.TrimSuffix(line, "\r")
	return numberedLine(n, []byte(line), utf8.RuneCountInString(line))
}

// numberedLine formats line n as Read shows it: its number, a tab, its text (head, the line
// or its start) cut at maxLineChars characters with a note of its length (chars).
func numberedLine(n int, head []byte, chars int) string {
	line := string(head)
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	if chars > maxLineChars {
		i, k := 0, 0
		for i = range line {
			if k == maxLineChars {
				break
			}
			k++
		}
		line = fmt.Sprintf("%s… [line truncated: %d chars]", line[:i], chars)
	}
	return strconv.Itoa(n) + "\t" + line + "\n"
}

// imageType returns the media type of an image Read returns as an image block, by its magic
// bytes, or "".
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func readImage(env *tool.Env, t target, f *os.File, info os.FileInfo, mediaType string) tool.Result {
	if info.Size() > maxImageBytes {
		return tool.Errorf("%s is a %d KB image, over the %d KB limit. Make a smaller copy with Bash (e.g. `convert in.png -resize 50%% out.png`) and read that.",
			t.abs, info.Size()>>10, maxImageBytes>>10)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	if recordRead(env, t, tool.FileRead{ModTime: info.ModTime(), Size: info.Size(), Hash: hashOf(data), View: "image"}) {
		return tool.Text(unchangedStub)
	}
	return tool.Result{Content: []message.Block{
		message.Text(fmt.Sprintf("Image %s (%s, %d KB):", t.abs, mediaType, (len(data)+1023)>>10)),
		{Type: message.TypeImage, Source: &message.ImageSource{Type: "base64", MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(data)}},
	}}
}
