// Package toolpath is the one resolver from a tool's path input to the file the kernel opens:
// "~", "~user" and "$HOME" mean the home directory, ".." applies after symlinks as in open(2),
// and relative paths are relative to the agent's cwd, never the process's. A call's paths are
// resolved once, by the permission gate: the check judges that [Path] and the tool acts on the
// same one, opening it without following a link. Resolving twice let a command swap a link in
// for the file between the check and the use.
//
// Every file tool goes through it: Read, Write, Edit, NotebookEdit (file_path, notebook_path),
// Glob (pattern and path, see [GlobRoot]), Grep (path) and any later tool that takes a path.
// A tool acts on [Path.Real]; it shows [Path.Abs] where the user's spelling matters.
package toolpath

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// Path is one tool path input, resolved.
type Path struct {
	// Given is the input as the model wrote it.
	Given string
	// Abs is the input made absolute ("~" and "$HOME" expanded, relative to the cwd) and
	// cleaned lexically: the path as written, which deny rules also match.
	Abs string
	// Real is what the kernel would open: every symlink followed, ".." applied to the
	// resolved prefix, a missing tail kept as written. Tools open this.
	Real string
}

// Resolve resolves input for a tool running in cwd. home is the home directory "~" and
// "$HOME" stand for; empty means the user's ($HOME). An empty input is cwd itself.
func Resolve(input, cwd, home string) Path {
	abs := Expand(input, home)
	if !filepath.IsAbs(abs) {
		// Not Join, which would apply ".." before symlinks are resolved.
		abs = cwd + string(filepath.Separator) + abs
	}
	return Path{Given: input, Abs: filepath.Clean(abs), Real: resolve(abs, 0)}
}

// Real is Resolve(p, "/", "").Real for a path that is already absolute (a working directory,
// a rule's anchor).
func Real(p string) string {
	if !filepath.IsAbs(p) {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	return resolve(p, 0)
}

// Expand replaces a leading "~", "~user", "$HOME" or "${HOME}" with that home directory, the
// way a shell would before the model's path reached a program. Anything else is returned
// unchanged: tools do no other expansion, so "$X/y" is a file named "$X" below the cwd.
func Expand(input, home string) string {
	head, rest, slash := strings.Cut(filepath.ToSlash(input), "/")
	var dir string
	switch {
	case head == "~", head == "$HOME", head == "${HOME}":
		dir = home
		if dir == "" {
			dir, _ = os.UserHomeDir()
		}
	case strings.HasPrefix(head, "~"):
		u, err := user.Lookup(head[1:])
		if err != nil {
			return input // no such user: a literal "~name" below the cwd, as in a shell
		}
		dir = u.HomeDir
	default:
		return input
	}
	if dir == "" {
		return input
	}
	if !slash {
		return dir
	}
	return dir + string(filepath.Separator) + filepath.FromSlash(rest)
}

// maxLinks is how many symlinks one resolution follows, as Linux's MAXSYMLINKS; past it the
// kernel fails with ELOOP and the rest is kept lexically, so the open fails too.
const maxLinks = 40

func resolve(p string, depth int) string {
	if depth > maxLinks {
		return filepath.Clean(p)
	}
	vol := filepath.VolumeName(p)
	dest := vol + string(filepath.Separator)
	parts := strings.Split(filepath.ToSlash(p[len(vol):]), "/")
	for i, c := range parts {
		switch c {
		case "", ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Nothing below a missing component exists, so the rest is lexical.
			return filepath.Join(append([]string{next}, parts[i+1:]...)...)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			dest = next
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			return filepath.Join(append([]string{next}, parts[i+1:]...)...)
		}
		if !filepath.IsAbs(target) {
			// Not Join: ".." in a link target must apply after resolving.
			target = dest + string(filepath.Separator) + target
		}
		dest = resolve(target, depth+1)
	}
	return dest
}

// Within reports whether p is dir or below it. Both must be absolute and clean.
func Within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
