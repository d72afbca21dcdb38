package tui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// The end-to-end tests run the real keel binary in tmux against the scripted model and read
// the screen with capture-pane.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// keelBinary builds cmd/keel and cmd/keel-tui once per test process.
func keelBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "keel-tui-bin")
		if buildErr != nil {
			return
		}
		// keel hands interactive runs to keel-tui beside it, as installed by go install ./cmd/...
		binPath, buildErr = buildtest.Build(binDir, buildtest.Options{TUI: true})
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// term is one tmux session running keel.
type term struct {
	t      testing.TB
	sock   string
	target string
}

// startKeel runs keel args in a fresh tmux server of the given size, in dir, against srv.
func startKeel(t testing.TB, srv *scripted.Server, dir string, w, h int, args ...string) *term {
	t.Helper()
	return startKeelEnv(t, srv, dir, w, h, nil, args...)
}

// startKeelEnv is startKeel with extra environment variables (KEY=value).
func startKeelEnv(t testing.TB, srv *scripted.Server, dir string, w, h int, extra []string, args ...string) *term {
	t.Helper()
	return startKeelOpts(t, srv, dir, w, h, termOptions{env: extra}, args...)
}

// termOptions are the less common ways to start keel in tmux.
type termOptions struct {
	env []string // extra environment variables (KEY=value)
	// keep leaves the pane open after keel exits, with a line "[keel exited N]", so a test can
	// read what keel left in the terminal.
	keep bool
}

// startKeelOpts is startKeel with options.
func startKeelOpts(t testing.TB, srv *scripted.Server, dir string, w, h int, o termOptions, args ...string) *term {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end terminal test; skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed; scripts/test.sh installs it (apt-get install tmux)")
	}
	bin := keelBinary(t)
	sockDir, err := os.MkdirTemp("", "kt") // short: tmux socket paths are length-limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	tm := &term{t: t, sock: filepath.Join(sockDir, "s"), target: "keel"}
	// One home per working directory, beside it in the test's temporary tree, so a second
	// keel in the same directory finds the first one's sessions.
	home := dir + "-home"
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=test", "ANTHROPIC_MODEL=claude-scripted",
		"KEEL_HOME=" + home, "HOME=" + home, "TERM=xterm-256color",
	}
	env = append(env, o.env...)
	run := "env " + strings.Join(quoteAll(env), " ") + " " + shellQuote(bin)
	for _, a := range args {
		run += " " + shellQuote(a)
	}
	cmdline := "cd " + shellQuote(dir) + " && exec " + run
	if o.keep {
		cmdline = "cd " + shellQuote(dir) + " && " + run + "; printf '[keel exited %d]\\n' $?; exec sleep 100000"
	}
	tm.tmux("new-session", "-d", "-s", tm.target, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), cmdline)
	pane, _ := strconv.Atoi(strings.TrimSpace(tm.tmux("display-message", "-p", "-t", tm.target, "#{pane_pid}")))
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run()
		// keel ends in order on the hang-up (transcript synced, memory written): wait for it,
		// or the temporary directories' removal races its last writes.
		ctx, cancel := context.WithTimeout(context.Background(), waittest.Timeout())
		defer cancel()
		waittest.Poll(ctx, func() bool { return !groupAlive(pane) })
	})
	return tm
}

// groupAlive says whether a process of process group pgid (a tmux pane's) still runs; zombies
// count as gone.
func groupAlive(pgid int) bool {
	if pgid <= 0 {
		return false
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …: comm may hold spaces, so read after its last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (tm *term) screen() string { return tm.tmux("capture-pane", "-p", "-t", tm.target) }

// scrollback is the pane's history and screen, as the user scrolls back through it, with
// wrapped lines joined.
func (tm *term) scrollback() string {
	return tm.tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", tm.target)
}

// waitForAll polls the scrollback until it contains want.
func (tm *term) waitForAll(want string) string {
	tm.t.Helper()
	var s string
	if !waittest.Poll(waittest.Context(tm.t), func() bool { s = tm.scrollback(); return strings.Contains(s, want) }) {
		tm.t.Fatalf("the terminal never showed %q in %v; last scrollback:\n%s", want, waittest.Timeout(), s)
	}
	return s
}

// waitFor polls the screen until it contains want, or fails at waittest's limit.
func (tm *term) waitFor(want string) string {
	tm.t.Helper()
	var s string
	if !waittest.Poll(waittest.Context(tm.t), func() bool { s = tm.screen(); return strings.Contains(s, want) }) {
		tm.t.Fatalf("screen never showed %q in %v; last screen:\n%s", want, waittest.Timeout(), s)
	}
	return s
}

func (tm *term) typeText(s string) { tm.tmux("send-keys", "-t", tm.target, "-l", s) }
func (tm *term) keys(k ...string)  { tm.tmux(append([]string{"send-keys", "-t", tm.target}, k...)...) }

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = shellQuote(s)
	}
	return out
}

func startScripted(t testing.TB, rules ...scripted.Rule) *scripted.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := scripted.Start(ctx, "", &scripted.Scenario{Rules: rules}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

var e2eRules = []scripted.Rule{
	{When: scripted.Match{UserText: "say hello"}, Reply: []scripted.Block{scripted.Text("Hello from the **scripted** model.\n\n```go\nfmt.Println(\"hi\")\n```")}},
	{When: scripted.Match{UserText: "make a file"}, Reply: []scripted.Block{scripted.Text("Creating it."), scripted.ToolUse("Bash", map[string]any{"command": "touch made-by-keel.txt", "description": "Create a file"})}},
	{When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("The file is there now.")}},
	// An answer that takes longer than any wait of a test: only the interrupt ends it.
	{When: scripted.Match{UserText: "go slowly"}, Fault: &scripted.Fault{Delay: waittest.Timeout()},
		Reply: []scripted.Block{scripted.Text("This answer is very slow and will be interrupted long before it ends, one piece at a time, sentence after sentence.")}},
}

func TestE2EPromptAndAnswer(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	tm := startKeel(t, srv, t.TempDir(), 80, 24)
	tm.waitFor("shift+tab")
	tm.typeText("please say hello")
	tm.keys("Enter")
	s := tm.waitFor("Hello from the scripted model.")
	if !strings.Contains(s, `fmt.Println("hi")`) {
		t.Errorf("code block missing from the screen:\n%s", s)
	}
	tm.keys("C-c")
	tm.waitFor("ctrl+c again")
	tm.keys("C-c")
}

func TestE2EPromptArgument(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	tm := startKeel(t, srv, t.TempDir(), 120, 40, "say hello")
	tm.waitFor("Hello from the scripted model.")
}

func TestE2EApprovePermission(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeel(t, srv, dir, 100, 30)
	tm.waitFor("shift+tab")
	tm.typeText("make a file")
	tm.keys("Enter")
	tm.waitFor("Do you want to proceed?")
	tm.keys("Enter") // "1. Yes" is selected
	tm.waitFor("The file is there now.")
	if _, err := os.Stat(filepath.Join(dir, "made-by-keel.txt")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
}

func TestE2EInterruptWithEsc(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	tm := startKeel(t, srv, t.TempDir(), 80, 24)
	tm.waitFor("shift+tab")
	tm.typeText("go slowly")
	tm.keys("Enter")
	tm.waitFor("esc to interrupt)")
	tm.keys("Escape")
	tm.waitFor("interrupted")
	// The history stays valid: the next prompt gets its answer.
	tm.typeText("now say hello")
	tm.keys("Enter")
	tm.waitFor("Hello from the scripted model.")
}

func TestE2EResumeFromPicker(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeel(t, srv, dir, 100, 30)
	tm.waitFor("shift+tab")
	tm.typeText("please say hello")
	tm.keys("Enter")
	tm.waitFor("Hello from the scripted model.")
	tm.typeText("/exit")
	tm.keys("Enter")
	tm2 := startKeel(t, srv, dir, 100, 30)
	tm2.waitFor("shift+tab")
	tm2.typeText("/resume")
	tm2.keys("Enter")
	tm2.waitFor("Resume a session")
	tm2.waitFor("please say hello")
	tm2.keys("Enter")
	tm2.waitFor("※ resumed")
	tm2.waitFor("❯ please say hello") // the conversation it continues
}

// TestE2ETrustPrompt: keel asks before opening a workspace that provides settings, and what
// the workspace provides runs only once the user trusts it; the answer is remembered.
func TestE2ETrustPrompt(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	hook := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch hook-ran"}]}]}}`
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(hook), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startKeel(t, srv, dir, 100, 30)
	tm.waitFor("Do you trust the files in this folder?")
	tm.keys("3")
	tm.waitFor("shift+tab")
	if _, err := os.Stat(filepath.Join(dir, "hook-ran")); err == nil {
		t.Error("the untrusted workspace's hook ran")
	}
	tm.keys("C-c")
	tm.keys("C-c")

	tm = startKeel(t, srv, dir, 100, 30)
	tm.waitFor("Do you trust the files in this folder?")
	tm.keys("1")
	tm.waitFor("shift+tab")
	waittest.Until(t, "the trusted workspace's SessionStart hook", func() bool {
		_, err := os.Stat(filepath.Join(dir, "hook-ran"))
		return err == nil
	})
	tm.keys("C-c")
	tm.keys("C-c")

	tm = startKeel(t, srv, dir, 100, 30)
	if s := tm.waitFor("shift+tab"); strings.Contains(s, "Do you trust") {
		t.Errorf("keel asked again after the trust was recorded:\n%s", s)
	}
}
