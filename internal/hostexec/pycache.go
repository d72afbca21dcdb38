package hostexec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// pycacheVar is the variable that moves CPython's bytecode cache (3.8 and later) out of the
// __pycache__ folders beside the sources.
const pycacheVar = "PYTHONPYCACHEPREFIX"

// PythonCache makes dir the bytecode cache of every Python program keel runs outside the
// sandbox ([PythonEnv]), for the rest of the process: call it when a sandbox is set up, with a
// directory no sandboxed command can write (under keel's home). CPython runs a cached .pyc in
// place of its source whenever the .pyc's header carries the source's modification time and
// size, both of which any command can read: a sandboxed command that compiles its own code
// into tools/__pycache__/lint.cpython-311.pyc would otherwise have a hook's `python3 -m
// tools.lint` run it outside, however read-only keel keeps tools/lint.py. With the cache kept
// elsewhere, Python neither reads nor writes __pycache__ beside the sources. The last
// directory set stays: a process holding several sessions shares one (each under a keel home,
// which no session's commands can write).
func PythonCache(dir string) {
	mu.Lock()
	defer mu.Unlock()
	if filepath.IsAbs(dir) {
		pycache = filepath.Clean(dir)
	}
}

// PythonEnv is env (nil: keel's own) with PYTHONPYCACHEPREFIX naming the directory
// [PythonCache] set: the environment of a program keel runs outside the sandbox that may be
// Python. A prefix env sets already stays when it is an absolute path no sandboxed command
// can write (the user's own cache elsewhere); one they can write — or a relative one, which
// lands beside whatever Python runs from — would be the same hole, and is replaced. env is
// returned as it is before any sandbox has set a directory.
func PythonEnv(env []string) []string {
	mu.Lock()
	dir := pycache
	mu.Unlock()
	if dir == "" {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	// os/exec passes the last of a variable's assignments.
	for i := len(env) - 1; i >= 0; i-- {
		v, ok := strings.CutPrefix(env[i], pycacheVar+"=")
		if !ok {
			continue
		}
		if v != "" && filepath.IsAbs(v) && !commandWritable(filepath.Clean(v)) {
			return env
		}
		break
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, pycacheVar+"=") })
	return append(out, pycacheVar+"="+dir)
}

// commandWritable is writable, taking mu for the guards: p's nearest existing ancestor stands
// for it where p is absent (a prefix Python has not made yet), its links resolved.
func commandWritable(p string) bool {
	mu.Lock()
	defer mu.Unlock()
	if writable(p) {
		return true
	}
	for d := p; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			return writable(d)
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}
