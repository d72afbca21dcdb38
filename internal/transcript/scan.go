package transcript

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// chunkSize is how much the backward scanner reads at a time.
const chunkSize = 256 << 10

// errStop ends a scan early without an error.
var errStop = errors.New("stop scan")

// scanBackward calls fn for each line of r[0:end], newest first, with the line's offset. The
// line has no newline and is only valid during the call unless owned is set: a line longer
// than a chunk is read once into a buffer of its own, which fn may keep. Each chunk is split
// forwards with bytes.IndexByte (vectorised) and its lines visited in reverse, which keeps the
// scan at memory speed; a line that crosses a chunk edge is read whole once its start is
// found, so a line of any length costs its length once. fn returning errStop ends the scan.
func scanBackward(ctx context.Context, r io.ReaderAt, end int64, fn func(line []byte, off int64, owned bool) error) error {
	buf := make([]byte, chunkSize)
	var starts []int
	// lineEnd is the end of the line that runs on from the chunk before the current one
	// into the chunks already scanned; -1 when the last chunk began with a line.
	lineEnd := int64(-1)
	if end > 0 {
		lineEnd = end
	}
	// emit passes the line [from, lineEnd) on: read whole, unless it lies in chunk (at pos).
	emit := func(from int64, chunk []byte, pos int64) error {
		n := lineEnd - from
		if n <= 0 {
			return nil
		}
		if from >= pos && lineEnd <= pos+int64(len(chunk)) {
			return fn(chunk[from-pos:lineEnd-pos], from, false)
		}
		line := make([]byte, n)
		if _, err := r.ReadAt(line, from); err != nil && !(errors.Is(err, io.EOF) && from+n == end) {
			return fmt.Errorf("read line at %d: %w", from, err)
		}
		return fn(line, from, true)
	}
	pos := end
	var chunk []byte
	for pos > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(int64(chunkSize), pos)
		pos -= n
		chunk = buf[:n]
		if _, err := r.ReadAt(chunk, pos); err != nil && !(errors.Is(err, io.EOF) && pos+n == end) {
			return fmt.Errorf("read at %d: %w", pos, err)
		}
		first := bytes.IndexByte(chunk, '\n')
		if first < 0 {
			continue // the middle of a line longer than a chunk
		}
		// Lines start after each newline; the last one runs on to lineEnd.
		starts = starts[:0]
		for i := first; ; {
			starts = append(starts, i+1)
			j := bytes.IndexByte(chunk[i+1:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
		}
		for k := len(starts) - 1; k >= 0; k-- {
			from := pos + int64(starts[k])
			if err := emit(from, chunk, pos); err != nil {
				return err
			}
			lineEnd = from - 1 // the newline before it
		}
	}
	if lineEnd > 0 {
		return emit(0, chunk, 0)
	}
	return nil
}

// lastLineEnd returns the offset just past the last newline of r[0:size]: everything after it
// is a torn line left by a crash mid-write.
func lastLineEnd(r io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for pos := size; pos > 0; {
		n := int64(len(buf))
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := r.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("find last line: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// lineReader reads lines forwards with a bufio.Reader, whatever their length (a default
// bufio.Scanner stops at 64 KB; real lines reach hundreds of KB). With max set, a longer line
// is returned cut to its first max bytes (cut says so) and the rest is skipped, so a reader
// that needs only the start of each line holds no more. The returned line is valid until the
// next call.
type lineReader struct {
	br  *bufio.Reader
	big []byte
	off int64 // offset of the next line
	max int
	// cut is set when the line returned last was longer than max.
	cut bool
}

func newLineReader(r io.Reader, off int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 1<<20), off: off}
}

// next returns the next complete line without its newline, and its offset. A last line with
// no newline is torn: next returns io.ErrUnexpectedEOF with its length in n.
func (lr *lineReader) next() (line []byte, off int64, err error) {
	off = lr.off
	lr.cut = false
	b, err := lr.br.ReadSlice('\n')
	n := int64(len(b))
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.big = append(lr.big[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = lr.br.ReadSlice('\n')
			n += int64(len(b))
			if lr.max > 0 && len(lr.big) >= lr.max {
				lr.cut = true
				continue
			}
			lr.big = append(lr.big, b...)
		}
		b = lr.big
	}
	if lr.max > 0 && len(b) > lr.max {
		b, lr.cut = b[:lr.max], true
	}
	lr.off += n
	if err != nil {
		if errors.Is(err, io.EOF) && n > 0 {
			return b, off, io.ErrUnexpectedEOF
		}
		return nil, off, err
	}
	if lr.cut {
		return b, off, nil
	}
	return b[:len(b)-1], off, nil
}
