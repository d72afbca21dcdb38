package builtin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// jsonString encodes s the way Python's json.dumps does (Jupyter writes notebooks with it):
// quotes, backslashes and control characters escaped, everything else as is — or, for a file
// that escapes non-ASCII text, as \uXXXX (surrogate pairs beyond the BMP).
func jsonString(s string, ascii bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		case ascii && r >= utf8.RuneSelf:
			if r > 0xFFFF {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// sourceLines splits a cell source the way nbformat stores it: one string per line, each but
// the last ending in its newline.
func sourceLines(src string) []string {
	if src == "" {
		return nil
	}
	lines := strings.SplitAfter(src, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// renderList renders strings as a JSON array whose opening bracket sits at a line indented by
// indent: one element a line in an indented file, on one line in a compact one.
func (d *nbDoc) renderList(items []string, indent string) string {
	s := d.style
	if len(items) == 0 {
		return "[]"
	}
	enc := make([]string, len(items))
	for i, it := range items {
		enc[i] = jsonString(it, s.ascii)
	}
	if s.unit == "" {
		return "[" + strings.Join(enc, s.comma) + "]"
	}
	inner := indent + s.unit
	return "[" + s.nl + inner + strings.Join(enc, ","+s.nl+inner) + s.nl + indent + "]"
}

// renderSource renders new source in the form the old value had: a list of lines (nbformat's
// own form, and the one for new cells) or a single string.
func (d *nbDoc) renderSource(src string, old *nbMember, indent string) string {
	if old != nil && d.data[old.valStart] == '"' {
		return jsonString(src, d.style.ascii)
	}
	return d.renderList(sourceLines(src), indent)
}

// field is one member of a cell being rendered; raw is its JSON value.
type field struct{ key, raw string }

// renderCell renders a cell object at the cells array's indentation.
func (d *nbDoc) renderCell(fields []field) string {
	s := d.style
	if s.unit == "" {
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = jsonString(f.key, s.ascii) + s.colon + f.raw
		}
		return "{" + strings.Join(parts, s.comma) + "}"
	}
	in := d.memberIndent()
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = in + jsonString(f.key, s.ascii) + s.colon + f.raw
	}
	return "{" + s.nl + strings.Join(parts, ","+s.nl) + s.nl + d.cellIndent() + "}"
}

// newCellFields are the members of a new cell of cellType, in the order the notebook's own
// cells use (sorted, as Jupyter writes them, unless the file does otherwise).
func (d *nbDoc) newCellFields(cellType, id, src string) []field {
	in := d.memberIndent()
	fields := []field{{"cell_type", jsonString(cellType, d.style.ascii)}}
	if id != "" {
		fields = append(fields, field{"id", jsonString(id, d.style.ascii)})
	}
	fields = append(fields, field{"metadata", "{}"})
	if cellType == "code" {
		fields = append(fields, field{"execution_count", "null"}, field{"outputs", "[]"})
	}
	fields = append(fields, field{"source", d.renderList(sourceLines(src), in)})
	return d.orderFields(fields, cellType)
}

// orderFields puts fields in the key order of the notebook's first cell of the same type
// (keys it lacks go last, sorted), or sorted when the notebook's cells are sorted or it has
// none of that type.
func (d *nbDoc) orderFields(fields []field, cellType string) []field {
	var model []string
	if !d.style.sorted {
		for _, c := range d.cells {
			if c.cellType == cellType {
				for _, m := range c.members {
					model = append(model, m.key)
				}
				break
			}
		}
	}
	rank := func(k string) int {
		if i := slices.Index(model, k); i >= 0 {
			return i
		}
		return len(model)
	}
	slices.SortStableFunc(fields, func(a, b field) int {
		if ra, rb := rank(a.key), rank(b.key); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.key, b.key)
	})
	return fields
}

// newCellID returns a cell id unused in d, 8 hex digits like nbformat's. It is derived from
// the notebook and the new cell rather than random, so the same edit gives the same file.
func (d *nbDoc) newCellID(seed string) string {
	for n := 0; ; n++ {
		sum := sha256.Sum256(fmt.Appendf(append([]byte(nil), d.data...), "\x00%s\x00%d", seed, n))
		id := hex.EncodeToString(sum[:4])
		if _, taken := d.cellIndex(id); !taken {
			return id
		}
	}
}

// withType re-renders cell i as cellType with source src: code cells gain an empty outputs
// list and a null execution_count, markdown cells lose them (and code cells lose attachments),
// as nbformat's schema requires; every other member keeps its bytes.
func (d *nbDoc) withType(i int, cellType, src string) string {
	c := d.cells[i]
	in := d.memberIndent()
	var fields []field
	for _, m := range c.members {
		raw := string(d.data[m.valStart:m.valEnd])
		switch m.key {
		case "cell_type":
			raw = jsonString(cellType, d.style.ascii)
		case "source":
			raw = d.renderSource(src, &m, in)
		case "outputs", "execution_count":
			if cellType != "code" {
				continue
			}
		case "attachments":
			if cellType == "code" {
				continue
			}
		}
		fields = append(fields, field{m.key, raw})
	}
	has := func(k string) bool { return slices.ContainsFunc(fields, func(f field) bool { return f.key == k }) }
	if cellType == "code" {
		if !has("execution_count") {
			fields = append(fields, field{"execution_count", "null"})
		}
		if !has("outputs") {
			fields = append(fields, field{"outputs", "[]"})
		}
	}
	if !has("source") {
		fields = append(fields, field{"source", d.renderList(sourceLines(src), in)})
	}
	if d.style.sorted {
		slices.SortStableFunc(fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	}
	return d.renderCell(fields)
}
