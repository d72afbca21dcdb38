package shell

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// cappedBuffer keeps the first and last limit/2 bytes written and counts what it dropped
// between them, so enormous output costs bounded memory. It is safe for concurrent use.
type cappedBuffer struct {
	// mu guards head, tail, start and total.
	mu    sync.Mutex
	head  []byte
	tail  []byte // ring buffer once full
	start int    // index of the oldest byte in tail when full
	total int64
	half  int
}

func newCappedBuffer(limit int) *cappedBuffer {
	return &cappedBuffer{half: max(limit/2, 1)}
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.half - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(b.tail) < b.half {
			k := min(b.half-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		if len(p) >= b.half {
			copy(b.tail, p[len(p)-b.half:])
			b.start = 0
			break
		}
		k := min(b.half-b.start, len(p))
		copy(b.tail[b.start:], p[:k])
		b.start = (b.start + k) % b.half
		p = p[k:]
	}
	return n, nil
}

// String returns the kept output, with a note where bytes were cut, and how many were cut.
func (b *cappedBuffer) String() (string, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := append(append([]byte(nil), b.tail[b.start:]...), b.tail[:b.start]...)
	cut := b.total - int64(len(b.head)) - int64(len(tail))
	if cut == 0 {
		return string(b.head) + string(tail), 0
	}
	head := trimPartialEnd(b.head)
	tail = trimPartialStart(tail)
	cut = b.total - int64(len(head)) - int64(len(tail))
	note := fmt.Sprintf("\n\n... [%d bytes of output cut from the middle] ...\n\n", cut)
	return string(head) + note + string(tail), cut
}

// trimPartialEnd drops a UTF-8 sequence cut off at the end of p.
func trimPartialEnd(p []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(p); i++ {
		c := p[len(p)-i]
		if utf8.RuneStart(c) {
			if r, _ := utf8.DecodeRune(p[len(p)-i:]); r == utf8.RuneError && c >= utf8.RuneSelf {
				return p[:len(p)-i]
			}
			break
		}
	}
	return p
}

// trimPartialStart drops continuation bytes at the start of p.
func trimPartialStart(p []byte) []byte {
	for i := 0; i < utf8.UTFMax && i < len(p); i++ {
		if utf8.RuneStart(p[i]) {
			return p[i:]
		}
	}
	return p
}

// lines splits s into lines without their newlines.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
