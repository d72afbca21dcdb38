package permission

import (
	"path"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// safeSinks are files a redirection may write without writing a file; safeSources are files
// it may read without reading one.
var (
	safeSinks = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true}
	}}
	safeSources = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return map[string]bool{"/dev/null": true, "/dev/stdin": true, "/dev/zero": true}
	}}
)

// heredocDelimRE is the here-document delimiter keel reads exactly; other spellings (with
// expansions, backslashes, odd characters) are asked about.
var heredocDelimRE = lazy.Regexp{Expr: `^[A-Za-z0-9_][A-Za-z0-9_.-]*$`}

// redirect classifies one redirection: a read or write of a file (checked as a Read or Edit
// of that path), a network connection (bash's /dev/tcp and /dev/udp), or something keel
// cannot read exactly.
func (a *shellAnalysis) redirect(src string, r *syntax.Redirect) {
	if r.N != nil && !isDigits(r.N.Value) {
		a.addOpaque("named file descriptor {%s}", r.N.Value)
	}
	target := ""
	static := r.Word != nil && staticWord(r.Word)
	var files []wordFile
	if static {
		target, _ = expand.Literal(expandConfig(), r.Word)
		// bash expands braces and globs in a redirection's word too (more than one result is
		// an error): every file it could become is checked.
		files = fileWords(r.Word)
	}
	if static && isNetworkPath(target) {
		a.network = append(a.network, target)
		a.addOpaque("a network connection to %s", target)
		return
	}
	switch r.Op {
	case syntax.RdrIn:
		switch {
		case !static:
			a.addBlind("input redirection from a computed path")
		case !safeSources.Get()[target]:
			a.reads = append(a.reads, files...)
		}
	case syntax.DplIn, syntax.DplOut:
		switch {
		case !static:
			a.addBlind("redirection %s to a computed path", r.Op)
		case !(isDigits(target) || target == "-" || safeSinks.Get()[target]):
			a.addOpaque("redirection %s to a file", r.Op)
			a.writes = append(a.writes, files...)
		}
	case syntax.Hdoc, syntax.DashHdoc:
		a.heredoc(src, r)
	case syntax.WordHdoc:
		if !static {
			a.addOpaque("here-string with expansions")
		}
	case syntax.RdrInOut:
		if !static {
			a.addBlind("redirection %s to a computed path", r.Op)
			return
		}
		a.addOpaque("output redirection %s writes a file", r.Op)
		a.reads = append(a.reads, files...)
		a.writes = append(a.writes, files...)
	default: // >, >>, >|, &>, &>>: these open files for writing.
		switch {
		case !static:
			a.addBlind("output redirection %s to a computed path", r.Op)
		case !safeSinks.Get()[target]:
			a.addOpaque("output redirection %s writes a file", r.Op)
			a.writes = append(a.writes, files...)
		}
	}
}

// isNetworkPath reports whether bash opens a socket for this redirection target instead of a
// file: /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT, however spelled after cleaning.
func isNetworkPath(p string) bool {
	c := path.Clean(p)
	return strings.HasPrefix(c, "/dev/tcp/") || strings.HasPrefix(c, "/dev/udp/") ||
		strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/")
}

// heredoc accepts a here-document only in the shape both bash and keel's parser read the
// same way: a plain delimiter (quoted or not), a body that is literal text (no expansions,
// and no backslashes in an unquoted one, which bash treats as line continuations), and the
// delimiter line right after the body in the source.
func (a *shellAnalysis) heredoc(src string, r *syntax.Redirect) {
	delim, quoted, ok := plainDelimiter(src, r.Word)
	if !ok {
		a.addBlind("a here-document with an unusual delimiter")
		return
	}
	if r.Hdoc == nil {
		a.addOpaque("a here-document without a body")
		return
	}
	var body strings.Builder
	for _, part := range r.Hdoc.Parts {
		lit, ok := part.(*syntax.Lit)
		if !ok {
			a.addOpaque("here-document with expansions")
			return
		}
		body.WriteString(lit.Value)
	}
	if !quoted && strings.Contains(body.String(), `\`) {
		a.addOpaque("here-document with expansions")
		return
	}
	if !heredocEndsAt(src[r.Hdoc.Pos().Offset():], body.String(), delim, r.Op == syntax.DashHdoc) {
		a.addBlind("a here-document whose end keel cannot confirm")
	}
}

// heredocEndsAt checks, against the source itself, that the body the parser read is the
// lines bash reads: each body line as written (<<- strips leading tabs), then a line that is
// exactly the delimiter.
func heredocEndsAt(src, body, delim string, dash bool) bool {
	if body == "" || !strings.HasSuffix(body, "\n") {
		return false
	}
	next := func() string {
		line, rest, _ := strings.Cut(src, "\n")
		src = rest
		if dash {
			line = strings.TrimLeft(line, "\t")
		}
		return line
	}
	for _, want := range strings.SplitAfter(strings.TrimSuffix(body, "\n"), "\n") {
		if next() != strings.TrimSuffix(want, "\n") {
			return false
		}
	}
	return next() == delim
}

// plainDelimiter returns a here-document's delimiter when it is a plain word, written bare or
// wholly in one pair of quotes.
func plainDelimiter(src string, w *syntax.Word) (delim string, quoted, ok bool) {
	if w == nil {
		return "", false, false
	}
	text := src[w.Pos().Offset():w.End().Offset()]
	if len(text) >= 2 && (text[0] == '\'' || text[0] == '"') && text[len(text)-1] == text[0] {
		text, quoted = text[1:len(text)-1], true
	}
	return text, quoted, heredocDelimRE.Get().MatchString(text)
}
