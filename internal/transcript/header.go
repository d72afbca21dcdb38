package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
)

// header is what replay needs to know about a line before deciding whether to decode it.
type header struct {
	Type   Type
	UUID   string
	Parent string
}

var errNoHeader = errors.New("line is not a transcript entry")

// parseHeader reads type, uuid and parentUuid. Lines written by keel start with exactly these
// fields, which it reads without touching the rest of the line; other lines (hand-edited, other
// tools) are scanned for the three top-level members, skipping the other values without
// decoding them.
func parseHeader(line []byte) (header, error) {
	if h, ok := fastHeader(line); ok {
		return h, nil
	}
	if h, ok := scanHeader(line, false); ok {
		return h, nil
	}
	return header{}, errNoHeader
}

func fastHeader(line []byte) (header, bool) {
	var h header
	rest, ok := bytes.CutPrefix(line, []byte(`{"type":`))
	if !ok {
		return h, false
	}
	var t string
	if t, rest, ok = plainString(rest); !ok || t == "" {
		return h, false
	}
	h.Type = Type(t)
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"uuid":`)); !ok {
		return h, false
	}
	if h.UUID, rest, ok = plainString(rest); !ok {
		return h, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"parentUuid":`)); !ok {
		return h, false
	}
	if bytes.HasPrefix(rest, []byte("null")) {
		return h, true
	}
	h.Parent, _, ok = plainString(rest)
	return h, ok
}

// plainString reads a JSON string without escapes; one with escapes is left to the full decoder.
func plainString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", nil, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return "", nil, false
	}
	s := b[1 : 1+end]
	if bytes.IndexByte(s, '\\') >= 0 {
		return "", nil, false
	}
	return string(s), b[end+2:], true
}

// scanHeader finds type, uuid and parentUuid among the top-level members of a JSON object in
// any order. Values are skipped by their structure (strings by their closing quote, objects
// and arrays by depth), not decoded, so a line that puts a long message first still costs
// little more than its length in memchr. With typeOnly it stops at the type.
func scanHeader(line []byte, typeOnly bool) (header, bool) {
	var h header
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return h, false
	}
	i = skipSpace(line, i+1)
	for i < len(line) && line[i] != '}' {
		if line[i] != '"' {
			return h, false
		}
		kEnd := stringEnd(line, i)
		if kEnd < 0 {
			return h, false
		}
		key := line[i+1 : kEnd-1]
		i = skipSpace(line, kEnd)
		if i >= len(line) || line[i] != ':' {
			return h, false
		}
		i = skipSpace(line, i+1)
		vEnd := valueEnd(line, i)
		if vEnd < 0 {
			return h, false
		}
		if dst := headerField(&h, key); dst != nil && (!typeOnly || dst == (*string)(&h.Type)) {
			v, ok := stringValue(line[i:vEnd])
			if !ok {
				return h, false
			}
			*dst = v
			if typeOnly && h.Type != "" {
				return h, true
			}
		}
		i = skipSpace(line, vEnd)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	return h, i < len(line) && h.Type != ""
}

func headerField(h *header, key []byte) *string {
	switch string(key) {
	case "type":
		return (*string)(&h.Type)
	case "uuid":
		return &h.UUID
	case "parentUuid":
		return &h.Parent
	}
	return nil
}

// stringValue reads a JSON string or null ("").
func stringValue(v []byte) (string, bool) {
	if bytes.Equal(v, []byte("null")) {
		return "", true
	}
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the JSON string starting at b[i] (a quote), or -1.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0 // backslashes right before the quote: an odd count escapes it
		for n < j-i-1 && b[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// valueEnd returns the offset just past the JSON value starting at b[i], or -1.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '\n' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// indexType classifies a line for the listing index without allocating: keel's lines by their
// first bytes, others by [scanHeader]. It returns TypeUser, TypeAssistant, TypeCustomTitle or
// "" for an entry of any other type; ok is false for a line that is not an entry.
func indexType(line []byte) (t Type, ok bool) {
	if rest, found := bytes.CutPrefix(line, []byte(`{"type":"`)); found {
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			return knownIndexType(rest[:end]), true
		}
	}
	h, ok := scanHeader(line, true)
	return knownIndexType([]byte(h.Type)), ok
}

func knownIndexType(t []byte) Type {
	switch string(t) {
	case string(TypeUser):
		return TypeUser
	case string(TypeAssistant):
		return TypeAssistant
	case string(TypeCustomTitle):
		return TypeCustomTitle
	}
	return ""
}
