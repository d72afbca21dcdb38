package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// keel doctor prints a line per finding — the kernel's features, bubblewrap, the mode the
// flags choose — and exits 1 exactly when one failed; --json has the same findings.
func TestDoctor(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	code, out := runKeel(t, home, "doctor", "--sandbox", "read-only")
	if code != 0 && code != 1 {
		t.Fatalf("keel doctor exited %d:\n%s", code, out)
	}
	var names []string
	failed := false
	for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		// "STATUS sandbox  NAME DETAIL", the status in 5 columns and the name in 17.
		status, rest, ok := strings.Cut(line, " sandbox  ")
		status = strings.TrimSpace(status)
		if !ok || !contains([]string{"ok", "warn", "fail", "info"}, status) {
			t.Errorf("keel doctor printed %q, not a finding", line)
			continue
		}
		failed = failed || status == "fail"
		names = append(names, strings.TrimSpace(rest[:min(17, len(rest))]))
	}
	for _, want := range []string{"user namespaces", "Landlock", "seccomp", "bubblewrap", "mode"} {
		if !contains(names, want) {
			t.Errorf("keel doctor has no %s finding:\n%s", want, out)
		}
	}
	if failed != (code == 1) {
		t.Errorf("keel doctor exited %d with a failed finding %v:\n%s", code, failed, out)
	}
	if !strings.Contains(out, "mode              read-only") {
		t.Errorf("keel doctor --sandbox read-only does not say the mode is read-only:\n%s", out)
	}

	code, out = runKeel(t, home, "doctor", "--sandbox", "read-only", "--json")
	var findings []struct{ Name, Status, Detail string }
	if code != 0 || json.Unmarshal([]byte(out), &findings) != nil {
		t.Fatalf("keel doctor --json exited %d:\n%s", code, out)
	}
	if len(findings) != len(names) {
		t.Errorf("keel doctor --json has %d findings, the text %d:\n%s", len(findings), len(names), out)
	}
	for i, f := range findings {
		if i < len(names) && f.Name != names[i] {
			t.Errorf("finding %d is %q in JSON, %q in text", i, f.Name, names[i])
		}
	}
}

// keel doctor and keel sandbox refuse a mode that is not one, and keel sandbox refuses to
// run a command with the sandbox off.
func TestDoctorUsage(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	if code, out := runKeel(t, home, "doctor", "--sandbox", "wide-open"); code != 2 || !strings.Contains(out, "is not one of") {
		t.Errorf("keel doctor --sandbox wide-open exited %d:\n%s\nwant a usage error naming the modes", code, out)
	}
	if code, out := runKeel(t, home, "sandbox", "--sandbox", "off", "--", "true"); code != 2 || !strings.Contains(out, "runs nothing in a sandbox") {
		t.Errorf("keel sandbox --sandbox off exited %d:\n%s\nwant a usage error", code, out)
	}
}

// keel sandbox says on standard error what it disarmed as the command ended: a repository the
// command made whose configuration names a program.
func TestSandboxSaysWhatItDisarmed(t *testing.T) {
	ws := t.TempDir()
	t.Chdir(ws)
	code, out := runKeel(t, t.TempDir(), "sandbox", "--", "sh", "-c", "git init -q r && git -C r config core.fsmonitor 'touch x'")
	if code != 0 && strings.Contains(out, "sandbox unavailable") {
		t.Skipf("no sandbox here: %s", out)
	}
	if want := "keel sandbox: the command wrote " + ws + "/r/.git/config, a git configuration that sets core.fsmonitor"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("keel sandbox exited %d:\n%s\nwant it to say %q", code, out, want)
	}
}
