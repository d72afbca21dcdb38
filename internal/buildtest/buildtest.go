// Package buildtest builds keel's own commands for tests that run them as processes of their
// own: the Agent SDK suite, the MCP conformance suite, the process-level kill test, the
// terminal UI in tmux, benchmarks of whole runs.
package buildtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Options say how to build.
type Options struct {
	// Race builds race-enabled binaries ([RaceEnabled] passes on the test's own mode). They
	// start and run several times slower, so tests that start hundreds of processes use
	// plain ones; the race detector still sees the same code in the in-process tests.
	Race bool
	// TUI builds cmd/keel-tui beside cmd/keel, as go install ./cmd/... does: keel hands
	// interactive runs to keel-tui in its own directory.
	TUI bool
	// NATS builds cmd/keel-nats beside cmd/keel: the supervisor runs it for the embedded
	// nats-server. It is never race-enabled: the server's own code is not under test.
	NATS bool
	// OTel builds cmd/keel-otel beside cmd/keel: keel runs it when telemetry is on.
	OTel bool
	// Web builds cmd/keel-web beside cmd/keel: WebFetch runs it to convert pages. It is
	// never race-enabled: its converter runs under the race detector in-process
	// (htmltext.InProcess).
	Web bool
}

// Keel builds cmd/keel (and cmd/keel-tui, cmd/keel-nats, cmd/keel-otel, cmd/keel-web as opts say) into a new directory of t and returns
// the keel binary's path.
func Keel(t testing.TB, opts Options) string {
	t.Helper()
	bin, err := Build(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Build builds into dir, for callers that share one build across tests (a sync.Once over a
// directory of their own), and returns the keel binary's path.
func Build(dir string, opts Options) (string, error) {
	pkgs := []string{"./cmd/keel"}
	if opts.TUI {
		pkgs = append(pkgs, "./cmd/keel-tui")
	}
	if opts.OTel {
		pkgs = append(pkgs, "./cmd/keel-otel")
	}
	if err := build(dir, opts.Race, pkgs...); err != nil {
		return "", err
	}
	if opts.NATS {
		if _, err := CompanionInto(dir, "keel-nats"); err != nil {
			return "", err
		}
	}
	if opts.Web {
		if _, err := CompanionInto(dir, "keel-web"); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "keel"), nil
}

// CompanionInto builds keel's companion program cmd/NAME (keel-nats, keel-web) alone into dir
// and returns its path.
func CompanionInto(dir, name string) (string, error) {
	if err := build(dir, false, "./cmd/"+name); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// Companion builds keel's companion program cmd/NAME into a directory of t and returns its
// path: for in-process tests that reach it as keel does — keel-nats for teams on NATS
// (teamstore.Options.NATSBinary), keel-web to convert fetched pages (webfetch.Companion.Path,
// session.Options.WebBinary).
func Companion(t testing.TB, name string) string {
	t.Helper()
	p, err := CompanionInto(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func build(dir string, race bool, pkgs ...string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if race {
		args = append(args, "-race")
	}
	args = append(args, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// moduleRoot is the directory of keel's go.mod, found from the test's working directory.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the keel module")
	}
	return filepath.Dir(mod), nil
}
