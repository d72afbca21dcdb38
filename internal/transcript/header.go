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
// tools) fall back to a full decode.
func parseHeader(line []byte) (header, error) {
	if h, ok := fastHeader(line); ok {
		return h, nil
	}
	var w struct {
		Type   Type    `json:"type"`
		UUID   string  `json:"uuid"`
		Parent *string `json:"parentUuid"`
	}
	if err := json.Unmarshal(line, &w); err != nil || w.Type == "" {
		return header{}, errNoHeader
	}
	return header{Type: w.Type, UUID: w.UUID, Parent: derefStr(w.Parent)}, nil
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
