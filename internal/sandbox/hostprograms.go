package sandbox

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/hostexec"
)

// keelPrograms are keel's executables, which keel starts itself from the directory of the one
// running (companion.Find looks beside it first): where that directory lies in a writable root
// (keel built into the project it works on, `~/go/bin` with home a root), each is read-only
// in the sandbox — with a placeholder when absent, since a command could otherwise add the
// one keel looks for first.
var keelPrograms = []string{"keel", "keel-tui", HelperProgram, "keel-nats", "keel-otel", "keel-web"}

// guardHost protects what keel runs outside the sandbox from what p's commands can write:
// hostexec skips every PATH entry they can write when keel looks up git, bwrap, sh or rg, and
// keel's own executables, where a writable root holds them, are read-only (exe is the helper);
// and the Python programs keel runs outside keep their bytecode in keel's directory, not in the
// __pycache__ folders beside their sources, where a command could plant a .pyc for them.
func (s *Sandbox) guardHost(exe string) {
	p := &s.policy
	if len(p.Writable) == 0 {
		return
	}
	if p.PythonCache != "" {
		hostexec.PythonCache(p.PythonCache)
	}
	self, _ := os.Executable()
	var mine []string
	for _, x := range []string{self, exe} {
		if x == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(x); err == nil {
			x = real
		}
		for _, name := range append(slices.Clone(keelPrograms), filepath.Base(x)) {
			if c := filepath.Join(filepath.Dir(x), name); withinAny(c, p.Writable) && !slices.Contains(mine, c) {
				mine = append(mine, c)
			}
		}
	}
	if len(mine) > 0 {
		p.ReadOnly = slices.Clone(p.ReadOnly)
		p.why = maps.Clone(p.why)
		for _, c := range mine {
			p.add(&p.ReadOnly, c, "keel's own executables (in a writable root: a command could replace what keel runs next)")
		}
	}
	hostexec.Guard(p.WritableAt)
}

// helperFiles hold each helper program open, from the first sandbox that uses it to the end of
// the process: keel executes the helper from this descriptor, never again by its path, so a
// command that renames another program over the path (keel's binaries in a writable root)
// changes nothing keel runs.
var helperFiles = struct {
	sync.Mutex
	m map[string]*os.File
}{}

// openHelper returns the held descriptor of the helper at path, opening it the first time.
func openHelper(path string) (*os.File, error) {
	helperFiles.Lock()
	defer helperFiles.Unlock()
	if f := helperFiles.m[path]; f != nil {
		return f, nil
	}
	f, err := os.Open(path) // close-on-exec: each command gets it as one of its ExtraFiles
	if err != nil {
		return nil, fmt.Errorf("open the sandbox helper %s: %w", path, err)
	}
	if helperFiles.m == nil {
		helperFiles.m = map[string]*os.File{}
	}
	helperFiles.m[path] = f
	return f, nil
}

// helperFD passes the held helper to cmd as its last extra file and returns the path under
// which the process cmd starts (and bubblewrap inside its namespaces) executes it. The
// descriptor is closed on the helper's own exec of the command (closeInherited).
func (s *Sandbox) helperFD(cmd *exec.Cmd) string {
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, s.exeFile)
	return "/proc/self/fd/" + strconv.Itoa(fd)
}

// ExposedPath says, for the session's notice and `keel doctor`, which PATH entries p's
// commands can write: keel's own programs skip them ([hostexec.Path]), but a program a hook,
// the status line or an MCP server names by bare name is looked up there. Empty when none (or
// the sandbox is off).
func ExposedPath(p Policy) string {
	if !p.Enabled() || len(p.Writable) == 0 {
		return ""
	}
	return hostexec.Describe(hostexec.Exposed(os.Getenv("PATH"), p.WritableAt))
}

// hostFindings are `keel doctor`'s lines on what keel runs outside the sandbox: its own
// executables (from a descriptor; read-only where a writable root holds them) and the PATH
// entries commands can write.
func hostFindings(s *Sandbox, p Policy) []Finding {
	if !p.Enabled() {
		return nil
	}
	own := Finding{Name: "keel binaries", Status: "ok",
		Detail: "the helper (" + s.exe + ") is run from a descriptor opened when the sandbox was set up, never again by its path"}
	var ro []string
	for _, r := range p.ReadOnly {
		if slices.Contains(keelPrograms, filepath.Base(r)) || r == s.exe {
			ro = append(ro, r)
		}
	}
	if len(ro) > 0 {
		own.Detail += "; they lie in a writable root, so these are read-only in the sandbox: " + strings.Join(ro, ", ")
	}
	out := []Finding{own}
	if d := ExposedPath(p); d != "" {
		out = append(out, Finding{Name: "PATH", Status: "warn", Detail: d})
	}
	return out
}
