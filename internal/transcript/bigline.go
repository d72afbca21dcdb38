package transcript

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/message"
)

// Lines of at least bigLine bytes have their string values of at least bigLiteral bytes
// decoded apart: encoding/json passes over every byte of a value three times, byte by byte
// (validate, scan, unquote), which made a 100 MB line cost seconds; the literals are found
// and unquoted here with memchr, and only the rest of the line goes through the decoder.
const (
	bigLine    = 1 << 20
	bigLiteral = 64 << 10
)

// literalMark names the placeholder of big literal i in the line the decoder sees; NUL
// bytes do not occur in keel's own strings.
func literalMark(i int) string { return "\x00keel-literal-" + strconv.Itoa(i) + "\x00" }

// decodeBigEntry decodes a big line with its big literals taken out; ok is false when the
// line has none, or is not the plain JSON the fast path reads (the caller then decodes it
// the ordinary way).
func decodeBigEntry(b []byte) (e Entry, ok bool) {
	var (
		skeleton []byte
		lits     [][]byte // big literals as they are in b, quotes included
		from     int
	)
	for i := 0; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		start := i + q
		end := literalEnd(b, start)
		if end < 0 {
			return Entry{}, false
		}
		if end-start >= bigLiteral {
			skeleton = append(skeleton, b[from:start]...)
			mark, _ := json.Marshal(literalMark(len(lits)))
			skeleton = append(skeleton, mark...)
			lits = append(lits, b[start:end])
			from = end
		}
		i = end
	}
	if len(lits) == 0 {
		return Entry{}, false
	}
	skeleton = append(skeleton, b[from:]...)
	values := make([]string, len(lits))
	for i, lit := range lits {
		s, ok := unquoteLiteral(lit)
		if !ok {
			return Entry{}, false
		}
		values[i] = s
	}
	e, err := decodeSmall(skeleton)
	if err != nil {
		return Entry{}, false
	}
	r := literalRestorer{values: values, lits: lits}
	r.entry(&e)
	return e, r.used == len(lits)
}

// literalEnd returns the offset just past the string literal opening at b[start], or -1.
func literalEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		j := i + q
		k := j
		for k > start+1 && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
	return -1
}

// unquoteLiteral decodes a JSON string literal as encoding/json does; ok is false for one it
// would refuse or change (a control character, invalid UTF-8), which the caller leaves to it.
func unquoteLiteral(lit []byte) (string, bool) {
	body := lit[1 : len(lit)-1]
	var sb strings.Builder
	sb.Grow(len(body))
	for len(body) > 0 {
		k := bytes.IndexByte(body, '\\')
		plain := body
		if k >= 0 {
			plain = body[:k]
		}
		if !utf8.Valid(plain) || hasControl(plain) {
			return "", false
		}
		sb.Write(plain)
		if k < 0 {
			break
		}
		body = body[k:]
		if len(body) < 2 {
			return "", false
		}
		switch c := body[1]; c {
		case '"', '\\', '/':
			sb.WriteByte(c)
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, n := unicodeEscape(body)
			if n == 0 {
				return "", false
			}
			sb.WriteRune(r)
			body = body[n:]
			continue
		default:
			return "", false
		}
		body = body[2:]
	}
	return sb.String(), true
}

// unicodeEscape reads \uXXXX (a surrogate pair as two) at the start of b; n is 0 when it is
// not one.
func unicodeEscape(b []byte) (rune, int) {
	hex := func(b []byte) (rune, bool) {
		if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[2:6]), 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex(b)
	if !ok {
		return 0, 0
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex(b[6:]); ok {
			if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
				return d, 12
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}

func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// literalRestorer puts the big literals back where their placeholders landed: string fields
// get the decoded value, raw JSON fields the literal as it was.
type literalRestorer struct {
	values []string
	lits   [][]byte
	used   int
}

func (r *literalRestorer) str(s *string) {
	if !strings.HasPrefix(*s, "\x00keel-literal-") {
		return
	}
	for i := range r.values {
		if *s == literalMark(i) {
			*s = r.values[i]
			r.used++
			return
		}
	}
}

func (r *literalRestorer) raw(b *json.RawMessage) {
	if !bytes.Contains(*b, []byte(`\u0000keel-literal-`)) {
		return
	}
	for i := range r.lits {
		mark, _ := json.Marshal(literalMark(i))
		if n := bytes.Count(*b, mark); n > 0 {
			*b = bytes.ReplaceAll(*b, mark, r.lits[i])
			r.used += n
		}
	}
}

func (r *literalRestorer) entry(e *Entry) {
	for _, s := range []*string{&e.Text, &e.Summary, &e.Subtype, &e.ToolName} {
		r.str(s)
	}
	r.raw(&e.Value)
	for t, v := range e.Metadata {
		r.raw(&v)
		e.Metadata[t] = v
	}
	if e.Message != nil {
		r.blocks(e.Message.Content)
	}
}

func (r *literalRestorer) blocks(bs []message.Block) {
	for i := range bs {
		b := &bs[i]
		for _, s := range []*string{&b.Text, &b.Thinking, &b.Signature, &b.Data, &b.Name, &b.ID, &b.ToolUseID} {
			r.str(s)
		}
		for _, raw := range []*json.RawMessage{&b.Input, &b.Citations, &b.Raw} {
			r.raw(raw)
		}
		if b.Source != nil {
			r.str(&b.Source.Data)
		}
		r.blocks(b.Content)
	}
}
