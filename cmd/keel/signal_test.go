package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// holdCommand starts two processes in the Bash call's process group — one in the
// background, one in the foreground — that would run for ten minutes, each writing its pid
// first, so the test knows what must be gone after keel is signalled.
const holdCommand = `sh -c 'echo $$ > bg.pid; exec sleep 600' & sh -c 'echo $$ > fg.pid; exec sleep 600'`

// TestSignalsEndAHeadlessRunCleanly sends SIGHUP, SIGINT, SIGTERM and SIGQUIT to `keel -p`
// while a Bash call runs: each ends the same way — the call's process group is killed (no
// process of it outlives keel), the transcript holds the call, a result line is written in
// stream-json, and the exit status is 128 + the signal's number.
func TestSignalsEndAHeadlessRunCleanly(t *testing.T) {
	exe := buildtest.Keel(t, buildtest.Options{})
	for _, c := range []struct {
		name, format string
		sig          syscall.Signal
	}{
		{"SIGHUP", "stream-json", syscall.SIGHUP}, {"SIGINT", "stream-json", syscall.SIGINT},
		{"SIGTERM", "stream-json", syscall.SIGTERM}, {"SIGQUIT", "stream-json", syscall.SIGQUIT},
		{"SIGHUP-json", "json", syscall.SIGHUP}, {"SIGTERM-json", "json", syscall.SIGTERM},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			signalRun(t, exe, c.format, c.sig)
		})
	}
}

func signalRun(t *testing.T, exe, format string, sig syscall.Signal) {
	// The model server and keel live as long as the test; each wait has its own time limit (the
	// six runs in parallel take longer than one on a loaded machine).
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "hold on"}, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": holdCommand, "timeout": 600000})}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	dir, home := t.TempDir(), t.TempDir()
	cmd := exec.CommandContext(t.Context(), exe, "-p", "hold on", "--output-format", format, "--verbose", "--allowedTools", "Bash")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KEEL_HOME="+home, "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pids []int
	waittest.Until(t, "both processes of the Bash call to start", func() bool {
		for _, f := range []string{"bg.pid", "fg.pid"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return false
			}
		}
		// The files hold the pids inside the sandbox's PID namespace; these are the ones
		// seen from here.
		pids = commandPIDs(dir, "sleep")
		return len(pids) == 2
	})
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	err = waittest.Recv(t, "keel to end on "+signalName[sig], waited)
	if got, want := cmd.ProcessState.ExitCode(), 128+int(sig); got != want {
		t.Errorf("exit status %d (%v), want %d\nstderr: %s", got, err, want, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Errorf("keel died of %v instead of handling it", ws.Signal())
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d of the Bash call outlived keel", pid)
		}
	}
	var result map[string]any
	for line := range strings.Lines(stdout.String()) {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) == nil && l["type"] == "result" {
			result = l
		}
	}
	if result == nil {
		t.Fatalf("no result line\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	if result["is_error"] != true || !strings.Contains(fmt.Sprint(result["errors"]), "stopped by "+signalName[sig]) {
		t.Errorf("the result of a run stopped by %s: %v", signalName[sig], result)
	}
	matches, _ := filepath.Glob(filepath.Join(home, "projects", "*", "*.jsonl"))
	if len(matches) != 1 {
		t.Fatalf("transcripts %v, want one", matches)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"tool_use_id"`) || !strings.Contains(string(b), "bg.pid") {
		t.Errorf("the transcript lacks the Bash call or its result:\n%s", b)
	}
}

var signalName = map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGQUIT: "SIGQUIT"}

// alive says whether pid is a live process (a zombie waiting for its parent counts as gone).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z'
	}
	return true
}

// commandPIDs are the pids, as this process sees them, of the processes named comm whose
// working directory is dir: a sandboxed command's own $$ is its pid in the sandbox's PID
// namespace, which means nothing out here.
func commandPIDs(dir, comm string) []int {
	want, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		if fi, err := os.Stat(filepath.Join("/proc", e.Name(), "cwd")); err == nil && os.SameFile(fi, want) {
			out = append(out, pid)
		}
	}
	return out
}
