package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// lineIndex maps the JSON Pointer (RFC 6901) of every object member and array element of a
// document to the line it starts on, so a problem found after decoding can name its line.
// encoding/json reports no positions for values.
type lineIndex map[string]int

// indexLines indexes data; a document that does not parse indexes as far as it got.
func indexLines(data []byte) lineIndex {
	ix := lineIndex{}
	starts := []int{0}
	for i, b := range data {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineOf := func(off int) int {
		i, found := slices.BinarySearch(starts, off)
		if !found {
			i--
		}
		return i + 1
	}
	type frame struct {
		path    string
		object  bool
		wantKey bool
		member  string // pointer of the member whose value comes next
		index   int
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*frame
	for {
		off := int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		tok, err := dec.Token()
		if err != nil {
			return ix
		}
		delim, isDelim := tok.(json.Delim)
		if isDelim && (delim == '}' || delim == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		path := ""
		if n := len(stack); n > 0 {
			top := stack[n-1]
			switch {
			case top.object && top.wantKey:
				key, _ := tok.(string)
				top.member = top.path + "/" + escapePointer(key)
				top.wantKey = false
				ix[top.member] = lineOf(off)
				continue
			case top.object:
				path = top.member
				top.wantKey = true
			default:
				path = top.path + "/" + strconv.Itoa(top.index)
				top.index++
				ix[path] = lineOf(off)
			}
		}
		if isDelim {
			stack = append(stack, &frame{path: path, object: delim == '{', wantKey: delim == '{'})
		}
	}
}

func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// pointer joins keys and indexes into a JSON Pointer.
func pointer(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(escapePointer(fmt.Sprint(p)))
	}
	return b.String()
}

// line is the line of ptr, or of its nearest indexed ancestor; 0 when none is known.
func (ix lineIndex) line(ptr string) int {
	for {
		if l, ok := ix[ptr]; ok {
			return l
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return 0
		}
		ptr = ptr[:i]
	}
}

// syntaxLine turns a decoding error into the line it happened on and a message without the
// offset jargon.
func syntaxLine(data []byte, err error) (int, string) {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		return 0, err.Error()
	}
	off = min(off, int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1, err.Error()
}
