// Package frontmatter splits a markdown file into its YAML frontmatter and body. Agents,
// skills, commands and rules files all use it, so they agree on what counts as frontmatter and
// on the line numbers reported in errors.
package frontmatter

import (
	"bytes"
)

// Document is a markdown file cut at its frontmatter fences.
type Document struct {
	// YAML is the text between the fences; nil when the file has no frontmatter.
	YAML []byte
	// YAMLLine is the 1-based line of the file where YAML starts, so a parser's line numbers
	// can be turned into the file's.
	YAMLLine int
	// Body is everything after the closing fence (or the whole file without frontmatter).
	Body []byte
}

// Split cuts data at a leading "---" fence and the next line that is exactly "---" (or "...").
// A file whose first line is not a fence, or whose frontmatter never closes, has no
// frontmatter: all of it is body. A UTF-8 byte-order mark and CRLF line ends are accepted.
func Split(data []byte) Document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	first, rest, ok := cutLine(data)
	if !ok || !isFence(first, false) {
		return Document{Body: data}
	}
	offset := len(data) - len(rest)
	for rest := rest; len(rest) > 0; {
		line, next, _ := cutLine(rest)
		if isFence(line, true) {
			end := len(data) - len(rest)
			return Document{
				YAML:     data[offset:end],
				YAMLLine: 2,
				Body:     next,
			}
		}
		rest = next
	}
	return Document{Body: data}
}

func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, len(b) > 0
	}
	return b[:i], b[i+1:], true
}

func isFence(line []byte, closing bool) bool {
	line = bytes.TrimRight(line, " \t\r")
	if string(line) == "---" {
		return true
	}
	return closing && string(line) == "..."
}
