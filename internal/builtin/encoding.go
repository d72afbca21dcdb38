package builtin

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// textEncoding is how a text file is stored. Read shows the text as UTF-8; Edit and Write put
// changes back in the same encoding, behind the same byte-order mark, so a Latin-1 or UTF-16
// file stays one.
type textEncoding struct {
	name string
	bom  []byte
	enc  encoding.Encoding // nil: UTF-8
	unit int               // bytes per code unit: matches are aligned to it
}

var utf8Text = textEncoding{name: "UTF-8", unit: 1}

// errBinary reports content that is not text keel can show: what it is, and a detail (the
// detected type) for the message.
type errBinary struct{ kind, detail string }

func (e *errBinary) Error() string {
	if e.detail == "" {
		return e.kind
	}
	return e.kind + " (" + e.detail + ")"
}

// Byte-order marks.
var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
	bomUTF32LE = []byte{0xFF, 0xFE, 0x00, 0x00}
	bomUTF32BE = []byte{0x00, 0x00, 0xFE, 0xFF}
)

// detectEncoding says how data (a whole file, or with partial the head of a big one) is
// encoded. The content sniffing — binary formats, byte-order marks — is the WHATWG algorithm
// of net/http's DetectContentType, which looks at the first 512 bytes; UTF-32's byte-order
// marks, which it takes for UTF-16's, are told apart first; whether the bytes really are
// UTF-8 is checked on all of data.
func detectEncoding(data []byte, partial bool) (textEncoding, error) {
	if len(data) == 0 {
		return utf8Text, nil
	}
	if bytes.HasPrefix(data, bomUTF32LE) || bytes.HasPrefix(data, bomUTF32BE) {
		return textEncoding{}, &errBinary{kind: "UTF-32 text, which keel does not read"}
	}
	sniffed := http.DetectContentType(data)
	media, params, _ := mime.ParseMediaType(sniffed)
	switch params["charset"] {
	case "utf-16le":
		return textEncoding{name: "UTF-16LE", bom: bomUTF16LE, enc: unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), unit: 2}, nil
	case "utf-16be":
		return textEncoding{name: "UTF-16BE", bom: bomUTF16BE, enc: unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), unit: 2}, nil
	}
	if !strings.HasPrefix(media, "text/") {
		return textEncoding{}, &errBinary{kind: "a binary file", detail: sniffed}
	}
	if bytes.HasPrefix(data, bomUTF8) {
		return textEncoding{name: "UTF-8 with BOM", bom: bomUTF8, unit: 1}, nil
	}
	if utf8.Valid(data) || partial && validExceptTail(data) {
		return utf8Text, nil
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return textEncoding{}, &errBinary{kind: "a binary file", detail: "it contains NUL bytes"}
	}
	return legacyEncoding(data), nil
}

// validExceptTail reports whether data is valid UTF-8 but for a rune cut at its end (the head
// of a big file cut mid-rune).
func validExceptTail(data []byte) bool {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			return utf8.Valid(data[:i])
		}
	}
	return false
}

// legacyEncoding picks the single-byte encoding of text that is not UTF-8. Windows-1252 has
// printable characters (curly quotes, €) at 0x80–0x9F where ISO-8859-1 has control codes;
// five of those bytes Windows-1252 does not define, and ISO-8859-1 maps every byte, so a file
// using one of them is read as ISO-8859-1 and still round-trips byte for byte.
func legacyEncoding(data []byte) textEncoding {
	c1 := false
	for _, b := range data {
		switch {
		case b == 0x81 || b == 0x8D || b == 0x8F || b == 0x90 || b == 0x9D:
			return textEncoding{name: "ISO-8859-1", enc: charmap.ISO8859_1, unit: 1}
		case b >= 0x80 && b <= 0x9F:
			c1 = true
		}
	}
	if c1 {
		return textEncoding{name: "Windows-1252", enc: charmap.Windows1252, unit: 1}
	}
	return textEncoding{name: "ISO-8859-1", enc: charmap.ISO8859_1, unit: 1}
}

// decode returns the text of body (the file without its byte-order mark).
func (e textEncoding) decode(body []byte) (string, error) {
	if e.enc == nil {
		return string(body), nil
	}
	b, err := e.enc.NewDecoder().Bytes(body)
	if err != nil {
		return "", fmt.Errorf("decode %s: %w", e.name, err)
	}
	return string(b), nil
}

// encode returns s in the file's encoding; a character the encoding cannot hold is an error
// naming it.
func (e textEncoding) encode(s string) ([]byte, error) {
	if e.enc == nil {
		return []byte(s), nil
	}
	b, err := e.enc.NewEncoder().Bytes([]byte(s))
	if err == nil {
		return b, nil
	}
	for _, r := range s {
		if _, rerr := e.enc.NewEncoder().Bytes([]byte(string(r))); rerr != nil {
			return nil, &errUnencodable{enc: e.name, r: r}
		}
	}
	return nil, fmt.Errorf("encode %s: %w", e.name, err)
}

// errUnencodable is text the file's encoding has no bytes for.
type errUnencodable struct {
	enc string
	r   rune
}

func (e *errUnencodable) Error() string {
	return fmt.Sprintf("the file is %s, which cannot hold %q (U+%04X); nothing was changed. Use only characters %s has, or convert the file to UTF-8 first (e.g. with iconv)",
		e.enc, e.r, e.r, e.enc)
}

// note is what Read adds after the text of a file that is not plain UTF-8, so the model knows
// its edits will be written in that encoding.
func (e textEncoding) note() string {
	if e.enc == nil {
		return ""
	}
	return fmt.Sprintf("[The file is %s; it is shown as UTF-8, and Edit and Write keep it %s.]", e.name, e.name)
}

// splice replaces old with repl in the file content data, in its own encoding, touching no
// other byte: matches are found on the encoded bytes, aligned to the encoding's code units.
// Line endings: in a file that uses CRLF, the "\n" of old and repl mean "\r\n" (the model
// reads lines without their "\r"), unless only the text as given matches. It returns the new
// content, the number of matches (0: not found; more than one without all: nothing
// replaced), the byte offset of the first in the body, and the replacement text used.
func (e textEncoding) splice(data []byte, old, repl string, all, crlf bool) ([]byte, int, int, string, error) {
	body := data[len(e.bom):]
	try := [][2]string{{old, repl}}
	if crlf {
		try = [][2]string{{toCRLF(old), toCRLF(repl)}, {old, repl}}
	}
	for _, p := range try {
		ob, err := e.encode(p[0])
		if err != nil {
			return nil, 0, 0, "", err
		}
		at := e.matches(body, ob)
		if len(at) == 0 {
			continue
		}
		if len(at) > 1 && !all {
			return nil, len(at), at[0], "", nil
		}
		rb, err := e.encode(p[1])
		if err != nil {
			return nil, 0, 0, "", err
		}
		out := make([]byte, 0, len(data)+len(at)*(len(rb)-len(ob)))
		out = append(out, e.bom...)
		prev := 0
		for _, i := range at {
			out = append(append(out, body[prev:i]...), rb...)
			prev = i + len(ob)
		}
		return append(out, body[prev:]...), len(at), at[0], p[1], nil
	}
	return nil, 0, 0, "", nil
}

// sniffEncoding detects the encoding of the open file f, whose first bytes are head: from the
// whole file when it is small enough to read at once, else from head. It leaves f at its start.
func sniffEncoding(f io.ReadSeeker, head []byte, size int64) (textEncoding, error) {
	data, partial := head, size > int64(len(head))
	if partial && size <= wholeSniffBytes {
		all, err := io.ReadAll(io.LimitReader(f, wholeSniffBytes)) // it may have grown since
		if err != nil {
			return textEncoding{}, err
		}
		data, partial = all, false
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return textEncoding{}, err
	}
	return detectEncoding(data, partial)
}

// wholeSniffBytes is the largest file whose every byte is checked for valid UTF-8 before it is
// read; a bigger one is judged by its head.
const wholeSniffBytes = 8 << 20

// matches returns the offsets of the non-overlapping occurrences of pat in body that start on
// a code unit boundary.
func (e textEncoding) matches(body, pat []byte) []int {
	if len(pat) == 0 {
		return nil
	}
	var at []int
	for from := 0; from <= len(body)-len(pat); {
		i := bytes.Index(body[from:], pat)
		if i < 0 {
			break
		}
		i += from
		if i%e.unit != 0 {
			from = i + 1
			continue
		}
		at = append(at, i)
		from = i + len(pat)
	}
	return at
}

// toCRLF turns every line ending of s into "\r\n".
func toCRLF(s string) string {
	return string(bytes.ReplaceAll(bytes.ReplaceAll([]byte(s), []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n")))
}

// keepEncoding encodes text, the whole new content of a file that held old, the way old was
// stored: same encoding, same byte-order mark, CRLF line endings if old used them. Content
// that was not text is replaced by text as given (UTF-8).
func keepEncoding(old []byte, text string) ([]byte, error) {
	enc, err := detectEncoding(old, false)
	if err != nil {
		return []byte(text), nil
	}
	if oldText, err := enc.decode(old[len(enc.bom):]); err == nil && usesCRLF(oldText) && !strings.Contains(text, "\r\n") {
		text = toCRLF(text)
	}
	if len(enc.bom) > 0 {
		text = strings.TrimPrefix(text, "\ufeff")
	}
	body, err := enc.encode(text)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), enc.bom...), body...), nil
}
