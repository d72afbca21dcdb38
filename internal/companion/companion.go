// Package companion finds keel's companion binaries: keel-tui (the terminal UI), keel-nats
// (the supervisor's embedded nats-server, teams on NATS), keel-otel (telemetry's exporter) and
// keel-web (WebFetch's page converter). They are separate programs so that every keel
// process does not pay for linking what only some runs use; `go install ./cmd/...` and
// `make build` put them beside keel.
package companion

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/hostexec"
)

// KeelNATS is the NATS companion: the supervisor's embedded nats-server, and (`keel-nats
// coord`) keel's way to a team's store on NATS.
const KeelNATS = "keel-nats"

// ErrNotFound: the program is neither beside the executables searched nor on PATH.
var ErrNotFound = errors.New("not found")

// Find returns the path of program name: in the directory of each of beside (keel binaries
// the caller knows of, such as the one that will run jobs), then in this executable's
// directory, then on PATH. An error wraps [ErrNotFound] and names every place looked in.
func Find(name string, beside ...string) (string, error) {
	if self, err := os.Executable(); err == nil {
		beside = append(beside, self)
	}
	var dirs []string
	for _, exe := range beside {
		if exe == "" {
			continue
		}
		dir := filepath.Dir(exe)
		if p := filepath.Join(dir, name); isProgram(p) {
			return p, nil
		}
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	if p, err := hostexec.Path(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s %w in %s or on PATH", name, ErrNotFound, strings.Join(dirs, ", "))
}

// Beside returns program name from this executable's directory only, never from PATH: for a
// helper that must be of this keel's version (the sandbox's keel-sandbox).
func Beside(name string) (string, bool) {
	self, err := os.Executable()
	if err != nil {
		return "", false
	}
	p := filepath.Join(filepath.Dir(self), name)
	return p, isProgram(p)
}

// isProgram says p is a regular file someone may execute.
func isProgram(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Self is the program to start again as keel (the supervisor, its jobs, process teammates):
// this one as it was invoked — a name found on PATH resolved there, a relative path made
// absolute — so that a link named keel, or a test harness that dispatches on its name, keeps
// working; os.Executable would resolve the link. A name is looked up as keel looks up every
// program it runs itself ([hostexec.Path]): never where a sandboxed command could have put a
// keel of its own. It falls back to the executable itself.
func Self() string {
	if arg := os.Args[0]; strings.ContainsRune(arg, filepath.Separator) {
		if abs, err := filepath.Abs(arg); err == nil {
			return abs
		}
	} else if p, err := hostexec.Path(arg); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	exe, _ := os.Executable()
	return exe
}

// Keel is the keel binary for exe: exe itself, or the plain keel beside it when exe is
// keel-tui (which hands background agents to the supervisor, run under keel: it starts
// without the UI).
func Keel(exe string) string {
	if filepath.Base(exe) == "keel-tui" {
		plain := filepath.Join(filepath.Dir(exe), "keel")
		if fi, err := os.Stat(plain); err == nil && !fi.IsDir() {
			return plain
		}
	}
	return exe
}
