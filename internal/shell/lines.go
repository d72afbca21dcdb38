package shell

import "bytes"

// maxLine is where a line without a newline is passed on in pieces.
const maxLine = 4096

// lineWriter passes each complete line written to it to fn. It is used by one goroutine
// (the output copier) and, after that one is done, by flush.
type lineWriter struct {
	fn      func(string)
	partial []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		w.partial = append(w.partial, chunk...)
		for len(w.partial) > maxLine {
			w.fn(string(w.partial[:maxLine]))
			w.partial = w.partial[maxLine:]
		}
		if i < 0 {
			break
		}
		w.fn(string(bytes.TrimSuffix(w.partial, []byte("\r"))))
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush passes on a last line that had no newline.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.fn(string(w.partial))
		w.partial = nil
	}
}
