package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// node is one JSON value with the byte offset it starts at, so validation can name a line and
// column. encoding/json gives no positions for values, hence this small tree.
type node struct {
	kind    kind
	off     int
	raw     json.RawMessage
	members []member // kindObject, in file order
	elems   []*node  // kindArray
}

type member struct {
	key string
	off int
	val *node
}

type kind int

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// parseTree parses data into a node tree. A syntax error is returned as *posError with the
// offset the decoder stopped at.
func parseTree(data []byte) (*node, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			// Offset is just past the offending byte, or the length at an unexpected end.
			off := int(se.Offset)
			if off < len(data) {
				off = max(off-1, 0)
			}
			return nil, &posError{off: off, msg: "invalid JSON: " + se.Error()}
		}
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, &posError{off: len(data), msg: "invalid JSON: " + err.Error()}
	}
	p := &treeParser{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	n, err := p.value()
	if err != nil {
		return nil, &posError{off: p.start(), msg: "invalid JSON: " + err.Error()}
	}
	return n, nil
}

// errOffset is where a parse error happened: a posError's offset, else the start.
func errOffset(err error) int {
	var pe *posError
	if errors.As(err, &pe) {
		return pe.off
	}
	return 0
}

type posError struct {
	off int
	msg string
}

func (e *posError) Error() string { return e.msg }

type treeParser struct {
	data []byte
	dec  *json.Decoder
}

// start is the offset of the next token: the decoder's offset moved past whitespace and the
// separators it has not consumed yet.
func (p *treeParser) start() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *treeParser) value() (*node, error) {
	off := p.start()
	tok, err := p.dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	n := &node{off: off}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = kindObject
			for p.dec.More() {
				koff := p.start()
				ktok, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := ktok.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v, not a string", ktok)
				}
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.members = append(n.members, member{key: key, off: koff, val: v})
			}
		case '[':
			n.kind = kindArray
			for p.dec.More() {
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
		default:
			return nil, fmt.Errorf("unexpected %v", t)
		}
		if _, err := p.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case bool:
		n.kind = kindBool
	case json.Number:
		n.kind = kindNumber
	case string:
		n.kind = kindString
	case nil:
		n.kind = kindNull
	}
	n.raw = json.RawMessage(p.data[off:p.dec.InputOffset()])
	return n, nil
}

// lineCol turns a byte offset into a 1-based line and column (in bytes).
func lineCol(data []byte, off int) (line, col int) {
	off = min(off, len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}
