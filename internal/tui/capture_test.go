package tui_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/waittest"
)

// TestCaptureSession records a session's screen as text for the README:
// KEEL_TUI_CAPTURE=docs/tui-session.txt go test ./internal/tui -run CaptureSession
// (the path is relative to this package directory unless absolute).
func TestCaptureSession(t *testing.T) {
	out := os.Getenv("KEEL_TUI_CAPTURE")
	if out == "" {
		t.Skip("set KEEL_TUI_CAPTURE to the file to write the capture to")
	}
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeelOpts(t, srv, dir, 100, 32, termOptions{keep: true})
	tm.waitFor("shift+tab")
	tm.typeText("please say hello")
	tm.keys("Enter")
	tm.waitFor("Hello from the scripted model.")
	tm.typeText("make a file")
	tm.keys("Enter")
	ask := tm.waitFor("Do you want to proceed?")
	tm.keys("Enter")
	tm.waitFor("The file is there now.")
	tm.typeText("/c")
	final := tm.waitFor("/compact")
	tm.keys("C-u")
	tm.typeText("/exit")
	tm.keys("Enter")
	exited := trimLines(tm.waitForAll("[keel exited 0]"))
	resumed := startKeel(t, srv, dir, 100, 32, "--continue")
	again := resumed.waitFor("The file is there now.")
	var b strings.Builder
	b.WriteString("keel in a 100×32 terminal against the scripted model (text of tmux capture-pane).\n\n")
	b.WriteString("A permission prompt:\n\n" + strings.TrimRight(ask, "\n") + "\n\n")
	b.WriteString("After approving, typing /c for command completion:\n\n" + strings.TrimRight(final, "\n") + "\n\n")
	b.WriteString("The terminal after /exit:\n\n" + strings.TrimRight(exited, "\n") + "\n\n")
	b.WriteString("keel --continue, before any prompt:\n\n" + strings.TrimRight(again, "\n") + "\n")
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkE2EFirstFrame measures the real binary's start-up to its first rendered frame in
// tmux (process start, session set-up, first paint), polling the pane every millisecond.
func BenchmarkE2EFirstFrame(b *testing.B) {
	srv := startScripted(b, e2eRules...)
	dir := b.TempDir()
	keelBinary(b)
	for b.Loop() {
		tm := startKeel(b, srv, dir, 80, 24)
		if !waittest.PollEvery(waittest.Context(b), time.Millisecond, func() bool { return strings.Contains(tm.screen(), "shift+tab") }) {
			b.Fatalf("no first frame in %v", waittest.Timeout())
		}
		b.StopTimer()
		tm.tmux("kill-server")
		b.StartTimer()
	}
}

// trimLines drops the spaces tmux keeps at the ends of joined lines.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
