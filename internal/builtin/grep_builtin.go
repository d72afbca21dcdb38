package builtin

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// searchBuiltin is Grep without ripgrep: one goroutine walks the tree (honouring .gitignore)
// and GOMAXPROCS workers search the files it finds.
func searchBuiltin(ctx context.Context, q grepQuery) ([]grepFile, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	keep := fileFilter(q)
	paths := make(chan string, 1024)
	var (
		mu    sync.Mutex // guards files
		files []grepFile
		wg    sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for p := range paths {
				if ctx.Err() != nil {
					continue // drain
				}
				if f, ok := searchFile(p, q); ok {
					mu.Lock()
					files = append(files, f)
					mu.Unlock()
				}
			}
		})
	}
	rootIsFile := false
	if info, err := os.Stat(q.root); err == nil && !info.IsDir() {
		rootIsFile = true
	}
	err := walkFiles(ctx, q.root, func(p string, _ fs.DirEntry) {
		if (rootIsFile || keep(p)) && (q.hidden == nil || !q.hidden(p)) {
			paths <- p
		}
	})
	close(paths)
	wg.Wait()
	return files, err
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

// span is a run of matching lines, 1-based and inclusive.
type span struct{ first, last int }

// searchFile searches one file; ok is false when nothing matched or the file is binary.
func searchFile(path string, q grepQuery) (grepFile, bool) {
	data, err := os.ReadFile(path)
	if err != nil || bytes.IndexByte(data, 0) >= 0 {
		return grepFile{}, false
	}
	spans := matchSpans(data, q, q.mode == "files_with_matches")
	if len(spans) == 0 {
		return grepFile{}, false
	}
	f := grepFile{path: path, matches: len(spans)}
	if q.mode == "content" {
		f.lines = contentLines(data, spans, q.before, q.after)
	}
	return f, true
}

// matchSpans finds the matching lines. Without multiline a match must lie within one line:
// the whole buffer is searched for speed, and each hit is checked against its line alone.
func matchSpans(data []byte, q grepQuery, firstOnly bool) []span {
	var spans []span
	line, cursor := 1, 0 // the line number at byte offset cursor
	lineAt := func(off int) int {
		line += bytes.Count(data[cursor:off], []byte{'\n'})
		cursor = off
		return line
	}
	if !q.multiline {
		for pos := 0; pos <= len(data); {
			loc := q.re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			start := pos + loc[0]
			ls := bytes.LastIndexByte(data[:start], '\n') + 1
			if ls == len(data) {
				break // the empty "line" after a final newline
			}
			le := bytes.IndexByte(data[start:], '\n')
			if le < 0 {
				le = len(data)
			} else {
				le += start
			}
			if q.re.Match(data[ls:le]) {
				n := lineAt(ls)
				spans = append(spans, span{n, n})
				if firstOnly {
					break
				}
			}
			pos = le + 1
		}
		return spans
	}
	for _, loc := range q.re.FindAllIndex(data, -1) {
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

// contentLines returns the matching lines with before/after context, each line once; a line
// that is both context and a match is a match.
func contentLines(data []byte, spans []span, before, after int) []grepLine {
	text := strings.Split(string(data), "\n")
	if len(text) > 0 && text[len(text)-1] == "" {
		text = text[:len(text)-1]
	}
	var out []grepLine
	done := 0 // last line emitted
	emit := func(n int, match bool) {
		if n > done && n >= 1 && n <= len(text) {
			out = append(out, grepLine{num: n, text: text[n-1], match: match})
			done = n
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
	return out
}
