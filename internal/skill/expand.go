package skill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/sandbox"
)

// ShellRun records one "!" command found in a body.
type ShellRun struct {
	Command string
	// Output is what replaced the command in the text.
	Output string
	// Denied is set when AllowShell refused the command; it did not run.
	Denied bool
}

// Limits on what expansion may pull into a prompt.
const (
	maxShellOutput = 16 << 10
	maxFileBytes   = 256 << 10
)

var (
	inlineShell = lazy.Regexp{Expr: "(^|[\\s(>])!`([^`\n]+)`"}
	fileRef     = lazy.Regexp{Expr: `(^|[\s(])@([^\s()\[\]<>"'` + "`" + `]+)`}
)

// expander turns a substituted body into the prompt text: it runs the shell commands the
// caller allows and appends the files the body mentions with @path.
type expander struct {
	opts    Options
	cwd     string
	allowed []string
	runs    []ShellRun
	files   []string // resolved paths, in order of first mention
	// onlyRefs, when not nil, limits @path mentions to those the body's author wrote: a model
	// passing "@~/.ssh/id_rsa" as arguments must not read files around the Read permission.
	onlyRefs map[string]bool
	display  []string // the path as written, parallel to files
	// refused are the notes on mentions [Options.Refuse] kept out, in order.
	refused []string
	// untrusted is set for an untrusted project's entry: its shell lines are left as written
	// and its @file mentions must stay inside the project.
	untrusted bool
	// origin names the entry and who invoked it, for BeforeShell.
	origin ShellCommand
}

// ShellCommand is a "!" command about to run, for [Options.BeforeShell]: the command, the
// skill or command whose text holds it, where that came from, and who invoked it.
type ShellCommand struct {
	Command string
	Name    string
	Source  Source
	By      Invoker
}

// expand processes text line by line. Fenced code blocks are left alone: shell and @ there
// are examples, not instructions.
//
// Two shell forms run: the inline form !`cmd` (Claude Code's), and a line whose first
// character is "!" followed by the command ("![" starts an image and is not a command).
func (e *expander) expand(ctx context.Context, text string) string {
	lines := strings.Split(text, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " \t")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if f := fenceOf(trimmed); f != "" {
			fence = f
			continue
		}
		e.collectFiles(line)
		if cmd, ok := lineCommand(line); ok {
			if out, ran := e.shell(ctx, cmd); ran {
				lines[i] = out
			}
			continue
		}
		lines[i] = inlineShell.Get().ReplaceAllStringFunc(line, func(m string) string {
			sub := inlineShell.Get().FindStringSubmatch(m)
			if out, ran := e.shell(ctx, sub[2]); ran {
				return sub[1] + out
			}
			return m
		})
	}
	out := strings.Join(lines, "\n")
	if n := e.notRun(); n > 0 {
		out += fmt.Sprintf("\n\n[keel: %d shell command(s) above were left as written, not run: this project's workspace is not trusted (keel trust, or --trust).]", n)
	}
	return out + e.attachments()
}

// notRun counts the shell commands an untrusted entry left unexpanded.
func (e *expander) notRun() int {
	if !e.untrusted {
		return 0
	}
	return len(e.runs)
}

func fenceOf(trimmed string) string {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(trimmed, f) {
			return f
		}
	}
	return ""
}

func lineCommand(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "!")
	if !ok || strings.HasPrefix(rest, "[") || strings.HasPrefix(rest, "`") {
		return "", false
	}
	cmd := strings.TrimSpace(rest)
	return cmd, cmd != ""
}

// shell runs one command if allowed and returns what replaces it in the text. ran is false
// for an untrusted entry: its command is left as written, unrun.
func (e *expander) shell(ctx context.Context, cmd string) (out string, ran bool) {
	if e.untrusted {
		e.runs = append(e.runs, ShellRun{Command: cmd, Output: "[not run: the workspace is not trusted]", Denied: true})
		return "", false
	}
	return e.run(ctx, cmd), true
}

func (e *expander) run(ctx context.Context, cmd string) string {
	var err error
	if e.opts.BeforeShell != nil {
		c := e.origin
		c.Command = cmd
		err = e.opts.BeforeShell(ctx, c)
	}
	switch {
	case err != nil:
	case e.opts.AllowShell == nil:
		err = errors.New("shell commands in skills are not enabled")
	default:
		err = e.opts.AllowShell(ctx, cmd, e.allowed)
	}
	if err != nil {
		out := fmt.Sprintf("[shell command not run: %s: %v]", cmd, err)
		e.runs = append(e.runs, ShellRun{Command: cmd, Output: out, Denied: true})
		return out
	}
	timeout := e.opts.ShellTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := hostexec.Command(ctx, "sh", "-c", cmd)
	c.Dir = e.cwd
	c.WaitDelay = time.Second
	note := ""
	var run *sandbox.Run
	if sb := e.opts.Sandbox; sb != nil && sb.Policy().Choose(cmd, false) == sandbox.Inside {
		// Keel's own environment, not Command's: Python inside keeps its bytecode as usual
		// (PYTHONPYCACHEPREFIX is for what runs outside).
		c.Env = sandbox.WithoutCredentials(nil)
		// A sandbox that is on but cannot confine this command fails it, as Bash does: the
		// reasons include ones a command brings about (files that push a deny rule past
		// what can be masked, a limit reached), so running it outside instead would let a
		// command move the next one out of the sandbox.
		var err error
		if run, err = sb.Confine(c); err != nil {
			out := fmt.Sprintf("[shell command not run: %s: %v]", cmd, err)
			e.runs = append(e.runs, ShellRun{Command: cmd, Output: out, Denied: true})
			return out
		}
	}
	// At the time limit the whole group goes, and under bubblewrap the sandbox from inside.
	procgroup.Own(c)
	c.Cancel = func() error { return run.Kill(c.Process.Pid) }
	raw, runErr := c.CombinedOutput()
	for _, p := range run.Release() { // a nil run releases nothing
		note += "\n[Sandbox: connection refused by the proxy: " + p + "]"
	}
	for _, p := range run.Planted() {
		note += "\n[Sandbox: " + p + "]"
	}
	out := strings.TrimRight(string(capBytes(raw, maxShellOutput)), "\n") + note
	if runErr != nil {
		out += fmt.Sprintf("\n[%s: %v]", cmd, runErr)
		out = strings.TrimLeft(out, "\n")
	}
	e.runs = append(e.runs, ShellRun{Command: cmd, Output: out})
	return out
}

func capBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return append(b[:n:n], []byte("\n[output truncated]")...)
}

// collectFiles records the @path mentions of a line (outside code spans) that name readable
// text files. Other mentions (@handles, missing files) stay plain text.
func (e *expander) collectFiles(line string) {
	for _, m := range fileRef.Get().FindAllStringSubmatch(blankCodeSpans(line), -1) {
		raw := strings.TrimRight(m[2], ".,;:!?")
		if e.onlyRefs != nil && !e.onlyRefs[raw] {
			continue
		}
		written, path, ok := e.resolve(raw)
		if !ok || slices.Contains(e.files, path) {
			continue
		}
		if e.opts.Refuse != nil {
			// Asked of the path as written too, for a rule naming the link itself.
			why := e.opts.Refuse(path)
			if why == "" && written != path {
				why = e.opts.Refuse(written)
			}
			if why != "" {
				if note := fmt.Sprintf("[keel: @%s is not included: %s]", raw, why); !slices.Contains(e.refused, note) {
					e.refused = append(e.refused, note)
				}
				continue
			}
		}
		e.files = append(e.files, path)
		e.display = append(e.display, raw)
	}
}

// resolve turns a mention into the file's path as written (cleaned) and with its links
// resolved, the one to check and read; ok is false for anything but a regular file small
// enough to attach.
func (e *expander) resolve(raw string) (written, real string, ok bool) {
	var path string
	switch {
	case strings.HasPrefix(raw, "~/"):
		if e.opts.Home == "" {
			return "", "", false
		}
		path = filepath.Join(e.opts.Home, raw[2:])
	case filepath.IsAbs(raw):
		path = raw
	default:
		path = filepath.Join(e.cwd, raw)
	}
	// Resolved once, here: Refuse and the project check judge this path, and attachments
	// opens it with no link allowed on the way. A command in the background swapping the file
	// for a link (rename-exchange, in a loop) could otherwise have the check see one file and
	// the read follow the link to a Read-denied or masked one (adversary11 F5). A stable link
	// still works: its target is what is checked and read.
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", "", false
	}
	st, err := os.Lstat(real)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxFileBytes {
		return "", "", false
	}
	if e.untrusted && !insideProject(e.opts.ProjectRoot, real) {
		return "", "", false
	}
	return filepath.Clean(path), real, true
}

// insideProject reports whether path, symlinks resolved, is in the project root.
func insideProject(root, path string) bool {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(r, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// attachments renders the mentioned files after the text, each once, and a note for each
// mention that was refused.
func (e *expander) attachments() string {
	var b strings.Builder
	for _, note := range e.refused {
		b.WriteString("\n\n" + note)
	}
	for i, path := range e.files {
		// No link followed, no FIFO waited on (F6), no more than the size resolve allowed.
		data, err := atomicfile.ReadRegular(path, maxFileBytes)
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			continue
		}
		fmt.Fprintf(&b, "\n\n<file path=%q>\n%s", e.display[i], data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString("</file>")
	}
	return b.String()
}

// authorRefs lists the @path mentions of a body before any arguments are substituted.
func authorRefs(body, skillDir string) map[string]bool {
	refs := map[string]bool{}
	for line := range strings.SplitSeq(Substitute(body, "", skillDir), "\n") {
		for _, m := range fileRef.Get().FindAllStringSubmatch(blankCodeSpans(line), -1) {
			refs[strings.TrimRight(m[2], ".,;:!?")] = true
		}
	}
	return refs
}

// blankCodeSpans replaces the inside of `code spans` with spaces, keeping offsets.
func blankCodeSpans(line string) string {
	b := []byte(line)
	in := false
	for i, c := range b {
		if c == '`' {
			in = !in
			continue
		}
		if in {
			b[i] = ' '
		}
	}
	return string(b)
}
