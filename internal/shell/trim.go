package shell

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"
)

// maxTrimLine bounds the line a trimmer holds: a longer one passes through as it comes,
// untrimmed, so output of any shape costs bounded memory.
const maxTrimLine = 64 << 10

// trimmer cleans command output as it is written, before it is kept, the way a terminal
// would have shown it and without what repeats: ANSI escape sequences are dropped; a carriage
// return followed by more text replaces the line so far (progress bars and spinners redraw
// that way), a backspace removes the character before it; a run of progress lines that
// differ only in their figures keeps its last; a line repeated three times or more is kept
// once with a count; go test -v's "=== RUN   Name" is dropped when the next line is Name's
// result, which names the test too (half the lines of a verbose run that passes). It holds the line being written and the last complete one until it
// knows what follows; Flush writes them. Not safe for concurrent use.
type trimmer struct {
	out io.Writer
	// line is the line being written; cr is set after a carriage return not yet followed
	// by anything; esc is the state of an escape sequence in progress; passing is set while
	// an overlong line passes through.
	line    []byte
	cr      bool
	esc     escState
	passing bool
	// held is the last complete line, not written yet; repeats counts its copies since.
	held    []byte
	hasHeld bool
	repeats int
	err     error
}

func newTrimmer(out io.Writer) *trimmer { return &trimmer{out: out} }

// escState tracks an escape sequence across writes.
type escState uint8

const (
	escNone    escState = iota
	escStart            // after ESC
	escCSI              // ESC [ … until a final byte
	escString           // ESC ] (OSC), P, X, ^, _ … until BEL or ESC \
	escStringE          // ESC inside a string: a backslash ends it
	escInter            // ESC, intermediate bytes … until a final byte
)

func (t *trimmer) Write(p []byte) (int, error) {
	for _, c := range p {
		t.byte(c)
	}
	return len(p), t.err
}

func (t *trimmer) byte(c byte) {
	switch t.esc {
	case escStart:
		switch {
		case c == '[':
			t.esc = escCSI
		case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
			t.esc = escString
		case c >= 0x20 && c <= 0x2f:
			t.esc = escInter
		default:
			t.esc = escNone
		}
		return
	case escCSI, escInter:
		if c >= 0x40 && c <= 0x7e || t.esc == escInter && c >= 0x30 {
			t.esc = escNone
		}
		return
	case escString:
		switch c {
		case 0x07:
			t.esc = escNone
		case 0x1b:
			t.esc = escStringE
		}
		return
	case escStringE:
		t.esc = escString
		if c == '\\' {
			t.esc = escNone
		}
		return
	}
	switch c {
	case 0x1b:
		t.esc = escStart
		return
	case '\n':
		t.endLine()
		return
	case '\r':
		t.cr = true
		return
	}
	if t.cr {
		t.cr = false
		if !t.passing {
			t.line = t.line[:0] // redrawn from the start
		}
	}
	switch {
	case c == '\b':
		if !t.passing && len(t.line) > 0 {
			_, n := utf8.DecodeLastRune(t.line)
			t.line = t.line[:len(t.line)-n]
		}
	case c < 0x20 && c != '\t' || c == 0x7f:
		// Other control characters (a bell, a form feed, delete) show nothing.
	case t.passing:
		t.write([]byte{c})
	default:
		t.line = append(t.line, c)
		if len(t.line) > maxTrimLine {
			t.flushHeld()
			t.passing = true
			t.write(t.line)
			t.line = t.line[:0]
		}
	}
}

// endLine takes a complete line.
func (t *trimmer) endLine() {
	t.cr = false
	if t.passing {
		t.passing = false
		t.write([]byte{'\n'})
		return
	}
	switch {
	case t.hasHeld && bytes.Equal(t.line, t.held):
		t.repeats++
	case t.hasHeld && t.repeats == 0 && isProgress(t.held) && sameShape(t.line, t.held):
		t.held = append(t.held[:0], t.line...) // a newer state of the same progress line
	case t.hasHeld && t.repeats == 0 && announces(t.held, t.line):
		t.held = append(t.held[:0], t.line...)
	default:
		t.flushHeld()
		t.held, t.hasHeld = append(t.held[:0], t.line...), true
	}
	t.line = t.line[:0]
}

// flushHeld writes the held line and its repeats.
func (t *trimmer) flushHeld() {
	if !t.hasHeld {
		return
	}
	t.write(t.held)
	t.write([]byte{'\n'})
	switch {
	case t.repeats == 1:
		t.write(t.held)
		t.write([]byte{'\n'})
	case t.repeats > 1:
		t.write(fmt.Appendf(nil, "[the line above repeated %d more times]\n", t.repeats))
	}
	t.hasHeld, t.repeats = false, 0
}

// Flush writes what the trimmer holds: the last complete line and a last line without a
// newline. Call it when the output ended.
func (t *trimmer) Flush() error {
	t.flushHeld()
	if len(t.line) > 0 {
		t.write(t.line)
		t.line = t.line[:0]
	}
	return t.err
}

func (t *trimmer) write(p []byte) {
	if t.err == nil {
		_, t.err = t.out.Write(p)
	}
}

// announces reports whether run is go test's "=== RUN   Name" and result the line that
// reports Name's end ("--- PASS: Name (0.00s)", SKIP or FAIL; subtests indented).
func announces(run, result []byte) bool {
	name, ok := bytes.CutPrefix(bytes.TrimLeft(run, " "), []byte("=== RUN   "))
	if !ok || len(name) == 0 {
		return false
	}
	result = bytes.TrimLeft(result, " ")
	for _, verdict := range []string{"--- PASS: ", "--- SKIP: ", "--- FAIL: "} {
		if rest, ok := bytes.CutPrefix(result, []byte(verdict)); ok {
			return bytes.HasPrefix(rest, name) && bytes.HasPrefix(rest[len(name):], []byte(" ("))
		}
	}
	return false
}

// isProgress reports whether a line looks like a progress report: a bar of at least four
// block characters, or a percentage in a line that starts with a figure (wget's and rsync's
// reports). A line of words with a percentage — a test run's coverage — is no progress.
func isProgress(line []byte) bool {
	run, prev := 0, rune(-1)
	percent := false
	for i, r := range string(line) {
		if r == '%' && i > 0 && line[i-1] >= '0' && line[i-1] <= '9' {
			percent = true
		}
		switch r {
		case '#', '=', '█', '━', '■', '▇', '▓':
			if r == prev {
				run++
			} else {
				run = 1
			}
			if run >= 4 {
				return true
			}
		default:
			run = 0
		}
		prev = r
	}
	first := bytes.TrimLeft(line, " \t")
	return percent && len(first) > 0 && first[0] >= '0' && first[0] <= '9'
}

// sameShape reports whether two lines differ only in their figures and in how far their bars
// (runs of block or space characters) reach: the same progress line at two moments.
func sameShape(a, b []byte) bool { return bytes.Equal(shape(a), shape(b)) }

func shape(line []byte) []byte {
	out := make([]byte, 0, len(line))
	var prev rune = -1
	for _, r := range string(line) {
		switch {
		case r >= '0' && r <= '9' || r == '.' || r == ',':
			r = '0'
		case r == '#' || r == '=' || r == '>' || r == '-' || r == ' ' || r >= 0x2580 && r <= 0x259f || r == '━' || r == '■':
			r = '#' // bar cells, filled or not, and the padding between fields
		}
		if r == prev && (r == '0' || r == '#') {
			continue
		}
		out = utf8.AppendRune(out, r)
		prev = r
	}
	return out
}

// Trim returns output cleaned as a command's output is before it is kept (see [Run]): escape
// sequences dropped, redrawn lines as they were left, repeated and progress lines collapsed.
func Trim(output string) string {
	var b bytes.Buffer
	t := newTrimmer(&b)
	t.Write([]byte(output))
	t.Flush()
	return b.String()
}

// CleanLine returns one line as a terminal would have shown it: escape sequences dropped,
// what a carriage return or a backspace overwrote removed. For lines of files (Grep's).
func CleanLine(line string) string {
	plain := true
	for i := 0; i < len(line); i++ {
		if c := line[i]; c < 0x20 && c != '\t' || c == 0x7f {
			plain = false
			break
		}
	}
	if plain {
		return line
	}
	var b bytes.Buffer
	t := newTrimmer(&b)
	t.Write([]byte(line))
	t.Flush()
	return b.String()
}
