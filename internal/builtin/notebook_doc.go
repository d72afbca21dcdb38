package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// nbDoc is a Jupyter notebook as bytes plus the places in them NotebookEdit changes: the cells
// array and each cell's members. Edits splice new bytes into those places and leave every
// other byte alone, so outputs, metadata, key order, indentation and line endings stay exactly
// as the file had them.
type nbDoc struct {
	data []byte
	// cellsOpen and cellsClose are the offsets of the cells array's '[' and ']'.
	cellsOpen, cellsClose int
	cells                 []nbCell
	minor                 int
	style                 nbStyle
}

// nbCell is one cell object: its bytes are data[start:end].
type nbCell struct {
	start, end int
	members    []nbMember
	id         string
	cellType   string
}

// nbMember is one "key": value pair of a cell; the value is data[valStart:valEnd].
type nbMember struct {
	key              string
	keyStart, keyEnd int
	valStart, valEnd int
}

// nbStyle is how the file is formatted, so new bytes look like the old ones.
type nbStyle struct {
	nl string // line ending: "\n" or "\r\n"
	// unit is one level of indentation; empty when the file is on one line.
	unit string
	// colon is what separates a key from its value (": " for Jupyter's files).
	colon string
	// comma separates members and elements on one line (compact files only).
	comma string
	// ascii is set when the file escapes every non-ASCII character (\u00e9), as some
	// writers do; new strings then do the same.
	ascii bool
	// sorted is set when the cells' keys are in sorted order, as Jupyter writes them.
	sorted bool
}

func (c *nbCell) member(key string) *nbMember {
	for i := range c.members {
		if c.members[i].key == key {
			return &c.members[i]
		}
	}
	return nil
}

// errNotNotebook explains why bytes are not a notebook NotebookEdit can change.
var errNotNotebook = errors.New("not a Jupyter notebook")

// parseNotebook finds the cells of data and how it is formatted.
func parseNotebook(data []byte) (*nbDoc, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	d := &nbDoc{data: data, cellsOpen: -1}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: the top level is not a JSON object", errNotNotebook)
	}
	for dec.More() {
		m, err := d.nextKey(dec)
		if err != nil {
			return nil, err
		}
		switch m.key {
		case "cells":
			if err := d.parseCells(dec, m.valStart); err != nil {
				return nil, err
			}
			d.style.unit = indentBefore(data, m.keyStart)
		case "nbformat_minor":
			var n json.Number
			if err := dec.Decode(&n); err != nil {
				return nil, fmt.Errorf("%w: nbformat_minor is not a number", errNotNotebook)
			}
			m, _ := strconv.Atoi(n.String())
			d.minor = m
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("%s: %w", m.key, err)
			}
		}
	}
	if d.cellsOpen < 0 {
		return nil, fmt.Errorf("%w: it has no \"cells\" list", errNotNotebook)
	}
	d.detectStyle()
	return d, nil
}

// nextKey reads the next member key of the object the decoder is in and returns where the key
// and its value start.
func (d *nbDoc) nextKey(dec *json.Decoder) (nbMember, error) {
	m := nbMember{keyStart: skipSeparators(d.data, int(dec.InputOffset()))}
	tok, err := dec.Token()
	if err != nil {
		return m, err
	}
	m.key, _ = tok.(string)
	m.keyEnd = int(dec.InputOffset())
	m.valStart = skipSeparators(d.data, m.keyEnd)
	return m, nil
}

func (d *nbDoc) parseCells(dec *json.Decoder, at int) error {
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('[') {
		return fmt.Errorf("%w: \"cells\" is not a list", errNotNotebook)
	}
	d.cellsOpen = at
	for dec.More() {
		start := skipSeparators(d.data, int(dec.InputOffset()))
		c, err := d.parseCell(dec, start)
		if err != nil {
			return fmt.Errorf("cell %d: %w", len(d.cells), err)
		}
		d.cells = append(d.cells, c)
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	d.cellsClose = int(dec.InputOffset()) - 1
	return nil
}

func (d *nbDoc) parseCell(dec *json.Decoder, start int) (nbCell, error) {
	c := nbCell{start: start}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return c, fmt.Errorf("%w: a cell is not a JSON object", errNotNotebook)
	}
	for dec.More() {
		m, err := d.nextKey(dec)
		if err != nil {
			return c, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return c, err
		}
		m.valEnd = int(dec.InputOffset())
		c.members = append(c.members, m)
		switch m.key {
		case "id":
			_ = json.Unmarshal(raw, &c.id)
		case "cell_type":
			_ = json.Unmarshal(raw, &c.cellType)
		}
	}
	if _, err := dec.Token(); err != nil {
		return c, err
	}
	c.end = int(dec.InputOffset())
	return c, nil
}

// skipSeparators returns the offset of the first byte at or after i that is not white space,
// a comma or a colon: the start of the next token.
func skipSeparators(data []byte, i int) int {
	for i < len(data) && strings.IndexByte(" \t\r\n,:", data[i]) >= 0 {
		i++
	}
	return i
}

// indentBefore returns the white space between the start of the line holding offset i and i,
// or "" when i is not the first token of its line.
func indentBefore(data []byte, i int) string {
	j := i
	for j > 0 && (data[j-1] == ' ' || data[j-1] == '\t') {
		j--
	}
	if j > 0 && data[j-1] != '\n' {
		return ""
	}
	return string(data[j:i])
}

func (d *nbDoc) detectStyle() {
	s := &d.style
	s.nl = "\n"
	if bytes.Contains(d.data, []byte("\r\n")) {
		s.nl = "\r\n"
	}
	s.colon, s.comma = ": ", ", "
	s.sorted = true
	for _, c := range d.cells {
		if len(c.members) > 0 {
			m := c.members[0]
			s.colon = string(d.data[m.keyEnd:m.valStart])
		}
		if len(c.members) > 1 && s.unit == "" {
			s.comma = string(d.data[c.members[0].valEnd:c.members[1].keyStart])
		}
		keys := make([]string, len(c.members))
		for i, m := range c.members {
			keys[i] = m.key
		}
		s.sorted = s.sorted && slices.IsSorted(keys)
	}
	s.ascii = !hasNonASCII(d.data) && bytes.Contains(d.data, []byte(`\u`))
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// cellIndex finds the cell with id, or for notebooks whose cells have no ids the cell-N index
// Read shows for them.
func (d *nbDoc) cellIndex(id string) (int, bool) {
	for i, c := range d.cells {
		if c.id == id {
			return i, true
		}
	}
	if n, ok := strings.CutPrefix(id, "cell-"); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(d.cells) && d.cells[i].id == "" {
			return i, true
		}
	}
	return 0, false
}

// usesIDs reports whether new cells need an id: nbformat 4.5 requires them, and a notebook
// whose cells have ids keeps having them.
func (d *nbDoc) usesIDs() bool {
	if d.minor >= 5 {
		return true
	}
	return slices.ContainsFunc(d.cells, func(c nbCell) bool { return c.id != "" })
}

// cellIndent and memberIndent are the indentation of a cell object and of its members.
func (d *nbDoc) cellIndent() string {
	if d.style.unit == "" {
		return ""
	}
	for _, c := range d.cells {
		if in := indentBefore(d.data, c.start); in != "" {
			return in
		}
	}
	return strings.Repeat(d.style.unit, 2)
}

func (d *nbDoc) memberIndent() string {
	if d.style.unit == "" {
		return ""
	}
	for _, c := range d.cells {
		for _, m := range c.members {
			if in := indentBefore(d.data, m.keyStart); in != "" {
				return in
			}
		}
	}
	return d.cellIndent() + d.style.unit
}

// splice returns data with [from, to) replaced by repl.
func splice(data []byte, from, to int, repl string) []byte {
	out := make([]byte, 0, len(data)-(to-from)+len(repl))
	out = append(out, data[:from]...)
	out = append(out, repl...)
	return append(out, data[to:]...)
}
