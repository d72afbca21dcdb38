package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"
)

// indexVersion is the version of the listing index format.
const indexVersion = 2

// firstPromptMax caps the first prompt kept in the index, in bytes.
const firstPromptMax = 200

// indexFile is the listing summary of one transcript, kept beside it as <id>.index.json and
// rewritten on every Sync. It is a cache: Size says how much of the transcript it covers, and
// a reader catches up by scanning only the bytes after Size (or rebuilds it if the transcript
// is shorter).
type indexFile struct {
	Version     int    `json:"version"`
	Size        int64  `json:"size"`
	FirstPrompt string `json:"firstPrompt,omitempty"`
	Title       string `json:"title,omitempty"`
	// Branch is the git branch the first prompt was written on.
	Branch string `json:"branch,omitempty"`
	// Messages counts the user and assistant entries in the file, all branches included.
	Messages int `json:"messages"`
}

func indexPath(transcript string) string {
	return strings.TrimSuffix(transcript, ".jsonl") + ".index.json"
}

// add accounts for e, written so that the file is now size bytes long.
func (ix *indexFile) add(e Entry, size int64) {
	ix.Size = size
	switch e.Type {
	case TypeUser, TypeAssistant:
		ix.Messages++
		if e.Type == TypeUser && ix.FirstPrompt == "" && e.Message != nil {
			ix.FirstPrompt, ix.Branch = clip(e.Message.TextOf(), firstPromptMax), e.GitBranch
		}
	case TypeCustomTitle:
		var t string
		if json.Unmarshal(e.Value, &t) == nil {
			ix.Title = t
		}
	}
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func readIndex(transcript string) (indexFile, bool) {
	var ix indexFile
	b, err := os.ReadFile(indexPath(transcript))
	if err != nil || json.Unmarshal(b, &ix) != nil || ix.Version != indexVersion {
		return indexFile{}, false
	}
	return ix, true
}

// writeIndex replaces the index by rename. It is not synced: after a crash a stale or missing
// index only costs a rescan.
func writeIndex(transcript string, ix indexFile) error {
	ix.Version = indexVersion
	b, err := json.Marshal(ix)
	if err != nil {
		return err
	}
	path := indexPath(transcript)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-index-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// refreshIndex returns the index of r[0:size], reading only what the stored index does not
// cover. Lines are classified from their first bytes, as replay does; only the first prompt
// (a user entry that opens with text) and titles are decoded, so catching up on a file another
// process appended to runs at memory speed.
func refreshIndex(transcript string, r io.ReaderAt, size int64) (indexFile, error) {
	ix, ok := readIndex(transcript)
	if !ok || ix.Size > size {
		ix = indexFile{}
	}
	if ix.Size == size {
		return ix, nil
	}
	lr := newLineReader(io.NewSectionReader(r, ix.Size, size-ix.Size), ix.Size)
	lr.max = indexLineMax
	for {
		line, _, err := lr.next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return ix, nil
			}
			return ix, fmt.Errorf("index %s: %w", transcript, err)
		}
		ix.Size = lr.off
		t, ok := indexType(line)
		if !ok {
			continue
		}
		switch t {
		case TypeUser:
			ix.Messages++
			if ix.FirstPrompt == "" && opensWithText(line) {
				if lr.cut {
					ix.FirstPrompt = clip(textPrefix(line), firstPromptMax)
				} else if e, err := decodeEntry(line); err == nil && e.Message != nil {
					ix.FirstPrompt, ix.Branch = clip(e.Message.TextOf(), firstPromptMax), e.GitBranch
				}
			}
		case TypeAssistant:
			ix.Messages++
		case TypeCustomTitle:
			var e Entry
			if !lr.cut && json.Unmarshal(line, &e) == nil {
				ix.add(e, lr.off)
			}
		}
	}
}

// indexLineMax is as much of a line as the index reads: its type and the start of its text are
// in the first bytes, so a line of any length costs the index this much.
const indexLineMax = 64 << 10

// textPrefix returns the start of the first text in a user entry cut short (see
// opensWithText): the JSON string is decoded as far as line holds it.
func textPrefix(line []byte) string {
	i := bytes.Index(line, []byte(`"role":"user","content":`))
	if i < 0 {
		return ""
	}
	rest := line[i+len(`"role":"user","content":`):]
	if j := bytes.Index(rest, []byte(`"text":`)); bytes.HasPrefix(rest, []byte("[")) && j >= 0 {
		rest = rest[j+len(`"text":`):]
	}
	lit := rest[:min(len(rest), 4*firstPromptMax)]
	if len(lit) == 0 || lit[0] != '"' {
		return ""
	}
	var s string
	for j := 1; j < len(lit); j++ {
		switch lit[j] {
		case '\\':
			j++
		case '"':
			if json.Unmarshal(lit[:j+1], &s) == nil {
				return s
			}
			return ""
		}
	}
	// The literal runs on past what was read: close it where it decodes (a cut may split an
	// escape).
	for k := len(lit); k > 1 && k > len(lit)-8; k-- {
		if json.Unmarshal(append(slices.Clip(lit[:k]), '"'), &s) == nil {
			return s
		}
	}
	return ""
}

// opensWithText reports whether a user entry's message starts with text — a prompt, not tool
// results — the only ones worth decoding for the first prompt. The message follows the header
// fields, so only the start of the line is searched.
func opensWithText(line []byte) bool {
	head := line[:min(len(line), 4<<10)]
	i := bytes.Index(head, []byte(`"role":"user","content":`))
	if i < 0 {
		return false
	}
	rest := head[i+len(`"role":"user","content":`):]
	return bytes.HasPrefix(rest, []byte(`[{"type":"text"`)) || bytes.HasPrefix(rest, []byte(`"`))
}
