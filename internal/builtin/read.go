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
	"strings"
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
	t := resolve(env.State, in.FilePath)
	info, err := os.Stat(t.real)
	if err != nil {
		if notExist(err) {
			if target, lerr := os.Readlink(t.abs); lerr == nil {
				return tool.Errorf("%s is a symlink to %s, which does not exist.", t.abs, target)
			}
			return tool.Errorf("File does not exist: %s (working directory: %s).", t.abs, env.State.Cwd)
		}
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	if info.IsDir() {
		return tool.Errorf("%s is a directory. Use Glob to find files in it, or Bash `ls` to list it.", t.abs)
	}
	if !info.Mode().IsRegular() {
		return tool.Errorf("%s is not a regular file (%s); Read only reads files.", t.abs, info.Mode().Type())
	}
	f, err := os.Open(t.real)
	if err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	defer f.Close()
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

// readText formats lines like `cat -n`: the number right-aligned in six columns, a tab, the
// line. It reads the whole file to hash it, but keeps only the requested lines.
// A file in another encoding than UTF-8 is decoded on the way (enc); the hash is of its bytes.
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
	r := bufio.NewReaderSize(src, 64<<10)
	var out strings.Builder
	lineNo, shown, last := 0, 0, 0
	stopped := false // output hit maxReadBytes
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			lineNo++
			if lineNo >= start && shown < limit && !stopped {
				text := formatLine(lineNo, line)
				if out.Len()+len(text) > maxReadBytes {
					stopped = true
				} else {
					out.WriteString(text)
					shown++
					last = lineNo
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return tool.Errorf("Cannot read %s: %v", t.abs, err)
		}
	}
	partial := start > 1 || last < lineNo
	if env.Files != nil {
		env.Files.Record(t.real, tool.FileRead{ModTime: info.ModTime(), Size: info.Size(), Hash: hex.EncodeToString(h.Sum(nil)), Partial: partial})
	}
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
	return tool.Text(strings.TrimSuffix(out.String(), "\n"))
}

func formatLine(n int, line string) string {
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	if len(line) > maxLineChars {
		chars := 0
		for i := range line {
			if chars == maxLineChars {
				line = fmt.Sprintf("%s… [line truncated: %d chars]", line[:i], utf8.RuneCountInString(line))
				break
			}
			chars++
		}
	}
	return fmt.Sprintf("%6d\t%s\n", n, line)
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
	if env.Files != nil {
		env.Files.Record(t.real, tool.FileRead{ModTime: info.ModTime(), Size: info.Size(), Hash: hashOf(data)})
	}
	return tool.Result{Content: []message.Block{
		message.Text(fmt.Sprintf("Image %s (%s, %d KB):", t.abs, mediaType, (len(data)+1023)>>10)),
		{Type: message.TypeImage, Source: &message.ImageSource{Type: "base64", MediaType: mediaType, Data: base64.StdEncoding.EncodeToString(data)}},
	}}
}
