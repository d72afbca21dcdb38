package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// rgArgs builds a ripgrep command line equivalent to the built-in search: hidden files
// searched, .git skipped, only .gitignore files honoured (not .ignore, global or
// .git/info/exclude rules, which the built-in walker does not read), with or without a git
// repository.
//
// In content mode rg stops reading a file after maxCount matches (see
// [grepAnswer.maxFileMatches]).
func rgArgs(q grepQuery, maxCount int) []string {
	args := []string{"--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-exclude",
		"--no-ignore-dot", "--glob", "!.git"}
	if q.ignoreCase {
		args = append(args, "--ignore-case")
	}
	if q.multiline {
		args = append(args, "--multiline", "--multiline-dotall")
	}
	for _, g := range q.typeGlobs {
		args = append(args, "--type-add", "keel:"+g)
	}
	if len(q.typeGlobs) > 0 {
		args = append(args, "--type", "keel")
	}
	if strings.HasPrefix(q.glob, "!") {
		// An exclusion prunes rg's walk. A positive glob is applied to rg's results instead:
		// rg lets it override .gitignore and matches it against the absolute paths it prints.
		args = append(args, "--glob", q.glob)
	}
	switch q.mode {
	case "files_with_matches":
		args = append(args, "--files-with-matches", "--null")
	case "count":
		args = append(args, "--count", "--null", "--with-filename")
	default:
		// No line rg prints is longer than maxRgColumns and a preview; and rg stops reading a
		// file once it found more matches than its block can show (maxCount).
		args = append(args, "--null", "--with-filename", "--line-number", "--no-heading", "--color", "never",
			"--max-columns", strconv.Itoa(maxRgColumns), "--max-columns-preview", "--max-count", strconv.Itoa(maxCount),
			"--after-context", strconv.Itoa(q.after), "--before-context", strconv.Itoa(q.before))
	}
	return append(args, "--regexp", q.pattern, "--", q.root)
}

// maxRgColumns is the longest line rg prints whole; it shows a longer one's start.
const maxRgColumns = 4096

// searchRipgrep runs rg and gives what it finds to a, as it prints it: keel holds no more of
// its output than the answer.
func searchRipgrep(ctx context.Context, rg string, q grepQuery, a *grepAnswer, lineNums bool) error {
	cmd := exec.CommandContext(ctx, rg, rgArgs(q, a.maxFileMatches(q.root))...)
	stderr := &cappedWriter{max: 4 << 10}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ripgrep: %w", err)
	}
	if q.glob != "" && !strings.HasPrefix(q.glob, "!") {
		keep, show := fileFilter(grepQuery{root: q.root, glob: q.glob}), a.show
		a.show = func(p string) bool { return keep(p) && (show == nil || show(p)) }
	}
	r := rgReader{br: bufio.NewReaderSize(stdout, 64<<10)}
	var found bool
	switch q.mode {
	case "content":
		found = readRgLines(&r, q, a, lineNums)
	default:
		found = readRgSummary(&r, q.mode, a)
	}
	io.Copy(io.Discard, stdout) // whatever is left, so rg is not stopped by a full pipe
	werr := cmd.Wait()
	if r.err != nil {
		return fmt.Errorf("read ripgrep output: %w", r.err)
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee) && ee.ExitCode() == 1: // no match
	case found: // exit 2 after unreadable files: keep what was found
	default:
		return fmt.Errorf("ripgrep: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// rgReader reads rg's output a record at a time, a record longer than the buffer cut to it.
type rgReader struct {
	br  *bufio.Reader
	err error
}

// next returns the next record ending in delim (without it), valid until the next call;
// ok is false at the end of the output.
func (r *rgReader) next(delim byte) (rec []byte, ok bool) {
	rec, err := r.br.ReadSlice(delim)
	if errors.Is(err, bufio.ErrBufferFull) {
		rec = bytes.Clone(rec)
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = r.br.ReadSlice(delim)
		}
	}
	rec = bytes.TrimSuffix(rec, []byte{delim})
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return rec, err == nil || len(rec) > 0
}

// readRgSummary reads rg --files-with-matches or --count output: a path, NUL, and in count
// mode the count and a newline.
func readRgSummary(r *rgReader, mode string, a *grepAnswer) (found bool) {
	for {
		path, ok := r.next(0)
		if !ok {
			return found
		}
		p, matches := string(path), 1
		if mode == "count" {
			n, _ := r.next('\n')
			matches, _ = strconv.Atoi(string(n))
		}
		if p != "" && matches > 0 {
			found = true
			a.add(summaryBlock(mode, p, matches))
		}
	}
}

// readRgLines reads rg's content output: path, NUL, line number, ':' for a match or '-' for
// context, the line. A file's lines come together; "--" lines between groups are dropped (the
// block builder puts its own).
func readRgLines(r *rgReader, q grepQuery, a *grepAnswer, lineNums bool) (found bool) {
	var bb *blockBuilder
	flush := func() {
		if bb != nil && bb.block.matches > 0 {
			found = true
			b := bb.block
			b.partial = b.matches >= a.maxFileMatches(q.root)
			a.add(b)
		}
		bb = nil
	}
	defer flush()
	for {
		rec, ok := r.next('\n')
		if !ok {
			return
		}
		path, rest, ok := bytes.Cut(rec, []byte{0})
		if !ok {
			continue // a group separator
		}
		i := bytes.IndexAny(rest, ":-")
		if i <= 0 {
			continue
		}
		num, err := strconv.Atoi(string(rest[:i]))
		if err != nil {
			continue
		}
		if bb == nil || bb.block.path != string(path) {
			flush()
			bb = newBlockBuilder(string(path), q, lineNums, a)
		}
		match := rest[i] == ':'
		if match {
			bb.block.matches++
		}
		text, size := rest[i+1:], len(rest)-i-1
		if t, cut := rgPreview(text); cut {
			text, size = t, -1
		}
		bb.add(num, text, size, match)
	}
}

// rgPreviewSuffix ends rg's preview of a line longer than --max-columns; " [... 3 more
// matches]" may stand in its place. Compiled on first use, as most runs never need it.
var rgPreviewSuffix = lazy.Regexp{Expr: ` \[\.\.\. (omitted end of long line|\d+ more matches?)\]$`}

// rgPreview strips rg's note from the preview of a long line.
func rgPreview(text []byte) ([]byte, bool) {
	if len(text) <= maxRgColumns {
		return text, false
	}
	if loc := rgPreviewSuffix.Get().FindIndex(text); loc != nil {
		return text[:loc[0]], true
	}
	return text, false
}

// cappedWriter keeps the first max bytes written to it (ripgrep's stderr, for an error).
type cappedWriter struct {
	max int
	buf bytes.Buffer
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (w *cappedWriter) String() string { return w.buf.String() }
