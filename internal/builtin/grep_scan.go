package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"unicode/utf8"
)

// scanChunk is how much of a file the built-in engine holds at once: it searches a window of
// whole lines this size, so a file of any size costs the same memory. A longer line is
// matched as a stream.
const scanChunk = 256 << 10

// maxMultilineBytes is how much of a file a multiline search holds: its matches may span any
// number of lines, so it searches the file whole, up to this size.
const maxMultilineBytes = 32 << 20

var scanReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, scanChunk) }}

// errBinaryFile ends the scan of a file that holds a NUL byte: Grep skips binary files, as
// ripgrep does.
var errBinaryFile = errors.New("binary file")

// scanner searches one file line by line for the built-in engine. What it finds goes to a
// blockBuilder in content mode and is counted in the others.
type scanner struct {
	q *grepQuery
	// firstOnly stops at the first match (files_with_matches).
	firstOnly bool
	// bb receives the lines in content mode; nil in the others.
	bb *blockBuilder
	// maxCount, when over 0, stops the scan after that many matches and the context after
	// the last; capped is set once they were found. Lines in that context are shown as what
	// they are, as ripgrep's --max-count does.
	maxCount int
	capped   bool
	// big, when set, lets one long line at a time be held whole across the workers;
	// maxHeld overrides maxHeldLine (tests).
	big     chan struct{}
	maxHeld int
	// line is the number of the last line consumed; matches counts the matching ones.
	line, matches int
	// done is the last line given to bb; context lines after a match go to bb up to
	// afterUntil; ring holds the last lines read for the context before the next match.
	done, afterUntil int
	ring             []ringLine
}

type ringLine struct {
	num  int
	text []byte
	size int
}

// scan reads r to its end or until the scan stops (the first match, a full block, ctx
// done), and reports whether it stopped before the end.
func (s *scanner) scan(ctx context.Context, r io.Reader) (stopped bool, err error) {
	br := scanReaders.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		scanReaders.Put(br)
	}()
	for {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		data, err := br.Peek(scanChunk)
		eof := errors.Is(err, io.EOF)
		if err != nil && !eof {
			return false, err
		}
		if len(data) == 0 {
			return false, nil
		}
		if bytes.IndexByte(data, 0) >= 0 {
			return false, errBinaryFile
		}
		end := len(data)
		if !eof {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				stop, err := s.longLine(ctx, br)
				if err != nil || stop {
					return stop, err
				}
				continue
			}
			end = i + 1
		}
		stop, rest := s.window(data[:end])
		if _, err := br.Discard(end); err != nil {
			return false, err
		}
		if stop {
			_, err := br.Peek(1)
			return rest || err == nil || !errors.Is(err, io.EOF), nil
		}
		if eof {
			return false, nil
		}
	}
}

// window searches whole lines (the last may lack its newline at the end of the file). The
// regular expression runs over the window for speed; a hit that spans lines is checked
// against its line alone, as a match must lie within one line. When the scan stops, rest says whether lines
// of the window were left unread.
func (s *scanner) window(win []byte) (stop, rest bool) {
	for pos := 0; pos < len(win); {
		loc := s.q.re.FindIndex(win[pos:])
		if loc == nil {
			return s.pass(win[pos:])
		}
		start := pos + loc[0]
		ls := bytes.LastIndexByte(win[pos:start], '\n') + 1 + pos
		if ls == len(win) {
			return s.pass(win[pos:]) // the empty "line" after the final newline
		}
		le := bytes.IndexByte(win[start:], '\n')
		if le < 0 {
			le = len(win)
		} else {
			le += start
		}
		if stop, rest := s.pass(win[pos:ls]); stop {
			return true, rest || ls < len(win)
		}
		line := win[ls:le]
		// A hit within the line is a match of the line; one that spans lines is checked.
		match := bytes.IndexByte(win[start:pos+loc[1]], '\n') < 0 || s.q.re.Match(line)
		if s.line1(line, len(line), match) {
			return true, le+1 < len(win)
		}
		pos = le + 1
	}
	return false, false
}

// pass consumes lines without a match: counted, and kept for context when asked. It
// reports whether the scan stops, and then whether lines of region were left unread.
func (s *scanner) pass(region []byte) (stop, rest bool) {
	if len(region) == 0 {
		return false, false
	}
	if s.bb == nil || (s.q.before == 0 && s.q.after == 0) {
		s.line += bytes.Count(region, []byte{'\n'})
		if region[len(region)-1] != '\n' {
			s.line++
		}
		return false, false
	}
	for len(region) > 0 {
		i := bytes.IndexByte(region, '\n')
		line := region
		if i >= 0 {
			line, region = region[:i], region[i+1:]
		} else {
			region = nil
		}
		if s.line1(line, len(line), false) {
			return true, len(region) > 0
		}
	}
	return false, false
}

// line1 takes the next line, its text (or first bytes, for a line of size bytes). It
// reports whether the scan stops.
func (s *scanner) line1(text []byte, size int, match bool) bool {
	s.line++
	n := s.line
	if s.capped {
		s.done = n
		s.bb.add(n, text, size, match)
		return n >= s.afterUntil
	}
	if !match {
		switch {
		case s.bb == nil:
		case n <= s.afterUntil:
			s.done = n
			s.bb.add(n, text, size, false)
		case s.q.before > 0:
			s.remember(n, text, size)
		}
		return false
	}
	s.matches++
	if s.firstOnly {
		return true
	}
	if s.bb == nil {
		return false
	}
	for _, c := range s.ring {
		if c.num > s.done && c.num >= n-s.q.before {
			s.bb.add(c.num, c.text, c.size, false)
		}
	}
	s.ring = s.ring[:0]
	s.done, s.afterUntil = n, n+s.q.after
	s.bb.add(n, text, size, true)
	if s.maxCount > 0 && s.matches >= s.maxCount {
		s.capped = true
		return n >= s.afterUntil
	}
	return false
}

// remember keeps a line for the context before a later match; only its shown part is kept.
func (s *scanner) remember(n int, text []byte, size int) {
	var slot ringLine
	if len(s.ring) == s.q.before {
		slot = s.ring[0]
		copy(s.ring, s.ring[1:])
		s.ring = s.ring[:len(s.ring)-1]
	}
	if size == len(text) {
		text = bytes.TrimSuffix(text, []byte("\r"))
		size = len(text)
	}
	slot.num, slot.size = n, size
	slot.text = append(slot.text[:0], text[:min(len(text), maxGrepLineChars+utf8.UTFMax)]...)
	s.ring = append(s.ring, slot)
}

// maxHeldLine is the longest line the built-in engine holds whole to match it; a longer
// one is matched as a stream of runes (exact, but an order of magnitude slower).
const maxHeldLine = 16 << 20

// longLine takes a line longer than the read buffer from br and reports whether the scan
// stops. Up to maxHeld bytes of it are held (one such line at a time across the search's
// workers, through big) and matched at once; past that the rest is matched as a stream.
func (s *scanner) longLine(ctx context.Context, br *bufio.Reader) (bool, error) {
	if s.big != nil {
		s.big <- struct{}{}
		defer func() { <-s.big }()
	}
	maxHeld := s.maxHeld
	if maxHeld <= 0 {
		maxHeld = maxHeldLine
	}
	var held []byte
	ended := false
	for !ended && len(held) < maxHeld {
		chunk, err := br.ReadSlice('\n')
		if bytes.HasSuffix(chunk, []byte{'\n'}) {
			chunk, ended = chunk[:len(chunk)-1], true
		}
		held = append(held, chunk...)
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			ended = true
		}
	}
	// The held part ends on a whole rune, so the stream goes on where it stopped.
	for !ended && !utf8.FullRune(held[max(0, len(held)-utf8.UTFMax):]) {
		b, err := br.ReadByte()
		if err != nil || b == '\n' {
			ended = true
			break
		}
		held = append(held, b)
	}
	if bytes.IndexByte(held, 0) >= 0 {
		return false, errBinaryFile
	}
	head := held[:min(len(held), maxGrepLineChars+utf8.UTFMax)]
	if ended {
		size := len(held)
		if bytes.HasSuffix(held, []byte{'\r'}) {
			size--
		}
		return s.line1(bytes.Clone(head), size, s.q.re.Match(held)), nil
	}
	head = bytes.Clone(head)
	lr := &lineRuneReader{ctx: ctx, held: held, br: br}
	match := s.q.re.MatchReader(lr)
	held = nil
	lr.held = nil
	lr.drain()
	switch {
	case lr.err != nil:
		return true, lr.err
	case lr.nul:
		return false, errBinaryFile
	}
	size := lr.n
	if lr.lastCR {
		size--
	}
	return s.line1(head, size, match), nil
}

// lineRuneReader reads the runes of a line: those of held, then those of br up to the end
// of the line, which it consumes. It stops early, with err set, when ctx ends.
type lineRuneReader struct {
	ctx    context.Context
	held   []byte
	br     *bufio.Reader
	n      int // bytes of the line read, its newline not counted
	ended  bool
	lastCR bool
	nul    bool
	err    error
	runes  int
}

func (r *lineRuneReader) ReadRune() (rune, int, error) {
	if len(r.held) > 0 {
		c, size := utf8.DecodeRune(r.held)
		r.held = r.held[size:]
		r.n += size
		r.lastCR = c == '\r'
		return c, size, nil
	}
	if r.ended {
		return 0, 0, io.EOF
	}
	if r.runes++; r.runes%(1<<16) == 0 && r.ctx.Err() != nil {
		r.err, r.ended = r.ctx.Err(), true
		return 0, 0, io.EOF
	}
	c, size, err := r.br.ReadRune()
	if err != nil || c == '\n' {
		r.ended = true
		return 0, 0, io.EOF
	}
	r.n += size
	r.lastCR = c == '\r'
	r.nul = r.nul || c == 0
	return c, size, nil
}

// drain consumes the rest of the line.
func (r *lineRuneReader) drain() {
	if len(r.held) > 0 {
		r.n += len(r.held)
		r.lastCR = r.held[len(r.held)-1] == '\r'
		r.held = nil
	}
	for !r.ended {
		chunk, err := r.br.ReadSlice('\n')
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
			chunk = chunk[:len(chunk)-1]
			r.ended = true
		}
		if len(chunk) > 0 {
			r.nul = r.nul || bytes.IndexByte(chunk, 0) >= 0
			r.n += len(chunk)
			r.lastCR = chunk[len(chunk)-1] == '\r'
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			r.ended = true
		}
	}
}
