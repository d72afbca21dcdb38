package lsp

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/lsp/lsptest"
	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/waittest"
)

// confining is a manager of one lsptest server whose start goes through confine.
func confining(t *testing.T, mode string, confine func(*exec.Cmd) (Confined, error), tweak func(*Config)) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	cmd, args, env := lsptest.Command(mode)
	cfg := Config{Name: "fake", Command: cmd, Args: args, Env: env, Extensions: map[string]string{".src": "fake"},
		StartupTimeout: waittest.Timeout()}
	if tweak != nil {
		tweak(&cfg)
	}
	m := New(Options{Servers: []Config{cfg}, Root: dir, Environ: os.Environ(), Wait: waittest.Timeout(), Confine: confine})
	t.Cleanup(m.Close)
	return m, dir
}

// fakeConfined counts kills and releases, and kills the group as the sandbox does.
type fakeConfined struct{ kills, released *atomic.Int32 }

func (f fakeConfined) Kill(pgid int) error {
	f.kills.Add(1)
	return procgroup.Kill(pgid)
}

func (f fakeConfined) Release() []string {
	f.released.Add(1)
	return nil
}

// TestConfinedServers: with Options.Confine (sandbox.wrapLspServers) a server's command goes
// through it before it starts and works as before; keel kills it through its sandbox and
// releases the sandbox once it has exited.
func TestConfinedServers(t *testing.T) {
	var confined, kills, released atomic.Int32
	confine := func(cmd *exec.Cmd) (Confined, error) {
		confined.Add(1)
		// What the sandbox does too: the program becomes another that runs the server.
		env, err := exec.LookPath("env")
		if err != nil {
			return nil, err
		}
		cmd.Args = append([]string{"env", "KEEL_CONFINED=1", cmd.Path}, cmd.Args[1:]...)
		cmd.Path = env
		return fakeConfined{kills: &kills, released: &released}, nil
	}
	m, dir := confining(t, lsptest.ModeMarkers, confine, nil)
	path := filepath.Join(dir, "a.src")
	write(t, path, "fine\n")
	opened(t, m, path)
	m.Before("", path)
	write(t, path, "fine\nBROKEN new\n")
	if rep := m.After(t.Context(), "", path); rep.Note != "" || len(rep.Files) != 1 {
		t.Errorf("the confined server's report = %+v, want the new error", rep)
	}
	if confined.Load() != 1 {
		t.Errorf("Confine called %d times for one server", confined.Load())
	}
	m.Close()
	if released.Load() != 1 {
		t.Errorf("release called %d times after the server exited", released.Load())
	}

	//keel:duration the server hangs: the limit is meant to pass
	hung, dir := confining(t, lsptest.ModeHang, confine, func(c *Config) { c.StartupTimeout = 100 * time.Millisecond })
	path = filepath.Join(dir, "a.src")
	write(t, path, "x\n")
	hung.Before("", path)
	if rep := hung.After(t.Context(), "", path); !strings.Contains(rep.Note, "did not answer initialize") {
		t.Fatalf("the hung server's report = %+v", rep)
	}
	waittest.Until(t, "the hung server killed through its sandbox and released", func() bool {
		return kills.Load() >= 1 && released.Load() == 2
	})
}

// TestUnconfinableServerDoesNotStart: a server the sandbox cannot take does not start — it
// never runs outside instead — and the edit's note says why, once; a server that is not
// installed is still said to be so, the sandbox never asked.
func TestUnconfinableServerDoesNotStart(t *testing.T) {
	var asked atomic.Int32
	refuse := func(*exec.Cmd) (Confined, error) {
		asked.Add(1)
		return nil, errors.New("the sandbox is unavailable: no user namespaces")
	}
	m, dir := confining(t, lsptest.ModeMarkers, refuse, nil)
	path := filepath.Join(dir, "a.src")
	write(t, path, "BROKEN\n")
	m.Before("", path)
	rep := m.After(t.Context(), "", path)
	for _, want := range []string{"cannot start in the sandbox", "sandbox.wrapLspServers is false", "no user namespaces", "it is off for this session"} {
		if !strings.Contains(rep.Note, want) {
			t.Errorf("note = %q, want %q in it", rep.Note, want)
		}
	}
	c := m.clientFor(path)
	c.mu.Lock()
	proc := c.proc
	c.mu.Unlock()
	if proc != nil || len(rep.Files) != 0 {
		t.Errorf("the server ran though it could not be confined: process %v, files %+v", proc, rep.Files)
	}
	if rep := m.After(t.Context(), "", path); rep.Note != "" || asked.Load() != 1 {
		t.Errorf("tried again: note %q, sandbox asked %d times", rep.Note, asked.Load())
	}

	missing, dir := confining(t, lsptest.ModeMarkers, refuse, func(c *Config) { c.Command = "keel-no-such-language-server" })
	path = filepath.Join(dir, "a.src")
	write(t, path, "x\n")
	missing.Before("", path)
	if rep := missing.After(t.Context(), "", path); !strings.Contains(rep.Note, "keel-no-such-language-server is not installed") || asked.Load() != 1 {
		t.Errorf("note = %q (sandbox asked %d times), want the server said not installed", rep.Note, asked.Load())
	}
}

// TestConfinedServerGetsNoProcessID: a confined server is told no client process id, which
// it could not see from its PID namespace (servers on vscode-languageserver exit when it
// cannot be signalled); one outside is told keel's.
func TestConfinedServerGetsNoProcessID(t *testing.T) {
	c := newClient(New(Options{Root: t.TempDir()}), Config{Name: "x"})
	for confined, want := range map[bool]string{true: "null", false: strconv.Itoa(os.Getpid())} {
		data, err := json.Marshal(c.initializeParams(confined))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			ProcessID json.RawMessage `json:"processId"`
		}
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if string(got.ProcessID) != want {
			t.Errorf("confined %v: processId %s, want %s", confined, got.ProcessID, want)
		}
	}
}
