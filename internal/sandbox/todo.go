package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
)

// todoFiles are the to-do lists of a stopped rebase (rebase-merge/, which git rebase
// --continue reads) and of a stopped cherry-pick or revert (sequencer/, read by git
// cherry-pick --continue), relative to the gitdir. Neither is protected — git writes them
// as it rebases inside — and an exec line in either is a shell command git runs when the
// user continues outside the sandbox.
var todoFiles = []string{"rebase-merge/git-rebase-todo", "sequencer/todo"}

// strategyFiles name the merge strategy a stopped rebase (rebase-merge/strategy) or
// cherry-pick (sequencer/opts, as options.strategy) goes on with: a strategy that is not git's
// own git runs as the program git-merge-<name>, looked up on PATH or — a name with a slash —
// from the working tree, where a command can put one ("../x" runs git-merge-../x).
var strategyFiles = []string{"rebase-merge/strategy", "sequencer/opts"}

// builtinStrategies are the merge strategies git has of its own (or in its exec path).
var builtinStrategies = []string{"ort", "recursive", "resolve", "octopus", "ours", "subtree"}

// maxTodo is the largest to-do list keel reads: one larger is moved aside whole.
const maxTodo = 64 << 20

// todoStates is the state (statString: identity, size, times) of the to-do lists and strategy
// files of each of gitDirs, keyed by path.
func todoStates(gitDirs ...[]string) map[string]string {
	out := map[string]string{}
	for _, ds := range gitDirs {
		for _, d := range ds {
			for _, n := range slices.Concat(todoFiles, strategyFiles) {
				p := filepath.Join(d, n)
				out[p] = statString(p)
			}
		}
	}
	return out
}

// disarmTodos disarms the to-do lists ([disarmTodo]) and strategy files ([disarmStrategy]) of
// gitDirs that changed while a running command could write them: the state differs from what
// a running watch (the releasing one among them) saw as its command started — one it did not
// see counts as absent then. Call with s.disarmMu held.
func disarmTodos(s *Sandbox, gitDirs []string, writable []string) []string {
	var said []string
	for _, d := range gitDirs {
		for _, n := range slices.Concat(todoFiles, strategyFiles) {
			p := filepath.Join(d, n)
			if _, err := os.Lstat(p); err != nil {
				continue // none: nothing to continue
			}
			now := statString(p)
			changed := false
			for o := range s.watches {
				was, ok := o.todos[p]
				changed = changed || !ok || was != now
			}
			disarm := disarmTodo
			if slices.Contains(strategyFiles, n) {
				disarm = disarmStrategy
			}
			if changed {
				if msg := disarm(p, writable); msg != "" {
					slog.Warn("sandbox: a command wrote a to-do list git would run", "todo", p, "what", msg)
					said = append(said, msg)
				}
			}
		}
	}
	return said
}

// disarmTodo turns every exec line of the to-do list todo into a comment, so that continuing
// the rebase (or cherry-pick) outside runs nothing the command wrote, and keeps the file as
// written at todo.keel-refused; every other line stays, so a rebase stopped inside on a
// conflict can still be continued. A to-do list that is a link, a FIFO or anything but a
// regular file, or too large, goes aside whole; so does its directory when that is a link.
// It says what it did, or "" when there was nothing to do.
func disarmTodo(todo string, writable []string) string {
	stateDir, name := filepath.Dir(todo), filepath.Base(todo)
	if !inWritable(stateDir, writable) {
		return "" // outside the writable roots: no command wrote it
	}
	if fi, err := os.Lstat(stateDir); err != nil {
		return ""
	} else if !fi.IsDir() {
		msg, _ := moveAsidePath(stateDir, "is a link or a file where git keeps a stopped rebase or cherry-pick, so continuing it outside the sandbox would run the to-do list it leads to")
		return msg
	}
	dir, err := holdDir(stateDir)
	if err != nil {
		return fmt.Sprintf("the command changed %s, a to-do list git runs when a rebase or cherry-pick is continued, and keel could not read it (%v): do not continue it before you have checked it.", todo, err)
	}
	defer dir.close()
	b, err := dir.readRegular(name, maxTodo)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case errors.Is(err, errNotRegular), errors.Is(err, errTooLarge):
		why := "is not a regular file (a link, a FIFO)"
		if errors.Is(err, errTooLarge) {
			why = fmt.Sprintf("is larger than %d bytes", maxTodo)
		}
		aside := freeHeldName(dir, name+refusedSuffix)
		if err := dir.moveTo(name, dir, aside); err != nil {
			return fmt.Sprintf("the command made %s, a to-do list git runs when a rebase or cherry-pick is continued, which %s, and keel could not move it aside (%v): do not continue it before you have checked it.", todo, why, err)
		}
		return fmt.Sprintf("the command made %s, a to-do list git runs when a rebase or cherry-pick is continued, which %s. keel moved it to %s; the rebase cannot be continued as it stands.", todo, why, filepath.Join(stateDir, aside))
	case err != nil:
		return fmt.Sprintf("the command changed %s, a to-do list git runs when a rebase or cherry-pick is continued, and keel could not read it (%v): do not continue it before you have checked it.", todo, err)
	}
	kept, refused := refuseExecLines(b)
	if refused == 0 {
		return ""
	}
	aside := freeHeldName(dir, name+refusedSuffix)
	if err = dir.moveTo(name, dir, aside); err == nil {
		err = dir.writeFile(name, kept)
	}
	if err != nil {
		return fmt.Sprintf("the command wrote %s, a to-do list with %s, which continuing the rebase or cherry-pick outside the sandbox would run, and keel could not disarm it (%v): do not continue it before you have checked it.", todo, execLines(refused), err)
	}
	return fmt.Sprintf("the command wrote %s, a to-do list with %s, which continuing the rebase or cherry-pick outside the sandbox would run as shell commands. keel turned them into comments, kept the other lines, and moved the file as written to %s; the rebase can still be continued.", todo, execLines(refused), filepath.Join(stateDir, aside))
}

// disarmStrategy moves aside the file f (strategyFiles) when it names a merge strategy that is
// not git's own, or is not a regular file; the rebase or cherry-pick can still be continued,
// with git's default strategy. It says what it did, or "" when there was nothing to do.
func disarmStrategy(f string, writable []string) string {
	stateDir, name := filepath.Dir(f), filepath.Base(f)
	if fi, err := os.Lstat(stateDir); err != nil || !fi.IsDir() || !inWritable(stateDir, writable) {
		return "" // a link in its place goes aside with the to-do list it leads to (disarmTodo)
	}
	dir, err := holdDir(stateDir)
	if err != nil {
		return fmt.Sprintf("the command changed %s, which names the merge strategy git runs when a rebase or cherry-pick is continued, and keel could not read it (%v): do not continue it before you have checked it.", f, err)
	}
	defer dir.close()
	b, err := dir.readRegular(name, maxGitConfig)
	why := ""
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case errors.Is(err, errNotRegular), errors.Is(err, errTooLarge):
		why = "is not a regular file, or too large"
	case err != nil:
		return fmt.Sprintf("the command changed %s, which names the merge strategy git runs when a rebase or cherry-pick is continued, and keel could not read it (%v): do not continue it before you have checked it.", f, err)
	case name == "strategy":
		if s := string(bytes.TrimSpace(b)); s != "" && !slices.Contains(builtinStrategies, s) {
			why = fmt.Sprintf("names the merge strategy %q, which git would run as the program git-merge-%s", s, s)
		}
	default:
		entries, err := parseGitConfig(b)
		if err != nil {
			why = "git cannot read (" + err.Error() + ")"
		}
		for _, e := range entries {
			if e.key == "options.strategy" && !slices.Contains(builtinStrategies, e.value) {
				why = fmt.Sprintf("names the merge strategy %q, which git would run as the program git-merge-%s", e.value, e.value)
			}
		}
	}
	if why == "" {
		return ""
	}
	aside := freeHeldName(dir, name+refusedSuffix)
	if err := dir.moveTo(name, dir, aside); err != nil {
		return fmt.Sprintf("the command wrote %s, which %s when a rebase or cherry-pick is continued, and keel could not move it aside (%v): do not continue it before you have checked it.", f, why, err)
	}
	return fmt.Sprintf("the command wrote %s, which %s when a rebase or cherry-pick is continued. keel moved it to %s; the rebase can still be continued, with git's own strategy.", f, why, filepath.Join(stateDir, aside))
}

// execLines says how many exec lines there are, in words.
func execLines(n int) string {
	if n == 1 {
		return "1 exec line"
	}
	return fmt.Sprintf("%d exec lines", n)
}

// todoRefusedPrefix starts each exec line disarmTodo refuses: a comment to git.
const todoRefusedPrefix = "# keel refused this exec line, written inside the sandbox: "

// refuseExecLines is the to-do list b with each exec line commented out, and how many there
// were. A line is one when, after leading white space, it starts with "exec" or is "x" alone
// or followed by white space: git's own test (the command followed by white space or the
// line's end), and older git's, which took any word starting with "exec" for it.
func refuseExecLines(b []byte) ([]byte, int) {
	lines := bytes.SplitAfter(b, []byte("\n"))
	n := 0
	for i, l := range lines {
		if isExecLine(l) {
			lines[i] = append([]byte(todoRefusedPrefix), l...)
			n++
		}
	}
	return bytes.Join(lines, nil), n
}

// isExecLine reports whether line is an exec command of a git to-do list (refuseExecLines).
func isExecLine(line []byte) bool {
	t := bytes.TrimLeft(line, " \t\r\v\f")
	if bytes.HasPrefix(t, []byte("exec")) {
		return true
	}
	return len(t) > 0 && t[0] == 'x' && (len(t) == 1 || bytes.IndexByte([]byte(" \t\r\n\v\f"), t[1]) >= 0)
}
