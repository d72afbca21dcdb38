package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// Choice is how one Bash command runs.
type Choice int

// The choices of [Policy.Choose].
const (
	// Inside: in the sandbox.
	Inside Choice = iota
	// Outside: without it — the sandbox is off, the command is excluded, or the call asked
	// for it (dangerouslyDisableSandbox) and allowUnsandboxedCommands permits it. The normal
	// permission flow decides such a call.
	Outside
	// Refused: the call asked to run outside and allowUnsandboxedCommands is false.
	Refused
)

// Choose says how command runs; disable is the call's dangerouslyDisableSandbox.
func (p Policy) Choose(command string, disable bool) Choice {
	switch {
	case !p.Enabled():
		return Outside
	case disable && !p.AllowUnsandboxed:
		return Refused
	case disable, p.excluded(command):
		return Outside
	}
	return Inside
}

// excluded reports whether command is one of excludedCommands: a pattern as in a Bash rule,
// "docker ps" (exactly) or "docker:*" (docker and any arguments). A command with shell
// operators, substitutions or redirections never is: "docker ps; curl …" must not carry
// curl out of the sandbox.
func (p Policy) excluded(command string) bool {
	c := strings.TrimSpace(command)
	if c == "" || strings.ContainsAny(c, ";&|`$()<>\n\\") {
		return false
	}
	words := strings.Fields(c)
	for _, pat := range p.Excluded {
		if prefix, ok := strings.CutSuffix(pat, ":*"); ok {
			pw := strings.Fields(prefix)
			if len(pw) > 0 && len(words) >= len(pw) && slices.Equal(words[:len(pw)], pw) {
				return true
			}
			continue
		}
		if slices.Equal(words, strings.Fields(pat)) {
			return true
		}
	}
	return false
}

// deniedPath finds the paths of failed writes in a command's output, as the tools print them:
// "touch: cannot touch '/etc/x': Read-only file system", "bash: line 1: /etc/x: Permission
// denied".
var deniedPath = lazy.Regexp{Expr: `['"‘]?((?:/|\./|\.\./)?[^\s'"‘’:]+)['"’]?: (Read-only file system|Permission denied|Operation not permitted|No such file or directory|Is a directory)`}

// maxNotes bounds the sandbox notes added to one result.
const maxNotes = 5

// Explain returns notes for a sandboxed command's result: each write the sandbox refused,
// with the setting that would allow it; the masked paths the command named (they read as
// empty inside); each connection the proxy refused. dir resolves relative paths.
func (p Policy) Explain(command, output, dir string, refused []string) []string {
	var notes []string
	seen := map[string]bool{}
	for _, m := range deniedPath.Get().FindAllStringSubmatch(output, -1) {
		path := m[1]
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		path = filepath.Clean(path)
		if seen[path] || len(notes) >= maxNotes || p.WritableAt(path) {
			continue
		}
		if m[2] == "No such file or directory" {
			// Missing inside, present outside: under the private /tmp.
			if _, err := os.Lstat(path); err == nil && within(path, "/tmp") {
				seen[path] = true
				notes = append(notes, fmt.Sprintf("[Sandbox: %s is not visible inside the sandbox: /tmp is private to each command. Add it to sandbox.filesystem.allowWrite to share it.]", path))
			}
			continue
		}
		readOnly := withinAny(path, p.ReadOnly)
		if m[2] == "Is a directory" && !readOnly {
			continue // a real directory; a placeholder for an absent protected file is one too
		}
		seen[path] = true
		switch {
		case readOnly:
			notes = append(notes, fmt.Sprintf("[Sandbox: writing %s was denied: it is always read-only inside the sandbox (%s). Run the command with dangerouslyDisableSandbox: true to ask the user to run it outside.]", path, p.Why(path)))
		case p.Mode == ModeReadOnly:
			notes = append(notes, fmt.Sprintf("[Sandbox: writing %s was denied: the sandbox is read-only (--sandbox read-only).]", path))
		default:
			notes = append(notes, fmt.Sprintf("[Sandbox: writing %s was denied: it is outside the writable roots. Add it to sandbox.filesystem.allowWrite (or the working directories with --add-dir) to allow it.]", path))
		}
	}
	for _, m := range p.Masked {
		if len(notes) < maxNotes && strings.Contains(command, filepath.Base(m)) && !seen[m] {
			seen[m] = true
			notes = append(notes, fmt.Sprintf("[Sandbox: %s is masked (reads as empty) by %s.]", m, p.Why(m)))
		}
	}
	for _, r := range refused {
		if len(notes) < maxNotes {
			notes = append(notes, "[Sandbox: connection refused by the proxy: "+r+"]")
		}
	}
	return notes
}
