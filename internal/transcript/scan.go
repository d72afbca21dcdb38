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
// line has no newline and is only valid during the call. Each chunk is split forwards with
// bytes.IndexByte (vectorised) and its lines visited in reverse, which keeps the scan at memory
// speed; only a line that crosses a chunk edge is copied. fn returning errStop ends the scan.
func scanBackward(ctx context.Context, r io.ReaderAt, end int64, fn func(line []byte, off int64) error) error {
	buf := make([]byte, chunkSize)
	var pending []byte // start of the line that crosses into the chunk after this one
	var starts []int
	pos := end
	for pos > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := int64(chunkSize)
		if pos < n {
			n = pos
		}
		pos -= n
		chunk := buf[:n]
		if _, err := r.ReadAt(chunk, pos); err != nil && !(errors.Is(err, io.EOF) && pos+n == end) {
			return fmt.Errorf("read at %d: %w", pos, err)
		}
		first := bytes.IndexByte(chunk, '\n')
		if first < 0 && pos > 0 {
			pending = append(append(make([]byte, 0, len(chunk)+len(pending)), chunk...), pending...)
			continue
		}
		// Lines inside the chunk start after each newline; the last one runs on into pending.
		starts = starts[:0]
		from := 0
		if pos > 0 {
			from = first + 1
		}
		starts = append(starts, from)
		for i := from; ; {
			j := bytes.IndexByte(chunk[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			starts = append(starts, i)
		}
		last := starts[len(starts)-1]
		joined := append(chunk[last:len(chunk):len(chunk)], pending...)
		if len(joined) > 0 {
			if err := fn(joined, pos+int64(last)); err != nil {
				return err
			}
		}
		for k := len(starts) - 2; k >= 0; k-- {
			s, e := starts[k], starts[k+1]-1
			if e > s {
				if err := fn(chunk[s:e], pos+int64(s)); err != nil {
					return err
				}
			}
		}
		pending = nil
		if pos > 0 && first >= 0 {
			pending = append([]byte(nil), chunk[:first]...)
		}
	}
	if len(pending) > 0 {
		return fn(pending, 0)
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

// lineReader reads whole lines forwards with a bufio.Reader, whatever their length (a default
// bufio.Scanner stops at 64 KB; real lines reach hundreds of KB). The returned line is valid
// until the next call.
type lineReader struct {
	br  *bufio.Reader
	big []byte
	off int64 // offset of the next line
}

func newLineReader(r io.Reader, off int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 1<<20), off: off}
}

// next returns the next complete line without its newline, and its offset. A last line with
// no newline is torn: next returns io.ErrUnexpectedEOF with its length in n.
func (lr *lineReader) next() (line []byte, off int64, err error) {
	off = lr.off
	b, err := lr.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.big = append(lr.big[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			b, err = lr.br.ReadSlice('\n')
			lr.big = append(lr.big, b...)
		}
		b = lr.big
	}
	lr.off += int64(len(b))
	if err != nil {
		if errors.Is(err, io.EOF) && len(b) > 0 {
			return b, off, io.ErrUnexpectedEOF
		}
		return nil, off, err
	}
	return b[:len(b)-1], off, nil
}
