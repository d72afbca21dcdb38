package builtin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/keel-dev/keel/internal/atomicfile"
)

// searchBuiltin is Grep without ripgrep: one goroutine walks the tree (honouring .gitignore)
// and opens the files to search, each in the directory it holds; the workers of searchFiles
// search them.
func searchBuiltin(ctx context.Context, q grepQuery, a *grepAnswer, lineNums bool) error {
	keep := fileFilter(q)
	rootIsFile := false
	if info, err := os.Stat(q.root); err == nil && !info.IsDir() {
		rootIsFile = true
	}
	return searchFiles(ctx, q, a, lineNums, func(ctx context.Context, send func(string, *os.File)) error {
		return walkFiles(ctx, q.root, func(p string, dir *atomicfile.Dir, d fs.DirEntry) {
			if (rootIsFile || keep(p)) && (q.hidden == nil || !q.hidden(p)) {
				if f, err := openIn(dir, d.Name()); err == nil {
					send(p, f)
				}
			}
		})
	})
}

// openedFile is a file to search, opened without following a link on its way: what Grep
// shows was read from the file at path below the root the permission check saw, never from
// where a link swapped in meanwhile leads.
type openedFile struct {
	path string
	f    *os.File
}

// searchFiles searches the files find sends, with GOMAXPROCS workers, each file read in
// windows of whole lines (see [scanner]) and only until its part of the answer is complete;
// what they find goes to a. find runs on the calling goroutine; its context ends when the
// search does. The workers close the files.
func searchFiles(ctx context.Context, q grepQuery, a *grepAnswer, lineNums bool, find func(ctx context.Context, send func(string, *os.File)) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A few files wait, open, for a worker: a descriptor each.
	files := make(chan openedFile, 64)
	// One search at a time holds a big file (multiline) or a long line whole.
	bigFile := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for of := range files {
				if ctx.Err() == nil { // else drain
					searchFile(ctx, of.path, of.f, &q, a, lineNums, bigFile)
				}
				of.f.Close()
			}
		})
	}
	err := find(ctx, func(p string, f *os.File) { files <- openedFile{p, f} })
	close(files)
	wg.Wait()
	return err
}

// fileFilter applies Grep's type and glob filters the way ripgrep does: a type matches the
// file name; a glob without a slash matches the name, one with a slash the path below the
// root; a "!glob" excludes files and directories it matches.
func fileFilter(q grepQuery) func(path string) bool {
	var rule *ignoreRule
	if q.glob != "" {
		if rules := parseIgnore([]byte(q.glob)); len(rules) == 1 {
			rule = &rules[0]
		}
	}
	return func(p string) bool {
		base := filepath.Base(p)
		if len(q.typeGlobs) > 0 {
			ok := false
			for _, g := range q.typeGlobs {
				if m, _ := doublestar.Match(g, base); m {
					ok = true
					break
				}
			}
			if !ok {
				return false
			}
		}
		if rule == nil {
			return true
		}
		rel, err := filepath.Rel(q.root, p)
		if err != nil {
			return false
		}
		rel = filepath.ToSlash(rel)
		if !rule.negate {
			return rule.match(rel, false)
		}
		if rule.match(rel, false) {
			return false
		}
		for d := filepath.ToSlash(filepath.Dir(rel)); d != "." && d != "/"; d = filepath.ToSlash(filepath.Dir(d)) {
			if rule.match(d, true) {
				return false
			}
		}
		return true
	}
}

// searchFile searches f, the file at path, and gives its block to a. Unreadable and binary
// files are skipped.
func searchFile(ctx context.Context, path string, f *os.File, q *grepQuery, a *grepAnswer, lineNums bool, bigFile chan struct{}) {
	var (
		err      error
		bb       *blockBuilder
		maxCount int
	)
	if q.mode == "content" {
		bb, maxCount = newBlockBuilder(path, *q, lineNums, a), a.maxFileMatches(q.root)
	}
	var (
		matches int
		stopped bool
	)
	if q.multiline {
		matches, stopped, err = searchMultiline(f, q, bb, maxCount, a, bigFile)
	} else {
		s := &scanner{q: q, firstOnly: q.mode == "files_with_matches", bb: bb, maxCount: maxCount, big: bigFile}
		stopped, err = s.scan(ctx, f)
		matches = s.matches
	}
	switch {
	case err != nil || matches == 0:
	case bb != nil:
		b := bb.block
		b.matches, b.partial = matches, stopped
		a.add(b)
	default:
		a.add(summaryBlock(q.mode, path, matches))
	}
}

// searchMultiline searches a file whole (up to maxMultilineBytes), as a multiline match may
// span any number of lines.
func searchMultiline(f *os.File, q *grepQuery, bb *blockBuilder, maxCount int, a *grepAnswer, bigFile chan struct{}) (matches int, stopped bool, err error) {
	info, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	size := min(info.Size(), maxMultilineBytes)
	if size > scanChunk {
		bigFile <- struct{}{}
		defer func() { <-bigFile }()
	}
	data := make([]byte, size)
	n, err := io.ReadFull(f, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return 0, false, err
	}
	data = data[:n]
	if bytes.IndexByte(data, 0) >= 0 {
		return 0, false, errBinaryFile
	}
	cut := info.Size() > maxMultilineBytes
	if cut {
		a.cutFile()
	}
	spans := multilineSpans(data, q.re, q.mode == "files_with_matches")
	if len(spans) == 0 {
		return 0, false, nil
	}
	stopped = cut
	if bb != nil {
		if len(spans) > maxCount {
			spans, stopped = spans[:maxCount], true
		}
		contentLines(data, spans, q.before, q.after, bb)
	}
	return len(spans), stopped, nil
}

// span is a run of matching lines, 1-based and inclusive.
type span struct{ first, last int }

// multilineSpans finds the runs of lines the matches of re cover in data.
func multilineSpans(data []byte, re *regexp.Regexp, firstOnly bool) []span {
	var spans []span
	line, cursor := 1, 0 // the line number at byte offset cursor
	lineAt := func(off int) int {
		line += bytes.Count(data[cursor:off], []byte{'\n'})
		cursor = off
		return line
	}
	for _, loc := range re.FindAllIndex(data, -1) {
		s, e := loc[0], loc[1]
		if s == len(data) && (s == 0 || data[s-1] == '\n') {
			continue
		}
		first := lineAt(s)
		end := e
		if e > s {
			end = e - 1
		}
		last := first + bytes.Count(data[s:end], []byte{'\n'})
		if n := len(spans); n > 0 && first <= spans[n-1].last {
			spans[n-1].last = max(spans[n-1].last, last)
			continue
		}
		spans = append(spans, span{first, last})
		if firstOnly {
			break
		}
	}
	return spans
}

// contentLines gives bb the matching lines with before/after context, each line once; a
// line that is both context and a match is a match.
func contentLines(data []byte, spans []span, before, after int, bb *blockBuilder) {
	// Lines are given in increasing order, so one cursor walks the data once.
	num, off := 1, 0 // line num starts at data[off]
	lineText := func(n int) ([]byte, bool) {
		for num < n && off < len(data) {
			i := bytes.IndexByte(data[off:], '\n')
			if i < 0 {
				off = len(data)
				break
			}
			off += i + 1
			num++
		}
		if num != n || off >= len(data) {
			return nil, false
		}
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			return data[off:], true
		}
		return data[off : off+end], true
	}
	done := 0 // last line given
	emit := func(n int, match bool) {
		if n <= done || n < 1 {
			return
		}
		if text, ok := lineText(n); ok {
			done = n
			bb.add(n, text, len(text), match)
		}
	}
	for i, s := range spans {
		for n := s.first - before; n < s.first; n++ {
			emit(n, false)
		}
		for n := s.first; n <= s.last; n++ {
			emit(n, true)
		}
		limit := s.last + after
		if i+1 < len(spans) {
			limit = min(limit, spans[i+1].first-1)
		}
		for n := s.last + 1; n <= limit; n++ {
			emit(n, false)
		}
	}
}
