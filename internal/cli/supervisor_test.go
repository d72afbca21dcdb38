package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/daemon"
)

// keel supervisor status, stop and logs with no supervisor: they say so and start none.
func TestSupervisorNotRunning(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	for _, args := range [][]string{{"supervisor"}, {"supervisor", "status"}} {
		code, out := runKeel(t, home, args...)
		if code != 0 || !strings.Contains(out, "supervisor not running") || !strings.Contains(out, "no background agents") {
			t.Errorf("keel %s exited %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
	code, out := runKeel(t, home, "supervisor", "status", "--json")
	var st struct {
		Running bool
		Log     string
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Running || st.Log != daemon.NewLayout(home).Log {
		t.Errorf("keel supervisor status --json exited %d:\n%s\nwant not running, log at %s", code, out, daemon.NewLayout(home).Log)
	}
	if code, out := runKeel(t, home, "supervisor", "stop"); code != 0 || !strings.Contains(out, "no supervisor is running") {
		t.Errorf("keel supervisor stop exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "supervisor", "logs"); code != 1 || !strings.Contains(out, "the supervisor has not run yet") {
		t.Errorf("keel supervisor logs without a log exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "supervisor", "status"); code != 0 || !strings.Contains(out, "supervisor not running") {
		t.Errorf("the commands started a supervisor:\n%s", out)
	}
}

// keel supervisor logs prints the log's last lines, -n of them, or all with -n 0.
func TestSupervisorLogs(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	log := daemon.NewLayout(home).Log
	if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte("one\ntwo\nthree\nfour\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"supervisor", "logs"}, "one\ntwo\nthree\nfour\n"},
		{[]string{"supervisor", "logs", "-n", "2"}, "three\nfour\n"},
		{[]string{"supervisor", "logs", "--lines", "0"}, "one\ntwo\nthree\nfour\n"},
	} {
		if code, out := runKeel(t, home, c.args...); code != 0 || out != c.want {
			t.Errorf("keel %s exited %d:\n%q\nwant %q", strings.Join(c.args, " "), code, out, c.want)
		}
	}
}
