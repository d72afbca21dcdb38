package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/goldentest"
	"github.com/keel-dev/keel/internal/lsp/lsptest"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/waittest"
)

func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args) // the sandbox's helper is this binary, re-executed
	lsptest.RunIfChild()
	os.Exit(m.Run())
}

// clock is a settable time for the restart backoff.
type clock struct {
	// mu guards now.
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fake returns a manager of one lsptest server for .src files in a temp dir.
func fake(t *testing.T, mode string, wait time.Duration, tweak func(*Config)) (*Manager, string, *clock) {
	t.Helper()
	dir := t.TempDir()
	cmd, args, env := lsptest.Command(mode)
	env[lsptest.CrashFileEnv] = filepath.Join(dir, ".crashed")
	cfg := Config{Name: "fake", Command: cmd, Args: args, Env: env, Extensions: map[string]string{".src": "fake"},
		StartupTimeout: waittest.Timeout()}
	if tweak != nil {
		tweak(&cfg)
	}
	clk := &clock{now: time.Unix(1000, 0)}
	m := New(Options{Servers: []Config{cfg}, Root: dir, Environ: os.Environ(), Wait: wait, Now: clk.Now})
	t.Cleanup(m.Close)
	return m, dir, clk
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// opened reads path into its server and waits until the server has published for it, as
// happens when the model Reads a file before editing it.
func opened(t *testing.T, m *Manager, path string) {
	t.Helper()
	m.Touch(path)
	c := m.clientFor(path)
	waittest.Until(t, "diagnostics of the unedited file", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		d := c.docs[path]
		return d != nil && d.published > 0
	})
}

func TestNewDiagnosticsOfAnEdit(t *testing.T) {
	m, dir, _ := fake(t, lsptest.ModeMarkers, waittest.Timeout(), nil)
	path := filepath.Join(dir, "a.src")
	write(t, path, "fine\nWARN old problem\n")
	opened(t, m, path)

	m.Before("", path)
	write(t, path, "fine\nWARN old problem\nBROKEN new\nHINT style\n")
	rep := m.After(t.Context(), "", path)
	want := []FileDiagnostics{{Path: path, Diagnostics: []Diagnostic{
		{Severity: SeverityError, Line: 3, Col: 1, Message: "broken: BROKEN new", Source: "lsptest", Code: "marker"}}}}
	if diff := cmp.Diff(want, rep.Files); diff != "" {
		t.Errorf("new diagnostics mismatch (-want +got):\n%s", diff)
	}
	goldentest.Check(t, "new_diagnostics.txt", []byte(Format(rep.Files, dir)))

	// Fixing the problem reports nothing.
	m.Before("", path)
	write(t, path, "fine\nWARN old problem\n")
	if rep := m.After(t.Context(), "", path); len(rep.Files) != 0 || rep.Note != "" {
		t.Errorf("after the fix: %+v", rep)
	}
	if m.Handles(filepath.Join(dir, "b.txt")) {
		t.Error("a .txt file is handled though no server is configured for it")
	}
}

func TestAtMostTenPerFileErrorsFirst(t *testing.T) {
	m, dir, _ := fake(t, lsptest.ModeMarkers, waittest.Timeout(), nil)
	path := filepath.Join(dir, "many.src")
	write(t, path, "")
	opened(t, m, path)
	m.Before("", path)
	var b strings.Builder
	for i := range 14 {
		if i%3 == 0 {
			fmt.Fprintf(&b, "WARN %d\n", i)
		} else {
			fmt.Fprintf(&b, "BROKEN %d\n", i)
		}
	}
	write(t, path, b.String())
	rep := m.After(t.Context(), "", path)
	if len(rep.Files) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	f := rep.Files[0]
	var sev []int
	for _, d := range f.Diagnostics {
		sev = append(sev, d.Severity)
	}
	if diff := cmp.Diff([]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 2}, sev); diff != "" || f.Omitted != 4 {
		t.Errorf("severities mismatch (-want +got):\n%s\nomitted %d, want 4", diff, f.Omitted)
	}
	goldentest.Check(t, "ten_per_file.txt", []byte(Format(rep.Files, dir)))
}

func TestLateDiagnosticsAtTheNextBoundary(t *testing.T) {
	m, dir, clk := fake(t, lsptest.ModeMarkers, waittest.Timeout(), nil)
	path, release := filepath.Join(dir, "a.src"), filepath.Join(dir, "release.src")
	write(t, path, "start\n")
	write(t, release, "x\n")
	opened(t, m, path)
	m.Before("", path)
	write(t, path, "start\nLATE slow pass\n")
	if rep := m.After(t.Context(), "", path); len(rep.Files) != 0 {
		t.Fatalf("reported before the slow pass: %+v", rep)
	}
	if late := m.Late(""); len(late) != 0 {
		t.Fatalf("late before the slow pass: %+v", late)
	}
	c := m.clientFor(path)
	publishes := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.docs[path].published
	}
	before := publishes()
	m.Touch(release) // the fake server's slow pass for a.src runs now
	waittest.Until(t, "the slow pass", func() bool { return publishes() > before })
	late := m.Late("") // the next request boundary
	if len(late) != 1 || late[0].Path != path || late[0].Diagnostics[0].Message != "found later: LATE slow pass" {
		t.Errorf("late = %+v", late)
	}
	if again := m.Late(""); len(again) != 0 {
		t.Errorf("late diagnostics handed over twice: %+v", again)
	}
	if other := m.Late("agent-1"); len(other) != 0 {
		t.Errorf("another agent got them: %+v", other)
	}
	clk.Add(lateWindow + time.Second)
	m.Late("")
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.watches) != 0 {
		t.Errorf("%d watches are kept past the late window", len(m.watches))
	}
}

func TestBrokenServers(t *testing.T) {
	tests := []struct {
		name, mode string
		tweak      func(*Config)
		note       string
	}{
		{"not installed", lsptest.ModeMarkers, func(c *Config) { c.Command = "keel-no-such-language-server" },
			"diagnostics for .src files are unavailable: keel-no-such-language-server is not installed"},
		{"exits at start", lsptest.ModeExit, nil, "fake exited during start-up (exit status 2): lsptest: cannot find its runtime, giving up; keel restarts it in 1s"},
		//keel:duration the server hangs: the limit is meant to pass, and the message names it
		{"hangs", lsptest.ModeHang, func(c *Config) { c.StartupTimeout = 100 * time.Millisecond },
			"fake did not answer initialize within 100ms; keel restarts it in 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, dir, _ := fake(t, tt.mode, waittest.Timeout(), tt.tweak)
			path := filepath.Join(dir, "a.src")
			write(t, path, "BROKEN\n")
			m.Before("", path)
			rep := m.After(t.Context(), "", path)
			if !strings.Contains(rep.Note, tt.note) || len(rep.Files) != 0 {
				t.Errorf("report = %+v, want a note with %q", rep, tt.note)
			}
			// Said once; later edits go on without waiting for the server.
			if rep := m.After(t.Context(), "", path); rep.Note != "" || len(rep.Files) != 0 {
				t.Errorf("second report = %+v", rep)
			}
		})
	}
}

func TestCrashedServerRestarts(t *testing.T) {
	m, dir, clk := fake(t, lsptest.ModeCrashOnce, 300*time.Millisecond, nil)
	path := filepath.Join(dir, "a.src")
	write(t, path, "ok\n")
	opened(t, m, path)
	c := m.clientFor(path)
	m.Before("", path)
	write(t, path, "ok\nBROKEN\n")
	first := m.After(t.Context(), "", path) // the server dies on this change
	waittest.Until(t, "the crash to be seen", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.state == stopped
	})
	rep := m.After(t.Context(), "", path)
	// The note comes with the first report after the crash was seen: the first edit's own,
	// when the crash broke its sync, else the next one.
	note := first.Note + rep.Note
	if want := "fake exited unexpectedly (exit status 3): lsptest: fake crash; keel restarts it in 1s"; note != "diagnostics for .src files are unavailable: "+want {
		t.Fatalf("notes = %q, want %q once", note, want)
	}
	clk.Add(time.Second) // past the backoff: the next edit restarts it
	m.Before("", path)
	write(t, path, "ok\nBROKEN again\n")
	m.opts.Wait = waittest.Timeout()
	rep = m.After(t.Context(), "", path)
	if len(rep.Files) != 1 || rep.Files[0].Diagnostics[0].Message != "broken: BROKEN again" {
		t.Errorf("after the restart: %+v", rep)
	}
}

func TestDeafServerIsKilled(t *testing.T) {
	// The start-up limit is also how long a write may block before the server is taken for
	// hung: long enough for a start on a loaded machine, short enough for the wait below.
	m, dir, _ := fake(t, lsptest.ModeDeaf, 200*time.Millisecond, func(c *Config) { c.StartupTimeout = waittest.Scale(3 * time.Second) })
	path := filepath.Join(dir, "big.src")
	write(t, path, strings.Repeat("a line that fills the pipe\n", 40000)) // ~1 MB: more than a pipe holds
	m.Before("", path)
	m.After(t.Context(), "", path) // returns after the wait; the write is still stuck
	c := m.clientFor(path)
	waittest.Until(t, "the hung server to be killed", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.state == stopped
	})
	if note := c.takeNote(); !strings.Contains(note, "fake stopped reading its input (hung) and was killed") {
		t.Errorf("note = %q", note)
	}
}

func TestConfiguration(t *testing.T) {
	c := newClient(New(Options{}), Config{Settings: []byte(`{"gopls": {"staticcheck": true}, "python": {"analysis": {"typeCheckingMode": "strict"}}}`)})
	var p configurationParams
	for _, s := range []string{"gopls", "python.analysis", "missing", ""} {
		p.Items = append(p.Items, struct {
			Section string `json:"section"`
		}{s})
	}
	got := c.configuration(p)
	want := []any{map[string]any{"staticcheck": true}, map[string]any{"typeCheckingMode": "strict"}, nil,
		map[string]any{"gopls": map[string]any{"staticcheck": true}, "python": map[string]any{"analysis": map[string]any{"typeCheckingMode": "strict"}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configuration mismatch (-want +got):\n%s", diff)
	}
}

// TestSlowStartDeliversLater: a server still starting when an edit is made misses the wait;
// once it is up the edit is synced, and its diagnostics come at the next boundary.
func TestSlowStartDeliversLater(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Skipf("SKIPPED: no FIFOs here (%v)", err)
	}
	m, dir, _ := fake(t, lsptest.ModeGated, 100*time.Millisecond, func(c *Config) { c.Env[lsptest.GateEnv] = gate })
	path := filepath.Join(dir, "a.src")
	write(t, path, "BROKEN at once\n")
	m.Before("", path)
	if rep := m.After(t.Context(), "", path); len(rep.Files) != 0 || rep.Note != "" {
		t.Fatalf("report during start-up: %+v", rep)
	}
	if rep := m.After(t.Context(), "", path); len(rep.Files) != 0 || rep.Note != "" {
		t.Fatalf("second report during start-up: %+v", rep)
	}
	f, err := os.OpenFile(gate, os.O_WRONLY, 0) // lets the server finish starting
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The file is synced in the background once the server is up; its publish can come before
	// that goroutine has recorded the version, and Late hands it over at the boundary after.
	var late []FileDiagnostics
	waittest.Until(t, "the diagnostics after start-up", func() bool {
		late = append(late, m.Late("")...)
		return len(late) > 0
	})
	if late = append(late, m.Late("")...); len(late) != 1 || late[0].Diagnostics[0].Message != "broken: BROKEN at once" {
		t.Errorf("late = %+v", late)
	}
}
