package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// rgArgs builds the ripgrep command line that finds the files the built-in search would find
// a match in: hidden files searched, .git skipped, only .gitignore files honoured (not
// .ignore, global or .git/info/exclude rules, which the built-in walker does not read), with
// or without a git repository. rg lists the files; keel searches them (see searchRipgrep).
func rgArgs(q grepQuery) []string {
	args := []string{"--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-exclude",
		"--no-ignore-dot", "--glob", "!.git", "--files-with-matches", "--null"}
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
	return append(args, "--regexp", q.pattern, "--", q.root)
}

// searchRipgrep has rg find the files with a match, and searches each of them as the built-in
// engine does (searchFiles), which gives the answer: rg walks and reads by path, so a
// sandboxed command in the background that swaps a directory of the tree for a link
// (rename-exchange, in a loop) can lead it to files below where the link points — a file a
// deny rule covers, or one outside the working directories. keel opens every file rg names
// without following a link on its way: a name rg found only through the link names no file
// there, and what Grep shows and counts was read from the file at the path it shows. rg's
// fast walk and matcher pick the few files worth reading; keel reads only those.
func searchRipgrep(ctx context.Context, rg string, q grepQuery, a *grepAnswer, lineNums bool) error {
	keep := func(string) bool { return true }
	if q.glob != "" && !strings.HasPrefix(q.glob, "!") {
		keep = fileFilter(grepQuery{root: q.root, glob: q.glob})
	}
	return searchFiles(ctx, q, a, lineNums, func(ctx context.Context, send func(string, *os.File)) error {
		c := dirCursor{root: q.root}
		defer c.Close()
		return listRipgrep(ctx, rg, q, func(p string) {
			if keep(p) && (q.hidden == nil || !q.hidden(p)) {
				if f, err := c.open(p); err == nil {
					send(p, f)
				}
			}
		})
	})
}

// listRipgrep runs rg and gives each file it lists to found, as rg prints it.
func listRipgrep(ctx context.Context, rg string, q grepQuery, found func(path string)) error {
	cmd := exec.CommandContext(ctx, rg, rgArgs(q)...)
	stderr := &cappedWriter{max: 4 << 10}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ripgrep: %w", err)
	}
	r := rgReader{br: bufio.NewReaderSize(stdout, 64<<10)}
	listed := false
	for {
		path, ok := r.next(0)
		if !ok {
			break
		}
		if len(path) > 0 {
			listed = true
			found(string(path))
		}
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
	case listed: // exit 2 after unreadable files: keep what was found
	default:
		if msg := rgError(stderr.String(), q.root); msg != "" {
			return fmt.Errorf("ripgrep: %v: %s", werr, msg)
		}
	}
	return nil
}

// rgError is what of rg's stderr Grep shows when rg failed: its lines but those about a
// file of the tree. rg names a file it could not read by the path it walked, which can be
// one it found through a link swapped in (the name of a file a deny rule covers, gone by the
// time rg opened it); and the built-in engine skips unreadable files too. "" when nothing
// else is left: the search found nothing.
func rgError(stderr, root string) string {
	var kept []string
	for line := range strings.SplitSeq(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(strings.TrimPrefix(line, "rg: "), root) {
			kept = append(kept, line)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
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
