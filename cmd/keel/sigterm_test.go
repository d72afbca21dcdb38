package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestSIGTERMExits143: a run stopped by SIGTERM (the Agent SDK aborting a query) exits 143,
// 128 plus the signal, as Claude Code does, not 1.
func TestSIGTERMExits143(t *testing.T) {
	exe := buildtest.Keel(t, buildtest.Options{})
	hold := make(chan struct{})
	defer close(hold)
	sc := &scripted.Scenario{Rules: []scripted.Rule{{Name: "held", Reply: []scripted.Block{scripted.Text("never sent")}, Fault: &scripted.Fault{Hold: hold}}}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), exe, "-p", "wait for the model")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KEEL_HOME="+filepath.Join(dir, ".keel"), "HOME="+dir,
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test", "ANTHROPIC_MODEL=claude-test")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitRequests(waittest.Context(t), 1); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("exit after SIGTERM: %v; want status 143", err)
	}
}
